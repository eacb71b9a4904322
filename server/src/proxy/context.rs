//! Per-request identity: every `/v1` response carries `X-Request-Id` and
//! `X-OmniRoute-Selected-Connection-Id` (`none` when no connection served).

use axum::{extract::Request, http::HeaderValue, middleware::Next, response::Response};
use std::sync::{
    OnceLock,
    atomic::{AtomicU64, Ordering},
};

pub const REQUEST_ID: &str = "x-request-id";
pub const SELECTED_CONNECTION: &str = "x-omniroute-selected-connection-id";

/// The gateway's id for one client request.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// A new request id: 32 hex chars, a random per-process prefix and a
/// counter — unique without a random-number syscall per request.
fn next_request_id() -> String {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(rand::random::<u64>);
    format!("{prefix:016x}{:016x}", SEQ.fetch_add(1, Ordering::Relaxed))
}

pub async fn request_context(mut req: Request, next: Next) -> Response {
    let id = next_request_id();
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(REQUEST_ID, v);
    }
    headers.entry(SELECTED_CONNECTION).or_insert(HeaderValue::from_static("none"));
    resp
}
