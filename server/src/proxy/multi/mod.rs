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

use app::types::{
    combo::{Combo, ComboTarget, Strategy},
    settings::ErrorReason,
};
use axum::{http::StatusCode, response::Response};
use futures_util::future::BoxFuture;
use http_body_util::BodyExt;
use std::sync::Arc;

use super::{
    errors::ProxyError,
    refusals::Refused,
    request::ClientRequest,
    route::{self, Inbound},
};
use crate::{protocols::translate, resilience::classify, state::AppState};

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
            return Err(Refused::LeaseContextInvalid.because(format!(
                "combo {} calls several targets ({}); an exclusive session lease binds one connection",
                combo.name,
                combo.strategy.as_str()
            )));
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
pub enum Unheard {
    /// It answered with an error: its status, what the classifier makes
    /// of that answer, and the error's message.
    Answered { status: StatusCode, reason: ErrorReason, message: String },
    /// Its answer could not be read, or had no text (`what` says which).
    Unreadable { what: &'static str, message: String },
    /// It had not answered when the panel stopped waiting (`timeout`,
    /// `straggler_dropped`).
    Late(&'static str),
}

impl Unheard {
    /// The member answered `status` with `message`.
    fn answered(status: StatusCode, message: String) -> Self {
        let reason = classify::reason_of(Some(status.as_u16()), &message);
        Self::Answered { status, reason, message }
    }

    /// The status that stands for it: its answer's error status, 502 for
    /// an unreadable one (or an answer that was no error), 504 for none in
    /// time.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Answered { status, .. } if status.is_client_error() || status.is_server_error() => *status,
            Self::Answered { .. } => StatusCode::BAD_GATEWAY,
            Self::Unreadable { .. } => StatusCode::BAD_GATEWAY,
            Self::Late(_) => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// A short name for it: `status_<code>`, `unparseable`, `empty_content`, `timeout`, …
    pub fn name(&self) -> String {
        match self {
            Self::Answered { status, .. } => format!("status_{}", status.as_u16()),
            Self::Unreadable { what, .. } => (*what).to_owned(),
            Self::Late(why) => (*why).to_owned(),
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Self::Answered { message, .. } | Self::Unreadable { message, .. } => message,
            Self::Late(why) => why,
        }
    }

    /// Whether asking again shortly may help: only when the member's
    /// answer was an error the classifier calls transient.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Answered { reason, .. } if classify::is_transient(*reason))
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
    let unreadable = |what: &'static str, message: String| Unheard::Unreadable { what, message };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(status: u16, message: &str) -> Unheard {
        Unheard::answered(StatusCode::from_u16(status).unwrap(), message.into())
    }

    #[test]
    fn a_member_is_asked_again_only_when_the_classifier_calls_its_error_transient() {
        assert!(answered(429, "Rate limit reached").is_transient());
        assert!(answered(503, "All 2 target(s) of combo c are cooling down").is_transient());
        assert!(answered(500, "internal error").is_transient());
        assert!(!answered(429, "You exceeded your current quota (insufficient_quota)").is_transient());
        assert!(!answered(400, "messages: required").is_transient());
        assert!(!answered(404, "No active credentials for provider: openai").is_transient());
        let unreadable = Unheard::Unreadable { what: "empty_content", message: "no text".into() };
        assert!(!unreadable.is_transient());
        assert_eq!((unreadable.status(), unreadable.name()), (StatusCode::BAD_GATEWAY, "empty_content".to_owned()));
        let late = Unheard::Late("timeout");
        assert!(!late.is_transient());
        assert_eq!((late.status(), late.name()), (StatusCode::GATEWAY_TIMEOUT, "timeout".to_owned()));
        assert_eq!(answered(502, "x").name(), "status_502");
    }
}
