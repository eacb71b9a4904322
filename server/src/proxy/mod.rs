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
pub mod gate;
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
    middleware::from_fn_with_state,
    routing::{MethodRouter, get, post},
};
use std::sync::Arc;
use tower::Layer;

use crate::state::AppState;

const CHAT: &str = "/v1/chat/completions";
const MESSAGES: &str = "/v1/messages";
const RESPONSES: &str = "/v1/responses";
const GEMINI: &str = "/v1beta/models/{*target}";
const COUNT_TOKENS: &str = "/v1/messages/count_tokens";
const MODELS: &str = "/v1/models";

/// The endpoints behind one gate ([`gate::gate`]) and one body limit.
/// Each path is routed once, to its handler's method router with the
/// layers around it: layered per route (axum's `Router::layer`), each
/// request cloned the whole boxed chain of every layer, a dozen
/// allocations before the handler ran; layered around an inner router,
/// each request was routed twice and its matched path written twice.
pub fn router(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    let gated = |endpoint: MethodRouter| {
        from_fn_with_state(state.clone(), gate::gate)
            .layer(DefaultBodyLimit::max(state.config.max_body_bytes).layer(endpoint))
    };
    let chat = gated(post(route::handle).with_state(state.clone()));
    Router::new()
        .route_service(CHAT, chat.clone())
        .route_service(MESSAGES, chat.clone())
        .route_service(RESPONSES, chat.clone())
        .route_service(GEMINI, chat)
        .route_service(COUNT_TOKENS, gated(post(messages::count_tokens).with_state(state.clone())))
        .route_service(MODELS, gated(get(models::list).with_state(state.clone())))
}
