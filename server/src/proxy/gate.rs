//! The one middleware of `/v1/*`: a request id ([`context`]), then the
//! client key check ([`client_key`]), then the endpoint.

use axum::{
    extract::{Request, State},
    http::HeaderValue,
    middleware::Next,
    response::Response,
};
use std::sync::Arc;

use super::{
    client_key,
    context::{REQUEST_ID, RequestId, SELECTED_CONNECTION, next_request_id},
};
use crate::state::AppState;

/// Every response, a refusal too, carries the request id and the
/// selected connection (`none` when no connection served).
pub async fn gate(State(state): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let id = next_request_id();
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut resp = match client_key::refusal(&state, &mut req) {
        None => next.run(req).await,
        Some(refusal) => refusal,
    };
    let headers = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(REQUEST_ID, v);
    }
    headers.entry(SELECTED_CONNECTION).or_insert(HeaderValue::from_static("none"));
    resp
}
