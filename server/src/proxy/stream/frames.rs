//! The frames the gateway itself writes into a client's stream, in the
//! client's protocol: the keepalive while it waits, and the error event
//! that ends a stream whose status can no longer change.

use app::types::Protocol;
use bytes::Bytes;

use crate::protocols::{anthropic, gemini_inbound, sse, translate};

/// Why a stream ends when the shutdown grace is over.
pub const SHUTDOWN_MESSAGE: &str = "the gateway is shutting down; retry the request";

/// The keepalive frame of a client protocol.
pub fn keepalive(client: Protocol) -> Bytes {
    match client {
        Protocol::Anthropic => Bytes::from_static(b"event: ping\ndata: {\"type\": \"ping\"}\n\n"),
        _ => Bytes::from_static(b": keepalive\n\n"),
    }
}

/// The error event that ends a stream of `client`'s protocol with
/// `message` (a stream already committed can no longer change its status).
pub fn error_event(client: Protocol, message: &str) -> Bytes {
    match client {
        Protocol::Anthropic => sse::frame(Some("error"), &anthropic::error_body("api_error", message).to_string()),
        Protocol::Responses => translate::responses_error_frame(message),
        Protocol::Gemini => sse::frame(None, &gemini_inbound::error_body(500, message).to_string()),
        Protocol::OpenaiChat => translate::openai_error_frame(message),
    }
}
