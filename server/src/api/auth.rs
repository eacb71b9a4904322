//! `POST /api/auth/login` `{password}` → session cookie; `POST /api/auth/logout`.

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode, header::SET_COOKIE},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{
    auth::{
        identity::{PeerIp, client_of, session_token},
        sessions,
    },
    services::sign_in::{SignInError, sign_in},
    state::AppState,
};

/// The largest sign-in body read: a password in JSON, with room to spare.
pub const MAX_LOGIN_BODY_BYTES: usize = 4 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    password: String,
}

pub async fn login(
    State(state): State<Arc<AppState>>,
    PeerIp(peer): PeerIp,
    headers: HeaderMap,
    StrictJson(body): StrictJson<Login>,
) -> Result<Response, ApiError> {
    let client = client_of(peer, &headers, state.config.trust_proxy);
    let token = sign_in(&state, client, &body.password).await.map_err(|e| match e {
        SignInError::WrongPassword => ApiError::Body(StatusCode::UNAUTHORIZED, "Wrong password".into()),
        SignInError::Throttled(secs) => ApiError::Throttled(secs),
        SignInError::Db(e) => ApiError::from(crate::services::ServiceError::Db(e)),
    })?;
    Ok(([(SET_COOKIE, sessions::set_cookie(&token))], Json(serde_json::json!({"ok": true}))).into_response())
}

pub async fn logout(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Some(t) = session_token(&headers)
        && let Err(e) = sessions::revoke(&state.db, t).await
    {
        return ApiError::from(crate::services::ServiceError::Db(e)).into_response();
    }
    (StatusCode::OK, [(SET_COOKIE, sessions::clear_cookie())], Json(serde_json::json!({"ok": true}))).into_response()
}
