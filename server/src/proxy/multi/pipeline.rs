//! `pipeline`: the combo's targets run as a chain, in the order listed.
//! The first step gets the client's conversation with its `prompt` as the
//! first system instruction; every later step gets a fresh conversation —
//! its prompt as the system instruction, the previous step's text as the
//! user's message. The steps before the last run without tools and are
//! not streamed; the last keeps the client's `stream` and tools, and its
//! answer is the client's, as it is. Use it for draft → review → polish
//! chains, or a cheap model condensing a long context for a strong one.
//!
//! A step before the last whose error the classifier calls transient (a
//! rate or concurrency limit, a server error, a timeout — the original's
//! 429, 502, 503 and 504, and also a 500; not a used-up quota or credits)
//! is tried again up to `config.maxRetries` times (default 1),
//! `retryDelayMs` (default 2 s) apart; each try is a whole dispatch, so a
//! target with several connections has already failed over inside it. A step that
//! still fails ends the request with its status ("Pipeline step i (model)
//! failed"); an answer without text is a 502. Steps never fall back to
//! other targets: each one has its own job.

use app::types::combo::{Combo, ComboTarget};
use axum::response::Response;
use std::{sync::Arc, time::Duration};

use super::ask_text;
use crate::{
    protocols::ir,
    proxy::{
        errors::ProxyError,
        refusals::{Refused, bad_field},
        request::ClientRequest,
        route::{self, Inbound},
    },
    state::AppState,
};

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
    Err(bad_field("model", format!("pipeline combo {} has no targets", combo.name)))
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
        if tried < retries && unheard.is_transient() {
            tried += 1;
            tracing::info!(
                request_id = inbound.request_id,
                step = n,
                status = unheard.status().as_u16(),
                "pipeline step retried"
            );
            tokio::time::sleep(Duration::from_millis(combo.config.retry_delay_ms())).await;
            continue;
        }
        let status = unheard.status();
        let message = format!("Pipeline step {n} ({}) failed: {}", step.model, unheard.message());
        return Err(Refused::PipelineStepFailed(status).because(message));
    }
}
