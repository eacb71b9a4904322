//! Errors to `/v1` clients in their protocol's envelope (OpenAI
//! `{"error":{"message","type","code","param"}}`, Anthropic
//! `{"type":"error","error":{"type","message"}}`). Every retryable status
//! (429, 502, 503, 504, 529) carries `Retry-After` (seconds, at least 1): a
//! 429 without it is fatal to Codex.

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header::RETRY_AFTER},
    response::{IntoResponse, Response},
};
use serde_json::json;

use app::types::Protocol;

use super::context::SELECTED_CONNECTION;
use crate::{protocols::gemini_inbound, state::AppState, store::AttemptRecord};

#[derive(Debug, Clone)]
pub struct ProxyError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI error `type`.
    pub kind: &'static str,
    pub code: &'static str,
    pub param: Option<Box<str>>,
    /// Seconds; `None` on a retryable status still sends `Retry-After: 1`.
    pub retry_after: Option<u64>,
    /// The last connection tried, for `X-OmniRoute-Selected-Connection-Id`.
    pub connection_id: Option<Box<str>>,
    /// Rarely used additions, boxed to keep the error small.
    pub extra: Option<Box<Extra>>,
}

/// More fields of the error object and more response headers.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    pub fields: serde_json::Map<String, serde_json::Value>,
    pub headers: Vec<(&'static str, String)>,
}

impl ProxyError {
    pub fn new(status: StatusCode, kind: &'static str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind,
            code,
            param: None,
            retry_after: None,
            connection_id: None,
            extra: None,
        }
    }

    /// Adds a field to the error object.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.extra.get_or_insert_default().fields.insert(key.to_owned(), value.into());
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &'static str, value: impl ToString) -> Self {
        self.extra.get_or_insert_default().headers.push((name, value.to_string()));
        self
    }

    /// A direct request to a provider whose breaker is open (SPEC §R1).
    pub fn circuit_open(provider: &str, retry_after_ms: u64) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "provider_circuit_open",
            format!("Provider {provider} circuit breaker is open"),
        )
        .with("provider", provider);
        e.retry_after = Some(retry_after_ms.div_ceil(1000));
        e.extra.get_or_insert_default().headers.push(("x-omniroute-provider-breaker", "open".to_owned()));
        e
    }

    /// Whether a client should retry this status later (and so gets
    /// `Retry-After`).
    pub fn is_retryable(status: StatusCode) -> bool {
        matches!(status.as_u16(), 429 | 502 | 503 | 504 | 529)
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        self.into_response_as(Protocol::OpenaiChat)
    }
}

impl ProxyError {
    /// The error in the envelope of the client's protocol: OpenAI
    /// `{"error":{…}}` (also for Responses clients) or Anthropic
    /// `{"type":"error","error":{"type","message",…}}`.
    pub fn into_response_as(self, client: Protocol) -> Response {
        let mut error = json!({"message": self.message, "code": self.code});
        error["type"] = json!(match client {
            Protocol::Anthropic => anthropic_type(self.status),
            _ => self.kind,
        });
        let extra = self.extra.map(|e| *e).unwrap_or_default();
        for (k, v) in extra.fields {
            error[k] = v;
        }
        if let Some(p) = self.param {
            error["param"] = json!(p);
        }
        let retry_after = Self::is_retryable(self.status).then(|| self.retry_after.unwrap_or(1).max(1));
        if let Some(s) = retry_after {
            error["retry_after"] = json!(s);
        }
        let body = match client {
            Protocol::Anthropic => json!({"type": "error", "error": error}),
            Protocol::Gemini => {
                let mut g = gemini_inbound::error_body(self.status.as_u16(), &self.message);
                // Gemini's `code` is the HTTP status; ours goes in `reason`.
                for (k, v) in error.as_object().into_iter().flatten() {
                    let key = if k == "code" { "reason" } else { k.as_str() };
                    if !matches!(key, "message" | "type") {
                        g["error"][key] = v.clone();
                    }
                }
                g
            }
            _ => json!({"error": error}),
        };
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(s) = retry_after {
            resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
        }
        if let Some(v) = self.connection_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
            resp.headers_mut().insert(SELECTED_CONNECTION, v);
        }
        for (name, value) in extra.headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().insert(name, v);
            }
        }
        resp
    }
}

/// Anthropic's error `type` for a status.
fn anthropic_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        504 => "timeout_error",
        _ => "api_error",
    }
}

/// Writes the log row of a request the gateway refused itself, without
/// calling any upstream: `row` (who asked, for what) with the status and
/// code the client gets.
pub fn log_refused(state: &AppState, row: AttemptRecord, e: &ProxyError) {
    state.store.logs.record(AttemptRecord {
        status: i32::from(e.status.as_u16()),
        error_kind: Some(e.code.to_owned()),
        error_message: Some(e.message.clone()),
        refused: true,
        ..row
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_retryable_status_carries_retry_after() {
        let overloaded = StatusCode::from_u16(529).unwrap();
        for status in [429, 502, 503, 504].map(|s| StatusCode::from_u16(s).unwrap()).into_iter().chain([overloaded]) {
            let resp = ProxyError::new(status, "server_error", "x", "m").into_response();
            assert_eq!(resp.headers()[RETRY_AFTER], "1");
        }
        let resp = ProxyError {
            retry_after: Some(30),
            ..ProxyError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "x", "m")
        }
        .into_response();
        assert_eq!(resp.headers()[RETRY_AFTER], "30");
        for status in [StatusCode::BAD_REQUEST, StatusCode::UNAUTHORIZED, StatusCode::INTERNAL_SERVER_ERROR] {
            let resp = ProxyError::new(status, "x", "x", "m").into_response();
            assert!(resp.headers().get(RETRY_AFTER).is_none(), "{status}");
        }
    }

    #[test]
    fn anthropic_clients_get_their_envelope_and_error_types() {
        let resp = ProxyError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "model_cooldown", "wait")
            .into_response_as(Protocol::Anthropic);
        assert_eq!(resp.headers()[RETRY_AFTER], "1");
        let e = ProxyError::circuit_open("glm", 5_000);
        assert_eq!(anthropic_type(e.status), "overloaded_error");
        assert_eq!(anthropic_type(StatusCode::NOT_FOUND), "not_found_error");
    }

    #[test]
    fn an_open_breaker_answers_503_with_its_header_and_fields() {
        let resp = ProxyError::circuit_open("glm", 29_001).into_response();
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.headers()[RETRY_AFTER], "30");
        assert_eq!(resp.headers()["x-omniroute-provider-breaker"], "open");
    }
}
