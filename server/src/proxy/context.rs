//! Per-request identity: every `/v1` response carries `X-Request-Id` and
//! `X-OmniRoute-Selected-Connection-Id` (`none` when no connection served).

use axum::{extract::Request, http::HeaderValue, middleware::Next, response::Response};

pub const REQUEST_ID: &str = "x-request-id";
pub const SELECTED_CONNECTION: &str = "x-omniroute-selected-connection-id";

/// The gateway's id for one client request.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

pub async fn request_context(mut req: Request, next: Next) -> Response {
    let id = uuid::Uuid::new_v4().simple().to_string();
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(REQUEST_ID, v);
    }
    headers.entry(SELECTED_CONNECTION).or_insert(HeaderValue::from_static("none"));
    resp
}
