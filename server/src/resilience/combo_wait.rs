//! Combo cooldown wait (SPEC §R4, `comboCooldownWait`): a combo request
//! about to fail because its targets are held back by *short, transient*
//! locks — every target skipped before an attempt, or the last attempt
//! answered 429 — waits for the lock that ends first (`max(remaining,
//! upstream hint) + 50 ms`) and is dispatched again, instead of failing a
//! request that would succeed a moment later. Only rate limits, overload
//! and server errors are waited for; a quota, auth or not-found exclusion
//! never is. Each wait must fit `maxWaitMs`, the request's waits
//! `maxAttempts` and `budgetMs`. This is the decision alone; what holds
//! the targets back is the routing view's answer (`routing::view`), and
//! the dispatch loop asks it (`proxy::dispatch::combo_wait`).

use app::types::settings::{ComboCooldownWaitSettings, ErrorReason};

/// Added to every wait, so the lock has surely ended when the request returns.
pub const WAIT_MARGIN_MS: u64 = 50;

/// Whether a lock for `reason` is the short, transient kind worth waiting for.
pub fn transient(reason: Option<ErrorReason>) -> bool {
    matches!(
        reason,
        Some(
            ErrorReason::RateLimited
                | ErrorReason::ConcurrencyLimited
                | ErrorReason::ServerError
                | ErrorReason::Timeout
        )
    )
}

/// One lock holding a target back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lapse {
    pub remaining_ms: u64,
    pub transient: bool,
    /// A lock on a connection (a cooldown or a model lock), not a
    /// provider's breaker or window gate.
    pub connection: bool,
}

/// The waits one combo request has done so far.
#[derive(Default)]
pub struct ComboWaits {
    attempts: u64,
    waited_ms: u64,
}

impl ComboWaits {
    /// The wait for the soonest transient lapse, if the settings allow it.
    pub fn next(&mut self, s: &ComboCooldownWaitSettings, lapses: &[Lapse], hint_ms: Option<u64>) -> Option<u64> {
        if !s.enabled || s.max_wait_ms == 0 || s.max_attempts == 0 {
            return None;
        }
        let soonest = lapses.iter().filter(|l| l.transient && l.remaining_ms > 0).map(|l| l.remaining_ms).min()?;
        let wait = soonest.max(hint_ms.unwrap_or(0)) + WAIT_MARGIN_MS;
        let budget_left = s.budget_ms.saturating_sub(self.waited_ms);
        let fits = wait <= s.max_wait_ms && self.attempts < s.max_attempts && budget_left >= wait;
        fits.then(|| {
            self.attempts += 1;
            self.waited_ms += wait;
            wait
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max_wait_ms: u64, max_attempts: u64, budget_ms: u64) -> ComboCooldownWaitSettings {
        ComboCooldownWaitSettings { enabled: true, max_wait_ms, max_attempts, budget_ms }
    }

    fn rate_limited(ms: u64) -> Lapse {
        Lapse { remaining_ms: ms, transient: true, connection: true }
    }

    #[test]
    fn waits_for_the_soonest_transient_lock_plus_the_margin() {
        let s = settings(90_000, 5, 300_000);
        let lapses =
            [rate_limited(5_000), rate_limited(2_000), Lapse { remaining_ms: 100, transient: false, connection: true }];
        assert_eq!(ComboWaits::default().next(&s, &lapses, None), Some(2_050), "a quota lock is never waited for");
        assert_eq!(ComboWaits::default().next(&s, &lapses, Some(3_000)), Some(3_050), "the upstream hint when longer");
        assert_eq!(
            ComboWaits::default().next(&s, &[Lapse { remaining_ms: 100, transient: false, connection: true }], None),
            None
        );
        assert_eq!(ComboWaits::default().next(&s, &[], None), None);
    }

    #[test]
    fn each_wait_must_fit_the_max_the_attempts_and_the_budget() {
        let s = settings(5_000, 2, 8_000);
        assert_eq!(ComboWaits::default().next(&s, &[rate_limited(4_950)], None), Some(5_000), "exactly the max");
        assert_eq!(ComboWaits::default().next(&s, &[rate_limited(4_951)], None), None, "past the max");
        let mut waits = ComboWaits::default();
        assert_eq!(waits.next(&s, &[rate_limited(2_950)], None), Some(3_000));
        assert_eq!(waits.next(&s, &[rate_limited(2_950)], None), Some(3_000), "budget 5000 left");
        assert_eq!(waits.next(&s, &[rate_limited(1)], None), None, "two attempts used");
        let mut waits = ComboWaits::default();
        waits.next(&s, &[rate_limited(4_950)], None);
        assert_eq!(waits.next(&s, &[rate_limited(2_950)], None), Some(3_000), "3000 of the budget left: fits");
        let s = settings(6_000, 5, 8_000);
        let mut waits = ComboWaits::default();
        assert_eq!(waits.next(&s, &[rate_limited(4_951)], None), Some(5_001));
        assert_eq!(waits.next(&s, &[rate_limited(2_950)], None), None, "2999 of the budget left: does not fit");
    }

    #[test]
    fn off_means_never() {
        let mut s = settings(90_000, 5, 300_000);
        s.enabled = false;
        assert_eq!(ComboWaits::default().next(&s, &[rate_limited(10)], None), None);
        for (w, a) in [(0, 5), (90_000, 0)] {
            assert_eq!(ComboWaits::default().next(&settings(w, a, 300_000), &[rate_limited(10)], None), None);
        }
    }

    #[test]
    fn only_rate_limits_overload_and_server_errors_are_transient() {
        assert!(transient(Some(ErrorReason::RateLimited)) && transient(Some(ErrorReason::ServerError)));
        for r in [ErrorReason::QuotaExhausted, ErrorReason::AuthError, ErrorReason::NotFound, ErrorReason::Forbidden] {
            assert!(!transient(Some(r)), "{r:?}");
        }
        assert!(!transient(None));
    }
}
