//! One target through its gates and its connections: the answer, or why
//! there is none (skipped by a gate, or every connection failed).

use app::types::{Protocol, settings::ResilienceSettings};
use axum::response::Response;
use bytes::Bytes;
use std::{sync::Arc, time::Duration};

use super::{
    attempt::AttemptGuard,
    call::{Call, Caller, Failure, FailureCode, TargetRun, Tried, Unserved},
    call_upstream::attempt,
    error::DispatchError,
    gates,
    shared_slots::Shared,
    slots::{self, Slots, Taken},
};
use crate::{
    protocols::{anthropic::identity, responses::codex},
    proxy::errors::ProxyError,
    upstream::catalog::Wire,
};
use crate::{
    routing::{
        registry::{LiveConnection, Snapshot},
        resolve::Target,
        view::RoutingView,
    },
    state::AppState,
};

/// Where one target's attempts go.
#[derive(Clone, Copy)]
pub struct To<'a> {
    pub target: &'a Target,
    pub pinned: Option<&'a str>,
    /// A combo's target (its gates and limits differ, §R8).
    pub combo: bool,
    /// Its combo's `targetTimeoutMs`.
    pub timeout: Option<Duration>,
    /// Another combo target follows this one.
    pub next_target: bool,
}

/// Why a target did not answer.
pub enum Served {
    /// Its gates skipped it before any attempt.
    Skipped(gates::Skip),
    /// No connection of it served.
    Unserved(Unserved),
}

/// One target through its gates and its connections: the answer, or why
/// there is none.
pub async fn serve_target(
    state: &Arc<AppState>,
    snapshot: &Snapshot,
    to: To<'_>,
    caller: &Caller<'_>,
    settings: &ResilienceSettings,
    body_for: &impl Fn(Protocol, &str) -> Result<Bytes, ProxyError>,
) -> Result<Result<Response, Served>, DispatchError> {
    let target = to.target;
    let view = state.view(snapshot, settings);
    let mut run = match gates::open(state, &view, target, to.pinned, caller, to.combo) {
        Ok(run) => run,
        Err(skip) => return Ok(Err(Served::Skipped(skip))),
    };
    if let Some(failures) = slots::all_queues_full(state, caller, target, &run.candidates) {
        return Ok(Err(Served::Unserved(Unserved { failures, excluded: Vec::new(), out_of_time: false })));
    }
    let (protocol, model) = (target.provider.protocol, target.model.as_str());
    let wire = target.provider.wire;
    let body = for_wire(wire, body_for(protocol, model).map_err(DispatchError::Request)?);
    let handoff = match caller.handoff {
        Some((from, noted)) => {
            Some((from, for_wire(wire, noted.body_for(protocol, model).map_err(DispatchError::Request)?)))
        }
        None => None,
    };
    let call =
        Call { caller, target, combo: to.combo, body, handoff, timeout: to.timeout, next_target: to.next_target };
    Ok(try_connections(state, &view, &call, &mut run).await.map_err(Served::Unserved))
}

/// `body` as the provider's backend takes it.
fn for_wire(wire: Wire, body: Bytes) -> Bytes {
    match wire {
        // Code Assist's envelope names the connection's project: made per attempt.
        Wire::Standard | Wire::CodeAssist => body,
        // A Claude subscription serves only requests that open as Claude Code's.
        Wire::ClaudeCode => identity::with_identity(body),
        Wire::Codex => codex::for_codex(body),
    }
}

/// Tries each usable connection of the target, in order. A connection at
/// a limit — its request queue (SPEC §R5) or its concurrency (§R4) — is
/// passed over for the next; when every usable one is, the request waits
/// on the first. Connections stop being tried once the request's deadline
/// passed, and — when another combo target follows — after an attempt
/// that timed out: a provider whose connections stall in turn costs one
/// timeout, not one per connection (`deadline`).
pub async fn try_connections(
    state: &Arc<AppState>,
    view: &RoutingView<'_>,
    call: &Call<'_>,
    t: &mut TargetRun<'_>,
) -> Result<Response, Unserved> {
    let provider = call.target.provider;
    let mut failures: Vec<Failure> = Vec::new();
    let mut excluded = Vec::new();
    let mut busy = None;
    // A refusal of the request's tools holds for every account.
    let refused_tools = || call.combo && gates::exceeds_tool_limit(view, call.target, call.caller);
    let pass_on = |failures: &[Failure]| call.next_target && failures.last().is_some_and(|f| f.timed_out);
    let out_of_time = || call.caller.deadline.passed();
    for conn in std::mem::take(&mut t.candidates) {
        if (!failures.is_empty() && refused_tools()) || pass_on(&failures) {
            break;
        }
        if let Some(why) = view.excluded(provider.id, &conn.id, &call.target.model) {
            excluded.push(why);
            continue;
        }
        if out_of_time() {
            return Err(Unserved { failures, excluded, out_of_time: true });
        }
        match slots::try_take(state, call, conn, t.requester) {
            Taken::Slots(slots) => {
                // Several instances on one Postgres: the shared slots too.
                let slots = match Shared::of(state) {
                    None => Some(slots),
                    Some(shared) => Box::pin(slots::share(state, call, conn, t.requester, slots, shared)).await,
                };
                let Some(slots) = slots else {
                    busy.get_or_insert(conn);
                    continue;
                };
                if let Some(response) = serve_on(state, call, t, conn, slots, &mut failures).await {
                    return Ok(response);
                }
            }
            Taken::Busy => {
                busy.get_or_insert(conn);
            }
            Taken::Refused(failure) => failures.push(failure),
        }
    }
    let waits = busy.filter(|_| (failures.is_empty() || !refused_tools()) && !pass_on(&failures));
    if let Some(conn) = waits {
        if out_of_time() {
            return Err(Unserved { failures, excluded, out_of_time: true });
        }
        match slots::wait(state, call, conn, t.requester).await {
            Ok(slots) => {
                if let Some(response) = serve_on(state, call, t, conn, slots, &mut failures).await {
                    return Ok(response);
                }
            }
            Err(failure) => failures.push(failure),
        }
    }
    Err(Unserved { failures, excluded, out_of_time: false })
}

/// Attempts on one connection holding `slots`; a stream that ended
/// before its first event, or whose OAuth token was refreshed after a 401,
/// gets one more try, with fresh slots.
async fn serve_on(
    state: &Arc<AppState>,
    call: &Call<'_>,
    t: &mut TargetRun<'_>,
    conn: &Arc<LiveConnection>,
    slots: Slots,
    failures: &mut Vec<Failure>,
) -> Option<Response> {
    let guard = AttemptGuard::start(state, call, t, conn, slots);
    // Boxed: a request waiting for its slots (often many of them, queued)
    // then holds a small future, not the whole attempt's state machine.
    let failure = match Box::pin(attempt(state, call, guard)).await {
        Tried::Answer(response) => return Some(response),
        Tried::Failed(f) => f,
        Tried::Again(_) => match slots::wait(state, call, conn, t.requester).await {
            Err(refused) => refused,
            Ok(slots) => {
                let guard = AttemptGuard::start(state, call, t, conn, slots).again();
                match Box::pin(attempt(state, call, guard)).await {
                    Tried::Answer(response) => return Some(response),
                    Tried::Failed(f) => f,
                    Tried::Again(f) => {
                        // Twice early: the session's pin leaves this connection.
                        if let Some(pin) = t.pin.as_ref().filter(|_| f.code == Some(FailureCode::EarlyEof)) {
                            state.routing.affinity.evict(pin, &conn.id);
                        }
                        f
                    }
                }
            }
        },
    };
    failures.push(failure);
    None
}
