//! Waiting in the request queue (SPEC §R5), the async edge of
//! [`crate::resilience::request_queue`]. A protected connection's requests
//! start at its queue's pace; one that cannot start within `maxWaitMs`
//! fails with `RATE_LIMIT_QUEUE_TIMEOUT` (503), one that finds
//! `maxQueueDepth` already waiting with `RATE_LIMIT_QUEUE_FULL` (429), one
//! in a line that stopped moving with `RATE_LIMIT_QUEUE_WEDGED` (503).
//! Like the concurrency refusals these are the gateway's own: the engine
//! never hears of them.
//!
//! Which connections are protected: `rate_limit_protection` `true` forces
//! it on and `false` off; unset follows `autoEnableApiKeyProviders` for
//! API-key connections.

use std::{sync::Arc, time::Duration};
use tokio::time::Instant;

use http::HeaderMap;

use crate::{
    resilience::{
        request_queue::{Admission, Queue, QueueSlot, Rates, Start, WEDGE_GRACE, admit, protected},
        retry_hints,
    },
    routing::registry::LiveConnection,
    state::AppState,
};

/// A protected connection's queue with the waits that apply to it.
pub struct Entry {
    pub queue: Arc<Queue>,
    pub max_wait: Duration,
    /// `executionMaxWaitMs`, raised to the fetch timeout when that is longer.
    pub execution: Duration,
    max_depth: u64,
}

/// The queue `conn` takes for the upstream `model`, if it is protected.
pub fn entry(state: &AppState, conn: &LiveConnection, model: &str) -> Option<Entry> {
    let settings = state.resilience.current();
    if !protected(&settings.request_queue, conn.limits.protection, conn.limits.api_key_auth) {
        return None;
    }
    let s = settings.request_queue.for_connection(&conn.limits.overrides);
    let scope = conn.provider.has_per_model_quota.then_some(model);
    let instances = state.store.live_instances.load(std::sync::atomic::Ordering::Relaxed);
    let rates = Rates::of(&s).shared_by(instances);
    let queue = state.admission.queues.queue(conn.provider.id, &conn.id, scope, rates);
    Some(Entry {
        queue,
        max_wait: Duration::from_millis(s.max_wait_ms),
        execution: Duration::from_millis(s.execution_max_wait_ms).max(state.config.fetch_timeout),
        max_depth: s.max_queue_depth,
    })
}

/// Why a request did not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueRefused {
    /// `RATE_LIMIT_QUEUE_FULL`: `maxQueueDepth` already waited.
    Full { id: String, queued: u64, max: u64 },
    /// `RATE_LIMIT_QUEUE_TIMEOUT`: not started within `maxWaitMs`;
    /// `retry_after_secs` when the queue knows when it opens.
    Timeout { id: String, max_wait_ms: u128, retry_after_secs: Option<u64> },
    /// `RATE_LIMIT_QUEUE_WEDGED`: the line stopped moving.
    Wedged { id: String, still_secs: u64 },
}

impl QueueRefused {
    pub fn message(&self) -> String {
        match self {
            Self::Full { id, queued, max } => format!(
                "Request rejected: the local rate-limit queue for {id} already holds {queued} queued request(s), \
                 at or above the configured admission cap maxQueueDepth ({max}); retry shortly or raise maxQueueDepth"
            ),
            Self::Timeout { id, max_wait_ms, .. } => format!(
                "Request did not start within maxWaitMs ({max_wait_ms}ms) in the local rate-limit queue for {id}"
            ),
            Self::Wedged { id, still_secs } => format!(
                "The local rate-limit queue for {id} made no progress for {still_secs}s while requests waited; \
                 they were failed so that clients can retry"
            ),
        }
    }

    pub fn retry_after_secs(&self) -> u64 {
        match self {
            Self::Timeout { retry_after_secs: Some(s), .. } => (*s).max(1),
            _ => 1,
        }
    }
}

/// The execution limit ran out: `RATE_LIMIT_EXECUTION_TIMEOUT`.
pub fn execution_message(queue: &Queue, execution: Duration) -> String {
    format!(
        "Request exceeded executionMaxWaitMs ({}ms) of the local rate-limit queue for {}",
        execution.as_millis(),
        queue.id
    )
}

/// Follows the upstream's `x-ratelimit-remaining-requests` /
/// `x-ratelimit-reset-requests` on a request the queue started.
pub fn follow(executing: Option<&Executing>, headers: &HeaderMap) {
    let Some(e) = executing else { return };
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let Some(remaining) = text("x-ratelimit-remaining-requests").and_then(|v| v.parse::<u64>().ok()) else {
        return;
    };
    let reset = text("x-ratelimit-reset-requests").and_then(retry_hints::duration_ms).map(Duration::from_millis);
    e.slot.queue().limiter.lock().adapt(Instant::now(), remaining, reset);
}

/// A 429 whose body says when to come back (SPEC §R5): a wait that fits in
/// `maxWaitMs` paces the queue — it starts nothing until then. A longer
/// typed Google `RetryInfo` on a model-scoped queue locks that model on
/// the connection instead (capped at 24 h) and leaves the queue running
/// for the connection's other models (the alias the client sent, if it
/// sent one, is locked too); any other longer wait pauses too.
pub fn pace(
    state: &AppState,
    executing: Option<&Executing>,
    conn: &LiveConnection,
    alias: Option<&str>,
    status: u16,
    body: &str,
) {
    let Some(e) = executing.filter(|_| status == 429) else { return };
    let Some(wait_ms) = retry_hints::from_body(body, state.engine.now()) else { return };
    let queue = e.slot.queue();
    let wait = Duration::from_millis(wait_ms);
    if wait > e.max_wait
        && let (Some(model), Some(typed)) = (&queue.model, retry_hints::google_retry_info(body))
    {
        tracing::warn!(queue = %queue.id, wait_ms = typed, "the upstream asks for a longer wait than the queue allows; the model is locked instead");
        state.engine.lock_model(conn.provider.id, &conn.id, model, status, typed);
        // The name the client asked for is locked exactly too.
        if let Some(alias) = alias {
            state.engine.lock_model(conn.provider.id, &conn.id, alias, status, typed);
        }
        return;
    }
    tracing::info!(queue = %queue.id, wait_ms, "the upstream asks to wait; the queue pauses");
    queue.limiter.lock().pause(Instant::now(), wait);
}

/// A request the queue started: its place among the executing until its
/// answer is had, and how long that may take.
pub struct Executing {
    pub slot: QueueSlot,
    pub deadline: Instant,
    pub limit: Duration,
    /// `maxWaitMs`: a body-stated wait up to this paces the queue.
    pub max_wait: Duration,
}

impl Executing {
    pub fn new(slot: QueueSlot, entry: &Entry) -> Self {
        Self { slot, deadline: Instant::now() + entry.execution, limit: entry.execution, max_wait: entry.max_wait }
    }
}

impl Entry {
    fn full(&self, queued: u64) -> QueueRefused {
        QueueRefused::Full { id: self.queue.id.clone(), queued, max: self.max_depth }
    }

    /// Whether the queue would take one more waiting request.
    pub fn admits(&self) -> Result<(), QueueRefused> {
        let queued = self.queue.limiter.lock().queued();
        match admit(queued, self.max_depth) {
            Admission::Admit => Ok(()),
            Admission::Reject => Err(self.full(queued)),
        }
    }

    /// Starts now when nobody waits and the pace allows; `Ok(None)` when
    /// the request would have to wait.
    pub fn try_start(&self) -> Result<Option<QueueSlot>, QueueRefused> {
        self.admits()?;
        let started = self.queue.limiter.lock().try_start(Instant::now());
        Ok(started.then(|| QueueSlot::started(self.queue.clone())))
    }

    /// Waits in line until the request may start (at most `maxWaitMs`).
    pub async fn wait(&self) -> Result<QueueSlot, QueueRefused> {
        let deadline = Instant::now() + self.max_wait;
        let (ticket, wake) = {
            let mut l = self.queue.limiter.lock();
            match admit(l.queued(), self.max_depth) {
                Admission::Reject => return Err(self.full(l.queued())),
                Admission::Admit => l.join(),
            }
        };
        let _place = Place { queue: &self.queue, ticket };
        loop {
            let now = Instant::now();
            let (start, wedge_at) = {
                let mut l = self.queue.limiter.lock();
                match l.start_head(ticket, now) {
                    // `_place` leaves nothing: the start took the ticket.
                    Ok(()) => return Ok(QueueSlot::started(self.queue.clone())),
                    Err(_) if l.wedged(now, self.execution) => {
                        let still_secs = (self.execution + WEDGE_GRACE).as_secs();
                        return Err(QueueRefused::Wedged { id: self.queue.id.clone(), still_secs });
                    }
                    Err(start) => (start, l.wedge_at(self.execution)),
                }
            };
            let opens = match start {
                Start::At(at) if at > deadline => {
                    // The queue opens only after this request's budget ends.
                    return Err(self.timeout(Some(at - now)));
                }
                Start::At(at) => Some(at),
                _ => None,
            };
            if now >= deadline {
                return Err(self.timeout(None));
            }
            let until = opens.unwrap_or(deadline).min(deadline).min(wedge_at.max(now));
            tokio::select! {
                () = wake.notified() => {}
                () = tokio::time::sleep_until(until) => {}
            }
        }
    }

    fn timeout(&self, opens_in: Option<Duration>) -> QueueRefused {
        QueueRefused::Timeout {
            id: self.queue.id.clone(),
            max_wait_ms: self.max_wait.as_millis(),
            retry_after_secs: opens_in.map(|d| d.as_millis().div_ceil(1000) as u64),
        }
    }
}

/// A place in line, left on drop (refused, timed out, client gone).
struct Place<'a> {
    queue: &'a Queue,
    ticket: u64,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.queue.limiter.lock().leave(self.ticket);
    }
}

#[cfg(test)]
mod tests;
