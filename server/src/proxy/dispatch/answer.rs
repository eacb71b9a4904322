//! The answers an attempt gives the client directly: a served JSON body,
//! or an upstream client error relayed.

use axum::{
    body::Body,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use bytes::Bytes;

use tokio::time::Instant;

use super::{
    attempt::{AttemptGuard, transport_failure},
    call::{Call, Tried},
    limit::Limit,
};
use crate::{
    protocols::{code_assist, responses::codex, translate},
    proxy::{context::SELECTED_CONNECTION, errors::ProxyError, usage},
    routing::registry::LiveConnection,
    state::AppState,
    upstream::{
        catalog::Wire,
        executor::{TransportError, UpstreamResponse},
    },
};

/// A non-stream success: the whole body (within `FETCH_TIMEOUT_MS`, and
/// never `STREAM_IDLE_TIMEOUT_MS` without a byte of it, as for a stream),
/// translated when the client speaks another protocol. A body that is no
/// answer (not JSON, or an error object under a 2xx) fails the attempt.
pub(super) async fn json(state: &AppState, call: &Call<'_>, mut guard: AttemptGuard, resp: UpstreamResponse) -> Tried {
    let upstream = guard.conn.provider.protocol;
    let client = call.caller.client;
    let limit = Limit::of(&guard, &call.caller.deadline, Instant::now(), state.config.fetch_timeout);
    let idle = state.config.stream_idle_timeout;
    let body = match tokio::time::timeout_at(limit.at, resp.bytes_while_arriving(idle)).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => return Tried::Failed(transport_failure(&mut guard, &e, None)),
        Err(_) => return Tried::Failed(limit.expired(&mut guard, None)),
    };
    // A backend that only streams: its events hold the answer; Code
    // Assist's is inside its envelope.
    let unwrapped = match guard.conn.provider.wire {
        Wire::Codex => Some(codex::gather(&body)),
        Wire::CodeAssist => Some(code_assist::unwrap_answer(&body)),
        Wire::Standard | Wire::ClaudeCode => None,
    };
    let body = match unwrapped {
        None => body,
        Some(Ok(answer)) => answer,
        Some(Err(why)) => return Tried::Failed(transport_failure(&mut guard, &TransportError::Network(why), None)),
    };
    let body = if upstream == client {
        match usage::read_answer(upstream, &body) {
            Ok(usage) => guard.count(usage),
            Err(why) => return Tried::Failed(transport_failure(&mut guard, &TransportError::Network(why), None)),
        }
        body
    } else {
        match translate::response(upstream, &body, client, state.clock.now_ms() / 1000) {
            Ok((translated, usage)) => {
                guard.count(Some(usage));
                translated
            }
            Err(e) => {
                let e = TransportError::Network(format!("the upstream answer could not be read: {e}"));
                return Tried::Failed(transport_failure(&mut guard, &e, None));
            }
        }
    };
    guard.served(200);
    Tried::Answer(json_response(StatusCode::OK, body, &guard.conn.id))
}

/// The request itself is at fault (the verdict says no other connection
/// would do better): the upstream's answer — as is when both sides speak
/// one protocol, else its message in the client's envelope — credential
/// redacted, with `Retry-After` when its status is retryable.
pub(super) fn client_error(
    call: &Call<'_>,
    conn: &LiveConnection,
    status: u16,
    headers: &HeaderMap,
    text: String,
    retry_after: Option<u64>,
) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    if conn.provider.protocol == call.caller.client {
        let mut resp = json_response(code, Bytes::from(text), &conn.id);
        if ProxyError::is_retryable(code) {
            let upstream = headers.get(header::RETRY_AFTER).cloned();
            let ours = HeaderValue::from(retry_after.unwrap_or(1).max(1));
            resp.headers_mut().insert(header::RETRY_AFTER, upstream.unwrap_or(ours));
        }
        return resp;
    }
    let message = translate::error_message(&text).unwrap_or(text);
    let mut e = ProxyError::new(code, "invalid_request_error", "upstream_error", message);
    e.retry_after = retry_after;
    e.connection_id = Some(conn.id.clone().into());
    e.into_response_as(call.caller.client)
}

pub(super) fn json_response(status: StatusCode, body: Bytes, connection_id: &str) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    insert_connection(response.headers_mut(), connection_id);
    response
}

pub(super) fn insert_connection(h: &mut HeaderMap, connection_id: &str) {
    if let Ok(v) = HeaderValue::from_str(connection_id) {
        h.insert(SELECTED_CONNECTION, v);
    }
}

/// The human message of an upstream error body (`error.message` when it
/// is JSON, else the text).
pub(super) fn error_message(status: u16, body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = json
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message").or_else(|| v.get("message")).and_then(|m| m.as_str()).map(str::to_owned)
        })
        .unwrap_or_else(|| body.trim().to_owned());
    if message.is_empty() {
        format!("upstream returned {status}")
    } else {
        format!("upstream returned {status}: {message}")
    }
}
