//! One time budget per request. Every attempt has its own timeout (the
//! readiness budget for a stream, `FETCH_TIMEOUT_MS` for the rest, a
//! combo's `targetTimeoutMs`), and without more a request whose
//! connections stall in turn would pay that timeout once per connection.
//! So the attempts of one request share a deadline,
//! `OMNIROUTE_REQUEST_DEADLINE_MS` from the start of its first attempt:
//!
//! * an attempt gets the smaller of its own timeout and what is left;
//! * no attempt starts once it has passed (`504 REQUEST_DEADLINE_EXCEEDED`);
//! * an attempt the deadline cut short is the gateway's own failure: the
//!   engine never hears of it, since the connection did not get its
//!   full time.
//!
//! It counts from the first attempt, not the request's arrival, so the
//! first attempt always gets its whole timeout (on the defaults the
//! deadline equals `FETCH_TIMEOUT_MS`), and waits in a queue before it
//! are bounded by the queue's own limits. The other half of the rule —
//! a combo target whose attempt timed out passes the request to the next
//! target instead of trying its other connections — is in
//! `target::try_connections`.

use std::{sync::OnceLock, time::Duration};
use tokio::time::Instant;

use super::{
    attempt::{AttemptGuard, execution_timeout, local_failure, transport_failure},
    call::{Failure, FailureCode},
};
use crate::upstream::executor::TransportError;

/// The request's shared deadline.
pub struct RequestDeadline {
    budget: Duration,
    /// Set by the request's first attempt.
    ends: OnceLock<Instant>,
}

impl RequestDeadline {
    pub fn new(budget: Duration) -> Self {
        Self { budget, ends: OnceLock::new() }
    }

    /// When the request must have its answer, counted from its first
    /// attempt (`started`, when this is it).
    fn ends_for(&self, started: Instant) -> Instant {
        *self.ends.get_or_init(|| started + self.budget)
    }

    /// Whether no further attempt may start.
    pub fn passed(&self) -> bool {
        self.ends.get().is_some_and(|ends| Instant::now() >= *ends)
    }

    pub fn budget_ms(&self) -> u64 {
        u64::try_from(self.budget.as_millis()).unwrap_or(u64::MAX)
    }
}

/// What ends an attempt's wait for its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EndedBy {
    /// Its own timeout, of this length.
    Own(Duration),
    /// The request's execution limit (SPEC §R5).
    Execution,
    /// The request's shared deadline, of this many ms.
    Request(u64),
}

/// When an attempt must have its answer, and what sets that time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limit {
    pub at: Instant,
    pub by: EndedBy,
}

impl Limit {
    /// The earliest of the attempt's own timeout (`own`, counted from
    /// `from`), the request's execution limit and its shared deadline.
    pub fn of(guard: &AttemptGuard, deadline: &RequestDeadline, from: Instant, own: Duration) -> Self {
        let mut limit = Self { at: from + own, by: EndedBy::Own(own) };
        let request = deadline.ends_for(guard.started());
        if request < limit.at {
            limit = Self { at: request, by: EndedBy::Request(deadline.budget_ms()) };
        }
        match guard.executing() {
            Some(e) if e.deadline <= limit.at => Self { at: e.deadline, by: EndedBy::Execution },
            _ => limit,
        }
    }

    /// The attempt's failure when the limit passed: a timeout of the
    /// connection (`code`: how a last failure answers the client), or the
    /// gateway's own when one of the request's limits cut it short.
    pub fn expired(self, guard: &mut AttemptGuard, code: Option<FailureCode>) -> Failure {
        match self.by {
            EndedBy::Own(d) => transport_failure(guard, &TransportError::Timeout(d), code),
            EndedBy::Execution => execution_timeout(guard),
            EndedBy::Request(ms) => deadline_exceeded(guard, ms),
        }
    }
}

/// The attempt the request's deadline cut short: a row, no engine report.
fn deadline_exceeded(guard: &mut AttemptGuard, budget_ms: u64) -> Failure {
    let message = format!(
        "the request's time budget ({budget_ms}ms, OMNIROUTE_REQUEST_DEADLINE_MS) ran out before this attempt's answer"
    );
    local_failure(guard, FailureCode::RequestDeadline, message)
}
