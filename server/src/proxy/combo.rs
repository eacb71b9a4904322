//! Combo dispatch (SPEC §R8): the combo's targets in strategy order
//! (`priority`: as listed). A target is skipped before any attempt when the
//! optional window gate (§R1.1) holds it back, when its provider's breaker
//! is OPEN, or when every connection is cooling,
//! model-locked or terminal; otherwise its connections are tried like a
//! single-model request, and a failure moves on to the next target. When
//! nothing could even be tried the answer explains every exclusion:
//! `503 all_targets_cooling_down` when a resilience timer is involved
//! (with `Retry-After` = the earliest lapse), else `404
//! no_executable_targets`.

use app::types::{Protocol, combo::Combo};
use axum::{http::StatusCode, response::Response};
use bytes::Bytes;
use serde_json::json;
use std::sync::Arc;

use super::{
    dispatch::{self, Call, Caller, TargetRun},
    errors::ProxyError,
};
use crate::{
    resilience::engine::{self, Exclusion},
    routing::{registry::Snapshot, resolve},
    state::AppState,
};

/// One target skipped before any attempt.
struct Skipped {
    provider: String,
    model: String,
    reason: &'static str,
    /// `None` when no timer will end the exclusion.
    retry_after_ms: Option<u64>,
}

pub async fn run(
    state: &Arc<AppState>,
    snapshot: &Snapshot,
    combo: &Combo,
    caller: &Caller<'_>,
    body_for: impl Fn(Protocol, &str) -> Result<Bytes, ProxyError>,
) -> Result<Response, ProxyError> {
    let settings = state.resilience.current();
    let mut skipped = Vec::new();
    let mut last_failure: Option<ProxyError> = None;
    for spec in &combo.targets {
        let skip = |provider: &str, model: &str, reason, retry_after_ms| Skipped {
            provider: provider.to_owned(),
            model: model.to_owned(),
            reason,
            retry_after_ms,
        };
        let Ok(target) = resolve::resolve(&spec.model, snapshot) else {
            skipped.push(skip("", &spec.model, "unavailable", None));
            continue;
        };
        let (provider, model) = (target.provider, target.model.as_str());
        let candidates = dispatch::candidates(snapshot, provider, caller.key, spec.connection_id.as_deref());
        if candidates.is_empty() {
            skipped.push(skip(provider.id, model, "unavailable", None));
            continue;
        }
        let pinned = spec.connection_id.as_deref();
        let held = state.engine.target_cooldown_ms(provider.id, provider.category, pinned, &settings.provider_cooldown);
        if held > 0 {
            skipped.push(skip(provider.id, model, "provider_cooldown", Some(held)));
            continue;
        }
        let cfg = engine::breaker_config(&settings, provider.category);
        let probe = match state.engine.admit(provider.id, &cfg) {
            Ok(p) => p,
            Err(ms) => {
                skipped.push(skip(provider.id, model, "circuit_open", Some(ms)));
                continue;
            }
        };
        let one = Call { caller, target: &target, body: body_for(provider.protocol, model)? };
        let mut run = TargetRun { candidates, cfg, probe };
        match dispatch::try_connections(state, &one, &mut run).await {
            Ok(response) => {
                state.engine.record_target_success(provider.id, pinned);
                return Ok(response);
            }
            Err(u) if u.attempted() => {
                state.engine.record_target_failure(provider.id, provider.category, pinned, &settings.provider_cooldown);
                last_failure = Some(u.into_error(provider.id));
            }
            Err(u) => {
                let (reason, retry_after_ms) = exclusion_reason(&u.excluded);
                skipped.push(skip(provider.id, model, reason, retry_after_ms));
            }
        }
    }
    match last_failure {
        Some(e) => Err(e),
        None => Err(nothing_executable(combo, &skipped)),
    }
}

/// Why every connection of a target was skipped, and the earliest lapse.
fn exclusion_reason(excluded: &[Exclusion]) -> (&'static str, Option<u64>) {
    let soonest = |f: fn(&Exclusion) -> Option<u64>| excluded.iter().filter_map(f).min();
    let locked = soonest(|e| if let Exclusion::ModelLocked { remaining_ms } = e { Some(*remaining_ms) } else { None });
    let cooling = soonest(|e| if let Exclusion::Cooling { remaining_ms, .. } = e { Some(*remaining_ms) } else { None });
    match (cooling, locked) {
        (Some(c), l) => ("connection_cooldown", Some(l.map_or(c, |l| l.min(c)))),
        (None, Some(l)) => ("model_lockout", Some(l)),
        (None, None) => ("unavailable", None),
    }
}

/// The answer when no target could even be tried.
fn nothing_executable(combo: &Combo, skipped: &[Skipped]) -> ProxyError {
    let soonest = skipped.iter().filter_map(|s| s.retry_after_ms).min();
    let excluded: Vec<_> = skipped
        .iter()
        .map(|s| {
            json!({"provider": s.provider, "model": s.model, "reason": s.reason,
                   "retryAfterSeconds": s.retry_after_ms.map(|ms| ms.div_ceil(1000).max(1))})
        })
        .collect();
    let reasons: Vec<String> = skipped.iter().map(|s| format!("{}/{}:{}", s.provider, s.model, s.reason)).collect();
    let (status, kind, code) = match soonest {
        Some(_) => (StatusCode::SERVICE_UNAVAILABLE, "server_error", "all_targets_cooling_down"),
        None => (StatusCode::NOT_FOUND, "invalid_request_error", "no_executable_targets"),
    };
    tracing::warn!(combo = %combo.name, terminal_reason = code, excluded = %reasons.join(", "), "no combo target could run");
    let secs = soonest.map(|ms| ms.div_ceil(1000).max(1));
    let diagnostics = json!({
        "poolSize": combo.targets.len(),
        "attempted": 0,
        "excluded": excluded,
        "attemptOrder": combo.targets.iter().map(|t| t.model.clone()).collect::<Vec<_>>(),
        "terminalReason": code,
    });
    let hint = match secs {
        Some(s) => json!({"action": "wait", "retry_after_seconds": s,
                          "next_step": format!("Retry after {s} s, when the first target is back, or switch to another combo")}),
        None => json!({"action": "switch-combo",
                       "next_step": "No target has a usable connection: add or enable connections, or use another combo"}),
    };
    let message = match secs {
        Some(s) => {
            format!("All {} target(s) of combo {} are cooling down (reset after {s}s)", combo.targets.len(), combo.name)
        }
        None => format!("No target of combo {} can run: {}", combo.name, reasons.join(", ")),
    };
    let mut err = ProxyError::new(status, kind, code, message)
        .with("diagnostics", diagnostics)
        .with("recovery_hint", hint)
        .header("x-omniroute-combo-pool-size", combo.targets.len())
        .header("x-omniroute-combo-attempted", 0)
        .header("x-omniroute-combo-excluded", skipped.len())
        .header("x-omniroute-combo-terminal-reason", code);
    err.retry_after = secs;
    err
}
