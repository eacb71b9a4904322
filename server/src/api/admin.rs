//! Whether a request may use the management API and the dashboard: a
//! session, the management key, or a key with the `management` scope.

use app::types::Scope;
use axum::http::HeaderMap;

use crate::{
    auth::{
        identity::{presented_key, session_token},
        secret_eq, sessions,
    },
    state::AppState,
};

/// Whether the request may use the management API and the dashboard: a
/// management key (checked in memory) or a live dashboard session (one
/// database lookup; the proxy path never asks).
pub async fn is_admin(state: &AppState, headers: &HeaderMap) -> bool {
    let by_key = presented_key(headers).is_some_and(|key| {
        state.config.management_key.as_deref().is_some_and(|m| secret_eq(m, key))
            || state.auth.keys.lookup(key).is_some_and(|k| k.has(Scope::Management))
    });
    match session_token(headers) {
        _ if by_key => true,
        Some(token) => sessions::is_valid(&state.db, token, state.clock.now_ms()).await,
        None => false,
    }
}
