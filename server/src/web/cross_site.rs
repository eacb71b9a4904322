//! The middleware in front of `/api/*`, `/sfn/*` and the pages: it
//! applies the cross-site verdict of [`crate::auth::cross_site`] and marks
//! the session cookie `Secure` when the client is on https.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use std::sync::Arc;

use crate::{
    api::error::ApiError,
    auth::{
        cross_site::{Facts, Refusal, check, is_https},
        sessions,
    },
    config::SecureCookie,
    state::AppState,
};

/// Middleware for `/api/*`, `/sfn/*` and the pages: refuses cross-site
/// changes, and marks the session cookie `Secure` when the client is on
/// https (or `OMNIROUTE_SECURE_COOKIE=true`).
pub async fn guard(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let trust_proxy = state.config.trust_proxy;
    let is_api = req.uri().path().starts_with("/api/");
    let facts = Facts { method: req.method(), headers: req.headers(), is_api, trust_proxy };
    match check(&facts) {
        Ok(()) => {}
        Err(refusal) => {
            tracing::warn!(path = req.uri().path(), ?refusal, "cross-site request refused");
            return refusal_response(refusal, is_api);
        }
    }
    let secure = match state.config.secure_cookie {
        SecureCookie::Always => true,
        SecureCookie::Never => false,
        SecureCookie::Auto => is_https(req.headers(), trust_proxy),
    };
    let mut resp = next.run(req).await;
    if secure {
        mark_session_cookie_secure(resp.headers_mut());
    }
    resp
}

fn refusal_response(refusal: Refusal, is_api: bool) -> Response {
    let (status, message) = match refusal {
        Refusal::CrossSite => (StatusCode::FORBIDDEN, "Cross-site request refused: send it from the dashboard itself"),
        Refusal::NotJson => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json for a request signed in with the dashboard session",
        ),
    };
    if is_api { ApiError::Body(status, message.into()).into_response() } else { (status, message).into_response() }
}

fn mark_session_cookie_secure(headers: &mut HeaderMap) {
    let prefix = format!("{}=", sessions::COOKIE);
    let header::Entry::Occupied(mut cookies) = headers.entry(header::SET_COOKIE) else { return };
    for value in cookies.iter_mut() {
        let Ok(text) = value.to_str() else { continue };
        if text.starts_with(&prefix)
            && !text.contains("; Secure")
            && let Ok(secure) = HeaderValue::from_str(&format!("{text}; Secure"))
        {
            *value = secure;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_session_cookie_is_marked_secure() {
        let mut h = HeaderMap::new();
        h.append(header::SET_COOKIE, sessions::set_cookie("tok").parse().unwrap());
        h.append(header::SET_COOKIE, "other=1; Path=/".parse().unwrap());
        mark_session_cookie_secure(&mut h);
        let all: Vec<_> = h.get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_owned()).collect();
        assert!(all[0].ends_with("; Secure"), "{all:?}");
        assert_eq!(all[1], "other=1; Path=/");
    }
}
