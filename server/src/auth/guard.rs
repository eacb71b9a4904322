//! Request guards: who is calling `/api/*` (admin session, management key,
//! or a key with the `management` scope) and `/v1/*` (a client key with
//! `inference`, or anonymous while no key exists).

use app::types::Scope;
use axum::{
    extract::{Request, State},
    http::{HeaderMap, header},
    middleware::Next,
    response::Response,
};
use std::sync::Arc;

use super::{api_keys::KeyEntry, secret_eq, sessions};
use crate::{
    api::error::ApiError,
    db::now_ms,
    proxy::{errors::ProxyError, route::client_protocol},
    state::AppState,
};

/// The bearer token, `x-api-key` or (Gemini clients) `x-goog-api-key` of
/// a request.
pub fn presented_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .or_else(|| headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim)
}

/// The session token of a request's cookie.
pub fn session_token(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::COOKIE).and_then(|v| v.to_str().ok()).and_then(sessions::token_from_cookie_header)
}

/// Whether the request may use the management API and the dashboard.
pub fn is_admin(state: &AppState, headers: &HeaderMap) -> bool {
    if session_token(headers).is_some_and(|t| state.sessions.is_valid(t, now_ms())) {
        return true;
    }
    let Some(key) = presented_key(headers) else { return false };
    if state.config.management_key.as_deref().is_some_and(|m| secret_eq(m, key)) {
        return true;
    }
    state.keys.lookup(key).is_some_and(|k| k.has(Scope::Management))
}

/// Middleware for `/api/*`: 401 JSON when not an admin, never a redirect.
pub async fn require_admin(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Result<Response, ApiError> {
    if is_admin(&state, req.headers()) { Ok(next.run(req).await) } else { Err(ApiError::Unauthorized) }
}

/// Middleware for `/v1/*`: checks the client key and attaches its
/// [`KeyEntry`] so dispatch can honour `allowedConnections`. Refusals come
/// in the envelope of the endpoint's protocol.
pub async fn require_client_key(State(state): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let refused = |e: ProxyError, req: &Request| e.into_response_as(client_protocol(req.uri().path()).0);
    match presented_key(req.headers()) {
        Some(key) => match state.keys.lookup(key) {
            Some(entry) if entry.has(Scope::Inference) => {
                req.extensions_mut().insert::<Arc<KeyEntry>>(entry);
            }
            Some(_) => return refused(ProxyError::forbidden("this API key lacks the inference scope"), &req),
            None if state.keys.any() => return refused(ProxyError::invalid_key(), &req),
            None => {}
        },
        None if state.keys.any() => return refused(ProxyError::missing_key(), &req),
        None => {}
    }
    next.run(req).await
}
