//! `fusion`: every target of the combo — the panel — answers the request
//! in parallel, without tools and not streamed; a judge then gets the
//! conversation with the panel's answers appended as "Source 1…N" and
//! writes the one answer the client receives (streamed if asked, with the
//! client's tools). Use it for hard questions where several models'
//! consensus beats any one of them, at the cost of N + 1 calls.
//!
//! Limits (per combo `config.fusionTuning`): a panel larger than
//! `maxPanel` (40) is refused; once `minPanel` (2) members answered, the
//! others get `stragglerGraceMs` (8 s) more; nobody gets more than
//! `panelHardTimeoutMs` (90 s). The judge is `config.judgeModel`, else the
//! first target if it answered, else the first member that did.
//!
//! Short cuts, as the reference: a panel of one is a plain dispatch; a
//! request offering tools goes to the judge alone (a panel without tools
//! could not call them); when only one member answered and no judge is
//! named, the original request goes to that member. No answer at all is a
//! 503 naming each member's failure.

use app::types::combo::{Combo, ComboTarget};
use axum::response::Response;
use futures_util::{StreamExt, stream::FuturesUnordered};
use std::{sync::Arc, time::Duration};
use tokio::time::Instant;

use super::{Unheard, ask_text};
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

/// What the judge is asked to do with the panel's answers.
const JUDGE_INSTRUCTIONS: &str = "Several assistants answered the conversation above independently; their answers \
follow as numbered sources. Weigh them: where they agree, where they contradict each other, what each covers that \
the others miss, and what none of them considered. Then write the single best answer to the last user message \
yourself. Do not mention the sources, the assistants or this comparison.";

pub async fn serve(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    combo: &Combo,
) -> Result<Response, ProxyError> {
    let panel = &combo.targets;
    let tuning = combo.config.fusion(panel.len());
    if panel.len() > tuning.max_panel as usize {
        let why =
            format!("fusion combo {} has {} targets; its maxPanel is {}", combo.name, panel.len(), tuning.max_panel);
        return Err(bad_field("model", why));
    }
    let explicit_judge = combo.config.judge_model.as_ref().map(|model| ComboTarget {
        model: model.clone(),
        connection_id: None,
        weight: None,
        prompt: None,
    });
    let [only] = panel.as_slice() else {
        if req.offers_tools() {
            let judge = explicit_judge.as_ref().unwrap_or(&panel[0]);
            return route::serve_member(state, &req.retargeted(&judge.model), inbound, judge).await;
        }
        let heard = gather(state, req, inbound, panel, tuning).await;
        return judged(state, req, inbound, panel, explicit_judge.as_ref(), heard).await;
    };
    route::serve_member(state, &req.retargeted(&only.model), inbound, only).await
}

/// Each member's answer (by panel index) or why there is none.
type Heard = Vec<Result<String, Unheard>>;

/// Asks the whole panel at once and collects its answers within the limits.
async fn gather(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    panel: &[ComboTarget],
    tuning: app::types::combo::FusionSettings,
) -> Heard {
    let started = Instant::now();
    let mut heard: Vec<Option<Result<String, Unheard>>> = panel.iter().map(|_| None).collect();
    let mut pending = FuturesUnordered::new();
    for (i, member) in panel.iter().enumerate() {
        let ask = async move {
            let member_req = req.derived(&member.model, false, |r| {
                r.tools.clear();
                r.tool_choice = None;
            });
            let answer = match member_req {
                Ok(member_req) => ask_text(state, &member_req, inbound, member).await,
                Err(e) => Err(Unheard::from(e)),
            };
            (i, answer)
        };
        pending.push(ask);
    }
    let mut deadline = started + Duration::from_millis(tuning.panel_hard_timeout_ms);
    let mut answered = 0;
    let mut grace_started = false;
    loop {
        tokio::select! {
            next = pending.next() => match next {
                None => break,
                Some((i, answer)) => {
                    answered += usize::from(answer.is_ok());
                    heard[i] = Some(answer);
                    if !grace_started && answered >= tuning.min_panel as usize {
                        grace_started = true;
                        deadline = deadline.min(Instant::now() + Duration::from_millis(tuning.straggler_grace_ms));
                    }
                }
            },
            () = tokio::time::sleep_until(deadline) => break,
        }
    }
    let late = if grace_started { "straggler_dropped" } else { "timeout" };
    heard.into_iter().map(|h| h.unwrap_or(Err(Unheard::Late(late)))).collect()
}

/// The judge's answer from the panel's, or the fallbacks when too few answered.
async fn judged(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    panel: &[ComboTarget],
    explicit_judge: Option<&ComboTarget>,
    heard: Heard,
) -> Result<Response, ProxyError> {
    let answers: Vec<(usize, &String)> =
        heard.iter().enumerate().filter_map(|(i, h)| Some((i, h.as_ref().ok()?))).collect();
    tracing::info!(
        request_id = inbound.request_id,
        panel = panel.len(),
        answered = answers.len(),
        "fusion panel gathered"
    );
    let Some(&(first, _)) = answers.first() else {
        let why: Vec<String> = panel
            .iter()
            .zip(&heard)
            .filter_map(|(m, h)| h.as_ref().err().map(|u| format!("{}={}", m.model, u.name())))
            .collect();
        let message = format!("All fusion panel models failed: {}", why.join(", "));
        return Err(Refused::FusionPanelFailed.because(message));
    };
    if answers.len() == 1 && explicit_judge.is_none() {
        let member = &panel[first];
        return route::serve_member(state, &req.retargeted(&member.model), inbound, member).await;
    }
    let judge = explicit_judge.unwrap_or(if heard[0].is_ok() { &panel[0] } else { &panel[first] });
    let mut prompt = JUDGE_INSTRUCTIONS.to_owned();
    for (n, (_, text)) in answers.iter().enumerate() {
        prompt.push_str(&format!("\n\nSource {}:\n{}", n + 1, text.trim()));
    }
    let judge_req = req.derived(&judge.model, req.stream, |r| r.push(ir::Role::User, vec![ir::Part::Text(prompt)]))?;
    route::serve_member(state, &judge_req, inbound, judge).await
}
