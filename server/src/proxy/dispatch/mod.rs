//! The dispatch loop — read this to understand a request. One loop
//! serves a single model and a combo alike:
//! plan (the ordered targets, `plan`) → per target, the gates (`gates`:
//! a usable connection, the §R1.1 window gate for combo targets, the
//! provider breaker) → per connection, its own gates (cooldown, terminal
//! state, model lockout) → attempt → on failure the engine restates,
//! classifies and applies the verdict (cooldown, lockout, breaker), and
//! the next connection / target is tried unless the verdict says the
//! request itself is at fault → on success the engine clears the
//! connection's errors, decays lockouts and counts a breaker success.
//! When every connection of a single model is cooling, the request waits
//! for the first (§R2 wait-for-cooldown) and runs the loop again. What
//! could not be served ends as a [`error::DispatchError`] carrying the
//! trail of every attempt and skip, which says why and when to retry.
//!
//! Each attempt is an [`attempt::AttemptGuard`]: it writes the attempt's
//! `proxy_logs` row and reports its outcome exactly once — for a stream,
//! when the stream ends. A stream is committed to the client only at its
//! first useful event (SPEC §R6); until then an attempt that times out,
//! breaks or ends early is retried or failed over like any other failure.

mod answer;
pub mod attempt;
mod call;
mod call_upstream;
mod combo_wait;
mod deadline;
mod emergency;
pub mod error;
mod gates;
mod limit;
mod oauth;
mod permits;
pub mod queue;
mod shared_slots;
mod slots;
mod streaming;
mod target;
mod usage_wall;

use app::types::Protocol;
use axum::response::Response;
use bytes::Bytes;
use std::{sync::Arc, time::Duration};

use self::error::{DispatchError, Trail};
use super::{cooldown_wait::AbandonedWait, errors::ProxyError};
use crate::{
    resilience::{combo_wait::ComboWaits, cooldown_wait::CooldownWaits},
    routing::{plan::Plan, registry::Snapshot},
    state::AppState,
    store::AttemptRecord,
};

use self::call::{caller_row, log_row};
pub use self::{
    call::{Call, Caller, Failure, FailureCode, TargetRun, Unserved},
    deadline::RequestDeadline,
    target::{Served, To, serve_target, try_connections},
};

/// Serves `plan`: its targets in order, each through the gates and its
/// connections, waiting for a cooldown where that is allowed.
pub async fn run(
    state: &Arc<AppState>,
    snapshot: &Snapshot,
    plan: &Plan,
    caller: &Caller<'_>,
    body_for: impl Fn(Protocol, &str) -> Result<Bytes, ProxyError>,
) -> Result<Response, DispatchError> {
    let settings = state.resilience.current();
    let combo = plan.combo.is_some();
    let mut waits = CooldownWaits::default();
    let mut combo_waits = ComboWaits::default();
    let started = tokio::time::Instant::now();
    // `targetTimeoutMs`: how long each attempt on a combo target may wait for its answer to start.
    let timeout = plan.combo.as_ref().and_then(|c| c.config.target_timeout_ms).map(Duration::from_millis);
    // `comboTimeoutMs`: no further target once it has passed.
    let combo_timeout = plan.combo.as_ref().and_then(|c| Some((c, c.config.combo_timeout_ms.filter(|ms| *ms > 0)?)));
    loop {
        let mut trail = Trail::default();
        for (i, planned) in plan.targets.iter().enumerate() {
            let Some(target) = &planned.target else {
                trail.skip(planned, gates::Skip::new(gates::SkipReason::NoConnection, None));
                continue;
            };
            if caller.deadline.passed() {
                return Err(DispatchError::RequestDeadline(trail, caller.deadline.budget_ms()));
            }
            let (provider, pinned) = (target.provider, planned.pinned.as_deref());
            let tried_at = tokio::time::Instant::now();
            let next_target = combo && i + 1 < plan.targets.len();
            let to = To { target, pinned, combo, timeout, next_target };
            match serve_target(state, snapshot, to, caller, &settings, &body_for).await? {
                Err(Served::Skipped(skip)) => {
                    trail.skip(planned, skip);
                    continue;
                }
                Ok(response) => {
                    if let Some(c) = &plan.combo {
                        state.engine.record_target_success(provider.id, pinned);
                        let position = (planned.index, plan.targets.len());
                        state.routing.combo_states.served(
                            &c.name,
                            &planned.key,
                            provider.id,
                            position,
                            tried_at.elapsed(),
                        );
                    }
                    return Ok(response);
                }
                Err(Served::Unserved(unserved)) => {
                    if let Some(c) = plan.combo.as_ref().filter(|_| unserved.attempted()) {
                        let window = &settings.provider_cooldown;
                        state.engine.record_target_failure(provider.id, provider.category, pinned, window);
                        state.routing.combo_states.failed(&c.name, &planned.key);
                    }
                    let out_of_time = unserved.out_of_time;
                    trail.unserved(planned, provider.id, unserved);
                    if out_of_time {
                        return Err(DispatchError::RequestDeadline(trail, caller.deadline.budget_ms()));
                    }
                }
            }
            if let Some((combo, ms)) = combo_timeout.filter(|(_, ms)| started.elapsed() >= Duration::from_millis(*ms)) {
                return Err(DispatchError::ComboTimeout(combo.clone(), trail, ms));
            }
        }
        // A combo held back by short transient locks waits for the first
        // to end (§R4); a single model whose connections are all cooling
        // waits for the first (§R2).
        let wait = if combo {
            combo_wait::after(&mut combo_waits, &state.view(snapshot, &settings), &caller.asker(), plan, &trail)
        } else if trail.tried.is_empty() {
            waits.next(&settings.wait_for_cooldown, &trail.excluded)
        } else {
            None
        };
        if wait.is_some() && caller.deadline.passed() {
            return Err(DispatchError::RequestDeadline(trail, caller.deadline.budget_ms()));
        }
        let (Some(ms), Some(target)) = (wait, plan.targets.iter().find_map(|p| p.target.as_ref())) else {
            if let Some(response) = emergency::fallback(state, snapshot, plan, caller, &settings, &body_for).await? {
                return Ok(response);
            }
            if combo {
                let view = state.view(snapshot, &settings);
                let rate_limited = combo_wait::rate_limited_ms(&view, &caller.asker(), plan, &trail);
                trail.rate_limited = rate_limited.map(|ms| (ms, state.engine.now() + i64::try_from(ms).unwrap_or(0)));
            }
            return Err(if trail.tried.is_empty() {
                refused(state, caller, plan, trail)
            } else {
                DispatchError::exhausted(plan, trail)
            });
        };
        tracing::info!(
            request_id = caller.request_id,
            provider = target.provider.id,
            wait_ms = ms,
            combo = plan.combo.as_ref().map(|c| c.name.as_str()),
            "every target is held back briefly; waiting for the first to free"
        );
        let row = AttemptRecord { wait_ms: caller.held.pending(), ..log_row(caller, target, state.clock.now_ms()) };
        let wait = AbandonedWait::arm(state, row, ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        wait.disarm();
        caller.held.ms(ms);
    }
}

/// A plan nothing could even be tried on (breaker open, every connection
/// cooling or locked, no connection): the client's answer, logged as the
/// gateway's own refusal — under the combo's name, or the single target.
fn refused(state: &AppState, caller: &Caller<'_>, plan: &Plan, trail: Trail) -> DispatchError {
    let now = state.clock.now_ms();
    let row = AttemptRecord { wait_ms: caller.held.take(), ..caller_row(caller, now) };
    let row = match (&plan.combo, plan.targets.first()) {
        (Some(combo), _) => AttemptRecord { model: combo.name.clone(), ..row },
        (None, Some(planned)) => match &planned.target {
            Some(target) => {
                AttemptRecord { provider: target.provider.id.to_owned(), model: target.model.clone(), ..row }
            }
            None => AttemptRecord { model: planned.spec.clone(), ..row },
        },
        (None, None) => row,
    };
    let e = ProxyError::from(DispatchError::exhausted(plan, trail));
    super::errors::log_refused(state, row, &e);
    DispatchError::Request(e)
}

#[cfg(test)]
mod tests;
