//! The `/v1/*` surface coding agents call. Handlers name their protocol;
//! `request` validates, `route` resolves the model, `dispatch` runs the
//! attempt loop; `stream` relays SSE unbuffered (translated when the
//! upstream speaks another protocol).

pub mod anonymous;
pub mod client_key;
pub mod context;
pub mod cooldown_wait;
pub mod dispatch;
pub mod errors;
pub mod handoff;
pub mod leases;
pub mod messages;
pub mod models;
pub mod multi;
pub mod refusals;
pub mod request;
pub mod resume;
pub mod route;
pub mod session;
pub mod stream;
pub mod usage;

use axum::{
    Router,
    extract::DefaultBodyLimit,
    middleware::{from_fn, from_fn_with_state},
    routing::{get, post},
};
use std::sync::Arc;

use crate::state::AppState;

pub fn router(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/chat/completions", post(route::handle))
        .route("/v1/messages", post(route::handle))
        .route("/v1/responses", post(route::handle))
        .route("/v1beta/models/{*target}", post(route::handle))
        .route("/v1/messages/count_tokens", post(messages::count_tokens))
        .route("/v1/models", get(models::list))
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(from_fn_with_state(state.clone(), client_key::require_client_key))
        .layer(from_fn(context::request_context))
}
