//! The request side of `context-relay` (reference strategies §2.4): after
//! a combo of that strategy served a conversation on an account whose
//! quota (as its rate-limit headers report it, `routing::quota`) is at
//! least `handoffThreshold` used but not yet exhausted, a summary of the
//! conversation's latest `maxMessagesForSummary` messages is written in
//! the background by `handoffModel` (default: the model that served) and
//! kept (`routing::handoffs`) until that quota window resets. Later
//! requests of the same session through the combo carry it: every account
//! but the one it was written on gets it as the first system instruction
//! (`Caller::handoff`), so the account taking the conversation over starts
//! from the summary, as the original does for Codex sessions.
//!
//! Unlike the original, whose handoffs are for Codex alone, any provider
//! whose upstream reports rate-limit windows hands off (or those listed in
//! `handoffProviders`), since the gateway reads those windows for all.

use app::types::combo::{Combo, ComboTarget};
use axum::response::Response;
use std::sync::Arc;

use super::{context::SELECTED_CONNECTION, errors::ProxyError, multi, request::ClientRequest, route::Inbound};
use crate::{
    auth::api_keys::KeyEntry,
    protocols::ir,
    routing::{affinity::SessionId, handoffs::Handoff, plan::Plan, quota::QuotaSource},
    state::AppState,
};

/// A quota this used is exhausted: too late to write a summary on it.
const EXHAUSTED: f64 = 0.95;
/// How long a handoff lasts when the quota's reset is unknown (5 h).
const DEFAULT_LIFETIME_MS: i64 = 5 * 3_600_000;
/// The summary's length bound and temperature.
const SUMMARY_MAX_TOKENS: u64 = 800;
const SUMMARY_TEMPERATURE: f64 = 0.1;

const SUMMARY_INSTRUCTIONS: &str = "Summarise the conversation above for another assistant who will continue it \
without having seen it. Answer with a JSON object only: {\"summary\": \"…\", \"keyDecisions\": [\"…\"], \
\"taskProgress\": \"…\", \"activeEntities\": [\"files, names, ids still in play\"]}.";

/// The request with the session's handoff note, when `combo` relays and
/// one is ready.
pub fn prepared(
    state: &AppState,
    combo: &Combo,
    req: &ClientRequest,
) -> Result<Option<(Arc<Handoff>, ClientRequest)>, ProxyError> {
    let Some(session) = req.session() else { return Ok(None) };
    let Some(handoff) = state.routing.handoffs.ready(session, &combo.name, state.engine.now()) else { return Ok(None) };
    let noted = req.derived(&req.model, req.stream, |r| r.system.insert(0, handoff.note.clone()))?;
    Ok(Some((handoff, noted)))
}

/// After `plan` of relaying `combo` served `req` (`response`): starts
/// writing a handoff when the serving account nears its quota.
pub fn after_served(
    state: &Arc<AppState>,
    combo: &Combo,
    plan: &Plan,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    response: &Response,
) {
    let Some(session) = req.session() else { return };
    let served = response.headers().get(SELECTED_CONNECTION).and_then(|v| v.to_str().ok());
    let snapshot = state.routing.connections.snapshot();
    let Some(conn) = served.and_then(|id| snapshot.connection(id)) else { return };
    let provider = conn.provider.id;
    let Some(target) = plan.targets.iter().find_map(|p| {
        let t = p.target.as_ref()?;
        (t.provider.id == provider && p.pinned.as_deref().is_none_or(|pin| pin == conn.id)).then_some(t)
    }) else {
        return;
    };
    let now = state.engine.now();
    let source: &dyn QuotaSource = &state.routing.quotas;
    let Some(quota) = source.quota(&conn.id, &target.model, now) else { return };
    let used = quota.used();
    let cfg = &combo.config;
    if !(cfg.handoff_threshold()..EXHAUSTED).contains(&used) || !cfg.hands_off(provider) {
        return;
    }
    if !state.routing.handoffs.claim(session, &combo.name, now) {
        return;
    }
    let model = cfg.handoff_model.clone().unwrap_or_else(|| format!("{provider}/{}", target.model));
    let summary = match summary_request(req, &model, cfg.max_messages_for_summary()) {
        Ok(summary) => summary,
        Err(e) => {
            tracing::warn!(request_id = inbound.request_id, combo = %combo.name, "no handoff: {}", e.message);
            state.routing.handoffs.abandon(session, &combo.name);
            return;
        }
    };
    let reset_in = quota.soonest_reset_in_ms().and_then(|ms| i64::try_from(ms).ok());
    let writer = Writer {
        state: state.clone(),
        session,
        combo: combo.name.clone(),
        from_connection: conn.id.clone(),
        expires_at_ms: now + reset_in.unwrap_or(DEFAULT_LIFETIME_MS),
        request_id: format!("{}-handoff", inbound.request_id),
        endpoint: inbound.endpoint,
        key: inbound.key.map(|k| KeyEntry::new(k.id.clone(), k.scopes.clone(), k.allowed_connections.clone())),
        model,
    };
    tracing::info!(request_id = inbound.request_id, combo = %combo.name, used, "writing a context handoff");
    #[expect(
        clippy::disallowed_methods,
        reason = "the summary outlives the request by design; its calls run the dispatch loop, each under its own attempt guard, and at most one runs per session and combo"
    )]
    tokio::spawn(writer.write(summary));
}

/// What the background writer of one handoff owns.
struct Writer {
    state: Arc<AppState>,
    session: SessionId,
    combo: String,
    from_connection: String,
    expires_at_ms: i64,
    request_id: String,
    endpoint: &'static str,
    key: Option<KeyEntry>,
    model: String,
}

impl Writer {
    async fn write(self, summary: ClientRequest) {
        let inbound = Inbound {
            protocol: summary.protocol,
            endpoint: self.endpoint,
            request_id: &self.request_id,
            key: self.key.as_ref(),
            lease: None,
            resume: None,
            continuing: None,
        };
        let writer = ComboTarget { model: self.model.clone(), connection_id: None, weight: None, prompt: None };
        match multi::ask_text(&self.state, &summary, &inbound, &writer).await {
            Ok(text) => {
                let note = format!("<context_handoff>\n{}\n</context_handoff>", text.trim());
                let handoff =
                    Handoff { from_connection: self.from_connection, note, expires_at_ms: self.expires_at_ms };
                self.state.routing.handoffs.store(self.session, &self.combo, handoff);
            }
            Err(why) => {
                tracing::warn!(request_id = %self.request_id, combo = %self.combo, reason = %why.name(), "context handoff not written");
                self.state.routing.handoffs.abandon(self.session, &self.combo);
            }
        }
    }
}

/// The summariser's request: the latest `max_messages` of `req`'s
/// conversation as one transcript, and what to make of it.
fn summary_request(req: &ClientRequest, model: &str, max_messages: usize) -> Result<ClientRequest, ProxyError> {
    req.derived(model, false, |r| {
        let skip = r.messages.len().saturating_sub(max_messages);
        let transcript: Vec<String> = r.messages[skip..].iter().map(line).collect();
        let text = format!("{}\n\n{SUMMARY_INSTRUCTIONS}", transcript.join("\n\n"));
        *r = ir::Request {
            model: r.model.clone(),
            system: r.system.clone(),
            max_tokens: Some(SUMMARY_MAX_TOKENS),
            temperature: Some(SUMMARY_TEMPERATURE),
            ..ir::Request::default()
        };
        r.push(ir::Role::User, vec![ir::Part::Text(text)]);
    })
}

/// One message of the transcript: its speaker and what it said or did.
fn line(m: &ir::Message) -> String {
    let speaker = match m.role {
        ir::Role::User => "user",
        ir::Role::Assistant => "assistant",
    };
    let said: Vec<String> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            ir::Part::Text(t) => Some(t.clone()),
            ir::Part::Image(_) => Some("[image]".to_owned()),
            ir::Part::ToolCall { name, arguments, .. } => Some(format!("[called {name} with {arguments}]")),
            ir::Part::ToolResult { content, .. } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|c| if let ir::Part::Text(t) = c { Some(t.as_str()) } else { None })
                    .collect();
                Some(format!("[tool result: {}]", text.join(" ")))
            }
            ir::Part::Reasoning { .. } => None,
        })
        .collect();
    format!("{speaker}: {}", said.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::types::Protocol;
    use bytes::Bytes;
    use http::HeaderMap;

    #[test]
    fn the_summary_request_is_a_transcript_of_the_latest_messages_without_tools() {
        let body = serde_json::json!({"model": "relay", "stream": true, "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}],
            "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}, {"role": "user", "content": "third"}]});
        let req = ClientRequest::parse(Protocol::OpenaiChat, Bytes::from(body.to_string()), &HeaderMap::new()).unwrap();
        let summary = summary_request(&req, "openai/gpt-4o-mini", 2).unwrap();
        assert!(!summary.stream);
        let out: serde_json::Value =
            serde_json::from_slice(&summary.body_for(Protocol::OpenaiChat, "gpt-4o-mini").unwrap()).unwrap();
        assert_eq!(out["messages"][0], serde_json::json!({"role": "system", "content": "Be terse."}));
        let text = out["messages"][1]["content"].as_str().unwrap();
        assert!(text.starts_with("assistant: second\n\nuser: third\n\nSummarise"), "{text}");
        assert!(!text.contains("first"), "only the latest messages");
        assert!(out.get("tools").is_none());
        assert_eq!((out["max_tokens"].as_u64(), out["temperature"].as_f64()), (Some(800), Some(0.1)));
    }
}
