//! When one attempt must have its answer: the earliest of its own
//! timeout, the request's execution limit (SPEC §R5) and the request's
//! shared deadline (`deadline`); and what its expiry makes of the attempt.

use std::time::Duration;
use tokio::time::Instant;

use super::{
    attempt::{AttemptGuard, execution_timeout, local_failure, transport_failure},
    call::{Failure, FailureCode},
    deadline::RequestDeadline,
};
use crate::upstream::executor::TransportError;

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
