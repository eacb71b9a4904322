//! The guard of `/v1/*`: a client key with the `inference` scope, or
//! anonymous while no key exists. Refusals come in the envelope of the
//! endpoint's protocol.

use app::types::Scope;
use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use std::sync::Arc;

use super::{errors::ProxyError, route::client_protocol};
use crate::{
    auth::{api_keys::KeyEntry, identity::presented_key},
    state::AppState,
};

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
