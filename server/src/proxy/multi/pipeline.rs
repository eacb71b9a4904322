//! `pipeline`: the combo's targets run as a chain, in the order listed.
//! The first step gets the client's conversation with its `prompt` as the
//! first system instruction; every later step gets a fresh conversation —
//! its prompt as the system instruction, the previous step's text as the
//! user's message. The steps before the last run without tools and are
//! not streamed; the last keeps the client's `stream` and tools, and its
//! answer is the client's, as it is. Use it for draft → review → polish
//! chains, or a cheap model condensing a long context for a strong one.
//!
//! A step before the last that fails with 429, 502, 503 or 504 is tried
//! again up to `config.maxRetries` times (default 1), `retryDelayMs`
//! (default 2 s) apart; each try is a whole dispatch, so a target with
//! several connections has already failed over inside it. A step that
//! still fails ends the request with its status ("Pipeline step i (model)
//! failed"); an answer without text is a 502. Steps never fall back to
//! other targets: each one has its own job.

use app::types::combo::{Combo, ComboTarget};
use axum::{http::StatusCode, response::Response};
use std::{sync::Arc, time::Duration};

use super::{ask_text, plan_error};
use crate::{
    protocols::ir,
    proxy::{
        errors::ProxyError,
        request::ClientRequest,
        route::{self, Inbound},
    },
    state::AppState,
};

/// Statuses of a step worth trying again.
const RETRIED: [u16; 4] = [429, 502, 503, 504];

pub async fn serve(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    combo: &Combo,
) -> Result<Response, ProxyError> {
    let mut previous: Option<String> = None;
    let last = combo.targets.len().saturating_sub(1);
    for (i, step) in combo.targets.iter().enumerate() {
        let step_req = req.derived(&step.model, i == last && req.stream, |r| {
            if let Some(text) = previous.take() {
                r.system.clear();
                r.messages.clear();
                r.push(ir::Role::User, vec![ir::Part::Text(text)]);
            }
            if let Some(prompt) = &step.prompt {
                r.system.insert(0, prompt.clone());
            }
            if i != last {
                r.tools.clear();
                r.tool_choice = None;
            }
        })?;
        if i == last {
            return route::serve_member(state, &step_req, inbound, step).await;
        }
        previous = Some(step_text(state, &step_req, inbound, step, (i + 1, combo)).await?);
    }
    Err(ProxyError::bad_field("model", format!("pipeline combo {} has no targets", combo.name)))
}

/// Step `n`'s text, tried again on a transient failure as the combo says.
async fn step_text(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    step: &ComboTarget,
    (n, combo): (usize, &Combo),
) -> Result<String, ProxyError> {
    let retries = combo.config.max_retries();
    let mut tried = 0;
    loop {
        let unheard = match ask_text(state, req, inbound, step).await {
            Ok(text) => return Ok(text),
            Err(unheard) => unheard,
        };
        if tried < retries && RETRIED.contains(&unheard.status.as_u16()) && unheard.reason.starts_with("status_") {
            tried += 1;
            tracing::info!(
                request_id = inbound.request_id,
                step = n,
                status = unheard.status.as_u16(),
                "pipeline step retried"
            );
            tokio::time::sleep(Duration::from_millis(combo.config.retry_delay_ms())).await;
            continue;
        }
        let status = if unheard.status.is_client_error() || unheard.status.is_server_error() {
            unheard.status
        } else {
            StatusCode::BAD_GATEWAY
        };
        let message = format!("Pipeline step {n} ({}) failed: {}", step.model, unheard.message);
        return Err(plan_error(status, "PIPELINE_STEP_FAILED", message));
    }
}
