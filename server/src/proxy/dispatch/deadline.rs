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
//! `target::try_connections`; what ends one attempt is `limit::Limit`.

use std::{sync::OnceLock, time::Duration};
use tokio::time::Instant;

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
    pub(super) fn ends_for(&self, started: Instant) -> Instant {
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
