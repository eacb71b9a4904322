//! `POST /v1/messages/count_tokens` (Anthropic), answered locally with an
//! estimate so that Claude Code's frequent `/context` checks never reach an
//! upstream. (`/v1/messages` itself is served by [`super::route::handle`].)

use app::types::Protocol;
use axum::{
    Json,
    body::Bytes,
    extract::rejection::BytesRejection,
    response::{IntoResponse, Response},
};
use serde_json::json;

use super::refusals::Refused;
use crate::protocols::anthropic;

pub async fn count_tokens(body: Result<Bytes, BytesRejection>) -> Response {
    let counted = body.map_err(|e| Refused::BodyUnreadable(e.status()).because(e.body_text())).and_then(|b| {
        let v = serde_json::from_slice(&b).map_err(|e| Refused::InvalidJson.because(e.to_string()))?;
        anthropic::read_request(&v).map_err(|e| Refused::InvalidField.of_field(e.field.clone(), e.to_string()))
    });
    match counted {
        Ok(req) => Json(json!({"input_tokens": req.estimated_input_tokens()})).into_response(),
        Err(e) => e.into_response_as(Protocol::Anthropic),
    }
}
