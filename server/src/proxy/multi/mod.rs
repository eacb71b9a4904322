//! Combos whose strategy is not an order but a plan of several calls
//! (SPEC §R8; reference strategies §2.19–2.20): `fusion` asks every target
//! in parallel and has a judge write one answer from theirs; `pipeline`
//! chains the targets, each answering the previous one's text. Every call
//! is a whole request of its own through the dispatch loop — its target's
//! connections, gates, failover, cooldowns and log rows — under the
//! client's request id, so the logs show each call; a member that names a
//! combo runs that combo in full. The intermediate calls are not streamed
//! and carry no tools; the last call (the judge's, the last step's) keeps
//! the client's `stream` and tools and its answer goes to the client as
//! it is.

mod fusion;
mod pipeline;

use app::types::combo::{Combo, ComboTarget, Strategy};
use axum::{http::StatusCode, response::Response};
use futures_util::future::BoxFuture;
use http_body_util::BodyExt;
use std::sync::Arc;

use super::{
    errors::ProxyError,
    request::ClientRequest,
    route::{self, Inbound},
};
use crate::{protocols::translate, state::AppState};

/// Largest intermediate answer read (a panel member's, a step's).
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// Serves `req` by `combo`'s plan of calls. Boxed: a member may name a
/// combo, whose request comes back through `route::serve`.
pub fn serve<'a>(
    state: &'a Arc<AppState>,
    req: &'a ClientRequest,
    inbound: &'a Inbound<'a>,
    combo: Arc<Combo>,
) -> BoxFuture<'a, Result<Response, ProxyError>> {
    Box::pin(async move {
        if inbound.lease.is_some() {
            return Err(ProxyError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "LEASE_CONTEXT_INVALID",
                format!(
                    "combo {} calls several targets ({}); an exclusive session lease binds one connection",
                    combo.name,
                    combo.strategy.as_str()
                ),
            ));
        }
        let inbound = Inbound {
            protocol: inbound.protocol,
            endpoint: inbound.endpoint,
            request_id: inbound.request_id,
            key: inbound.key,
            lease: None,
            // A continuation would run the whole plan again.
            resume: None,
            continuing: None,
        };
        match combo.strategy {
            Strategy::Fusion => fusion::serve(state, req, &inbound, &combo).await,
            _ => pipeline::serve(state, req, &inbound, &combo).await,
        }
    })
}

/// Why a member gave no usable text.
#[derive(Debug)]
pub struct Unheard {
    /// The status its answer had (502 for an unreadable or empty one).
    pub status: StatusCode,
    /// `status_<code>`, `empty_content`, `unparseable`, …
    pub reason: String,
    /// Its error's message, when it had one.
    pub message: String,
}

impl Unheard {
    /// The member answered `status`.
    fn answered(status: StatusCode, message: String) -> Self {
        Self { status, reason: format!("status_{}", status.as_u16()), message }
    }
}

impl From<ProxyError> for Unheard {
    fn from(e: ProxyError) -> Self {
        Self::answered(e.status, e.message)
    }
}

/// Asks `member` and reads the text of its (non-streamed) answer.
pub async fn ask_text(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    member: &ComboTarget,
) -> Result<String, Unheard> {
    let response = route::serve_member(state, req, inbound, member).await?;
    let (head, body) = response.into_parts();
    let bytes = http_body_util::Limited::new(body, MAX_ANSWER_BYTES).collect().await.map(|b| b.to_bytes());
    let unreadable =
        |reason: &str, message: String| Unheard { status: StatusCode::BAD_GATEWAY, reason: reason.into(), message };
    let bytes = bytes.map_err(|e| unreadable("unparseable", e.to_string()))?;
    if head.status != StatusCode::OK {
        let text = String::from_utf8_lossy(&bytes);
        let message = translate::error_message(&text).unwrap_or_else(|| format!("answered {}", head.status));
        return Err(Unheard::answered(head.status, message));
    }
    match translate::response_text(req.protocol, &bytes) {
        Err(e) => Err(unreadable("unparseable", e.to_string())),
        Ok(text) if text.trim().is_empty() => Err(unreadable("empty_content", "the answer had no text".into())),
        Ok(text) => Ok(text),
    }
}

/// The client's error for a failed plan: `status` with its usual type.
fn plan_error(status: StatusCode, code: &'static str, message: String) -> ProxyError {
    let kind = match status.as_u16() {
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    };
    ProxyError::new(status, kind, code, message)
}
