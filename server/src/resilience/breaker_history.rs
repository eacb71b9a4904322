//! What a provider's breaker did lately, for the band under Health's
//! traffic chart: the state changes the engine saw, in memory (the band
//! starts when the gateway did; a breaker restored from storage enters
//! the history in its restored state). Changes are rare, so the history
//! costs nothing on the request path: it is written only where the
//! breaker's lock is already held for a change.

use app::types::traffic::BreakerSpan;
use std::collections::VecDeque;

use super::breaker::BreakerState;

/// Changes kept per provider, and for how long.
const MAX_CHANGES: usize = 512;
const KEEP_MS: i64 = 25 * 3_600_000;

#[derive(Default)]
pub struct BreakerHistory {
    /// `(at, state entered)`, oldest first.
    changes: VecDeque<(i64, BreakerState)>,
}

impl BreakerHistory {
    /// Notes the state the breaker is in at `at`, if it changed.
    pub fn note(&mut self, at: i64, state: BreakerState) {
        let last = self.changes.back().map_or(BreakerState::Closed, |(_, s)| *s);
        if last == state {
            return;
        }
        self.changes.push_back((at, state));
        while self.changes.len() > MAX_CHANGES || self.changes.front().is_some_and(|(t, _)| *t < at - KEEP_MS) {
            self.changes.pop_front();
        }
    }

    /// The spans covering `from..to`; before `started` (the gateway's
    /// start) the state is `unknown`.
    pub fn spans(&self, from: i64, to: i64, started: i64) -> Vec<BreakerSpan> {
        let mut spans = Vec::new();
        if started > from {
            spans.push(BreakerSpan { from_ms: from, to_ms: started.min(to), state: "unknown".into() });
        }
        let begin = from.max(started);
        if begin >= to {
            return spans;
        }
        let mut state = self.changes.iter().rev().find(|(t, _)| *t <= begin).map_or(BreakerState::Closed, |(_, s)| *s);
        let mut at = begin;
        for &(t, next) in self.changes.iter().filter(|(t, _)| *t > begin && *t < to) {
            spans.push(BreakerSpan { from_ms: at, to_ms: t, state: state.as_str().into() });
            (at, state) = (t, next);
        }
        spans.push(BreakerSpan { from_ms: at, to_ms: to, state: state.as_str().into() });
        spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(spans: &[BreakerSpan]) -> Vec<(i64, i64, &str)> {
        spans.iter().map(|s| (s.from_ms, s.to_ms, s.state.as_str())).collect()
    }

    #[test]
    fn spans_follow_the_changes_and_say_unknown_before_the_start() {
        let mut h = BreakerHistory::default();
        h.note(100, BreakerState::Open);
        h.note(150, BreakerState::Open);
        h.note(200, BreakerState::HalfOpen);
        h.note(250, BreakerState::Closed);
        assert_eq!(
            states(&h.spans(0, 300, 50)),
            [
                (0, 50, "unknown"),
                (50, 100, "CLOSED"),
                (100, 200, "OPEN"),
                (200, 250, "HALF_OPEN"),
                (250, 300, "CLOSED")
            ]
        );
        // A window that starts while open begins open.
        assert_eq!(states(&h.spans(120, 220, 0)), [(120, 200, "OPEN"), (200, 220, "HALF_OPEN")]);
    }

    #[test]
    fn old_changes_are_forgotten() {
        let mut h = BreakerHistory::default();
        h.note(0, BreakerState::Open);
        h.note(KEEP_MS + 1, BreakerState::Closed);
        assert_eq!(h.changes.len(), 1);
    }
}
