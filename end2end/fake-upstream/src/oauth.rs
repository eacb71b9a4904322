//! The subscription side of the fake: an OAuth issuer whose refresh
//! tokens are single-use (`POST …/oauth/token`), and the checks a
//! subscription backend makes of a bearer token on Anthropic Messages.
//!
//! * A refresh token is good once: its answer carries the next access and
//!   refresh tokens (`sk-ant-oat01-fake-N`, `sk-ant-ort01-fake-N`, valid
//!   8 hours); a spent one, or one starting with `revoked`, gets `400
//!   {"error":"invalid_grant"}`.
//! * A bearer token on `/v1/messages` needs the `oauth-2025-04-20` beta
//!   and must come without `x-api-key`; one starting with `expired` is
//!   refused with `401` as an expired token.

use axum::{
    Json,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashSet;

/// The beta flag an OAuth token needs on Anthropic Messages.
pub const OAUTH_BETA: &str = "oauth-2025-04-20";

#[derive(Default)]
pub struct Issuer {
    spent: Mutex<HashSet<String>>,
    issued: Mutex<u32>,
}

impl Issuer {
    /// Tokens issued so far.
    pub fn issued(&self) -> u32 {
        *self.issued.lock()
    }

    /// The token endpoint's answer to `body`.
    pub fn token(&self, body: &Value) -> Response {
        let refresh_token = body["refresh_token"].as_str().unwrap_or_default();
        if body["grant_type"] != "refresh_token" || body["client_id"].as_str().is_none_or(str::is_empty) {
            return refused(StatusCode::BAD_REQUEST, "invalid_request");
        }
        if refresh_token.starts_with("revoked") || !self.spent.lock().insert(refresh_token.to_owned()) {
            return refused(StatusCode::BAD_REQUEST, "invalid_grant");
        }
        let n = {
            let mut issued = self.issued.lock();
            *issued += 1;
            *issued
        };
        Json(json!({
            "access_token": format!("sk-ant-oat01-fake-{n}"),
            "refresh_token": format!("sk-ant-ort01-fake-{n}"),
            "expires_in": 28_800,
            "token_type": "Bearer",
        }))
        .into_response()
    }
}

fn refused(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({"error": error, "error_description": "the fake issuer refused the request"}))).into_response()
}

/// Why a subscription backend refuses a bearer token on Anthropic
/// Messages, if it does.
pub fn refusal(headers: &HeaderMap) -> Option<Response> {
    let token = headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ")?;
    let betas = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let why = if headers.contains_key("x-api-key") {
        "send the OAuth token or an API key, not both"
    } else if !betas.split(',').any(|b| b.trim() == OAUTH_BETA) {
        "OAuth authentication is currently not supported."
    } else if token.starts_with("expired") {
        "OAuth token has expired. Please obtain a new token or refresh your existing token."
    } else {
        return None;
    };
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": why}});
    Some((StatusCode::UNAUTHORIZED, Json(body)).into_response())
}
