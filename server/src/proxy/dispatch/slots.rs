//! What an attempt must hold before it calls the upstream (SPEC §R8:
//! admission, then semaphores): a start from the connection's request
//! queue when it is protected (§R5), then its concurrency permit (§R4).
//! The attempt guard holds both; a refusal of either is the gateway's own,
//! logged as a row and never reported to the engine.

use std::sync::Arc;

use super::{
    call::{Call, Caller, Failure, FailureCode, log_row},
    permits::{self, Held, Requester},
    queue::{self, Executing, QueueRefused},
    shared_slots::Shared,
};
use crate::{
    routing::{registry::LiveConnection, resolve::Target},
    state::AppState,
    store::AttemptRecord,
};

/// `requestQueue.globalConcurrentRequests` (0: none).
fn global_cap(state: &AppState) -> u64 {
    state.resilience.current().request_queue.global_concurrent_requests
}

/// An attempt's slots, given back when it finishes.
#[derive(Default)]
pub struct Slots {
    pub permit: Held,
    pub queue: Option<Executing>,
}

/// What a try without waiting came to.
pub enum Taken {
    Slots(Slots),
    /// The connection is at a limit: the request would have to wait.
    Busy,
    /// Refused outright (a full request queue).
    Refused(Failure),
}

/// Takes the slots on `conn` if that needs no wait. The permit is tried
/// first: it costs nothing to give back, a queue start spends the rate.
/// On a shared database the limits' shared slots are [`share`]d next.
pub fn try_take(state: &AppState, call: &Call<'_>, conn: &LiveConnection, who: Requester) -> Taken {
    let model = &call.target.model;
    let limits = permits::limits(&state.admission.concurrency, global_cap(state), conn, model, who);
    let Ok(permit) = permits::acquire_here(&limits) else {
        return Taken::Busy;
    };
    let queue = match queue::entry(state, conn, model) {
        None => None,
        Some(entry) => match entry.try_start() {
            Ok(Some(slot)) => Some(Executing::new(slot, &entry)),
            Ok(None) => return Taken::Busy,
            Err(why) => return Taken::Refused(refused(state, call, conn, &Refusal::Queue(why))),
        },
    };
    Taken::Slots(Slots { permit, queue })
}

/// Adds the shared slots (several instances on one Postgres) to the
/// slots [`try_take`] took; `None` when another instance holds them (the
/// connection is busy; a queue start already made stays spent).
pub async fn share(
    state: &AppState,
    call: &Call<'_>,
    conn: &LiveConnection,
    who: Requester,
    slots: Slots,
    shared: Shared<'_>,
) -> Option<Slots> {
    let limits = permits::limits(&state.admission.concurrency, global_cap(state), conn, &call.target.model, who);
    let Slots { permit, queue } = slots;
    Some(Slots { permit: permits::share(permit, &limits, shared).await.ok()?, queue })
}

/// Waits for the slots on `conn`: in its request queue, then for its
/// concurrency permit.
pub async fn wait(state: &AppState, call: &Call<'_>, conn: &LiveConnection, who: Requester) -> Result<Slots, Failure> {
    let started = tokio::time::Instant::now();
    let taken = take_waiting(state, call, conn, who).await;
    call.caller.held.since(started);
    taken.map_err(|why| refused(state, call, conn, &why))
}

async fn take_waiting(
    state: &AppState,
    call: &Call<'_>,
    conn: &LiveConnection,
    who: Requester,
) -> Result<Slots, Refusal> {
    let model = &call.target.model;
    let queue = match queue::entry(state, conn, model) {
        None => None,
        Some(entry) => Some(Executing::new(entry.wait().await.map_err(Refusal::Queue)?, &entry)),
    };
    let limits = permits::limits(&state.admission.concurrency, global_cap(state), conn, model, who);
    let permit = permits::wait(limits, Shared::of(state)).await.map_err(Refusal::Permit)?;
    Ok(Slots { permit, queue })
}

/// Whether every candidate is a protected connection whose queue is full:
/// then the request is refused before any translation work (§R5).
pub fn all_queues_full(
    state: &AppState,
    caller: &Caller<'_>,
    target: &Target,
    conns: &[&Arc<LiveConnection>],
) -> Option<Vec<Failure>> {
    if state.resilience.current().request_queue.max_queue_depth == 0 {
        // Unbounded queues (the default) refuse nobody: nothing to look up.
        return None;
    }
    let mut refusals = Vec::new();
    for conn in conns {
        let why = queue::entry(state, conn, &target.model)?.admits().err()?;
        refusals.push((conn, why));
    }
    let refuse = |(conn, why): (&&Arc<LiveConnection>, QueueRefused)| {
        let failure = Failure::local(conn, &Refusal::Queue(why));
        log_refusal(state, conn, &failure, log_row(caller, target, state.clock.now_ms()));
        failure
    };
    Some(refusals.into_iter().map(refuse).collect())
}

/// Why the gateway refused an attempt itself.
pub enum Refusal {
    Queue(QueueRefused),
    Permit(permits::Refused),
}

impl Refusal {
    fn code(&self) -> FailureCode {
        match self {
            Self::Queue(QueueRefused::Full { .. }) => FailureCode::QueueFull,
            Self::Queue(QueueRefused::Timeout { .. }) => FailureCode::QueueTimeout,
            Self::Queue(QueueRefused::Wedged { .. }) => FailureCode::QueueWedged,
            Self::Permit(permits::Refused::QueueFull(_)) => FailureCode::SemaphoreQueueFull,
            Self::Permit(permits::Refused::Timeout(_)) => FailureCode::SemaphoreTimeout,
        }
    }
}

impl Failure {
    /// The gateway refused the attempt on `conn` before any upstream call.
    pub fn local(conn: &LiveConnection, why: &Refusal) -> Self {
        let (message, retry_after) = match why {
            Refusal::Queue(q) => (q.message(), q.retry_after_secs()),
            Refusal::Permit(p) => (p.message(), 1),
        };
        let code = why.code();
        Self {
            connection_id: conn.id.clone(),
            status: Some(code.answer().0.as_u16()),
            retry_after: Some(retry_after),
            message,
            code: Some(code),
            timed_out: false,
        }
    }
}

/// A refused attempt: its log row (the status the client gets, the code
/// as the reason) and its failure; the engine hears nothing.
fn refused(state: &AppState, call: &Call<'_>, conn: &LiveConnection, why: &Refusal) -> Failure {
    let failure = Failure::local(conn, why);
    let row =
        AttemptRecord { wait_ms: call.caller.held.take(), ..log_row(call.caller, call.target, state.clock.now_ms()) };
    log_refusal(state, conn, &failure, row);
    failure
}

fn log_refusal(state: &AppState, conn: &LiveConnection, f: &Failure, row: AttemptRecord) {
    let code = f.code.map_or("", FailureCode::as_str);
    tracing::warn!(request_id = %row.request_id, connection_id = %conn.id, reason = code, "{}", f.message);
    state.store.logs.record(AttemptRecord {
        connection_id: Some(conn.id.clone()),
        status: f.status.map_or(0, i32::from),
        error_kind: Some(code.to_owned()),
        error_message: Some(f.message.clone()),
        ..row
    });
}
