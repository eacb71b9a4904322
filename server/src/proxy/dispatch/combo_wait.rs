//! Combo cooldown wait (SPEC §R4, `comboCooldownWait`): a combo request
//! about to fail because its targets are held back by *short, transient*
//! locks — every target skipped before an attempt, or the last attempt
//! answered 429 — waits for the lock that ends first (`max(remaining,
//! upstream hint) + 50 ms`) and is dispatched again, instead of failing a
//! request that would succeed a moment later. Only rate limits, overload
//! and server errors are waited for; a quota, auth or not-found exclusion
//! never is. Each wait must fit `maxWaitMs`, the request's waits
//! `maxAttempts` and `budgetMs`.

use app::types::settings::{ComboCooldownWaitSettings, ErrorReason};

use super::{error::Trail, gates::SkipReason, plan::Plan};
use crate::{resilience::engine::Exclusion, routing::registry::Snapshot, state::AppState};

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

    /// The wait before dispatching `plan` again after it ended in `trail`,
    /// if the combo would fail for transient locks and the settings allow it.
    pub fn after(&mut self, state: &AppState, snapshot: &Snapshot, plan: &Plan, trail: &Trail) -> Option<u64> {
        let settings = state.resilience.current();
        let s = &settings.combo_cooldown_wait;
        if !s.enabled {
            return None;
        }
        let last = trail.tried.last().and_then(|(_, failures)| failures.last());
        if !(trail.tried.is_empty() || last.and_then(|f| f.status) == Some(429)) {
            return None;
        }
        let hint_ms = last.and_then(|f| f.retry_after).map(|secs| secs.saturating_mul(1000));
        self.next(s, &lapses(state, snapshot, plan, trail), hint_ms)
    }
}

/// When a combo skipped every target before any attempt and some of its
/// connections are rate-limited for a short, transient reason (SPEC §R4):
/// the time until the first such lock ends, for the client's `429`.
pub fn rate_limited_ms(state: &AppState, snapshot: &Snapshot, plan: &Plan, trail: &Trail) -> Option<u64> {
    if !trail.tried.is_empty() {
        return None;
    }
    lapses(state, snapshot, plan, trail).iter().filter(|l| l.transient && l.connection).map(|l| l.remaining_ms).min()
}

/// What holds each target of `plan` back now: its connections' cooldowns
/// and model locks (looked up afresh: attempts just made may have cooled
/// them), and open breakers and provider cooldowns it was skipped for.
fn lapses(state: &AppState, snapshot: &Snapshot, plan: &Plan, trail: &Trail) -> Vec<Lapse> {
    let mut lapses = Vec::new();
    for planned in &plan.targets {
        let Some(target) = &planned.target else { continue };
        let conns = snapshot.candidates(target.provider.id).iter();
        for conn in conns.filter(|c| planned.pinned.as_deref().is_none_or(|p| p == c.id)) {
            let lapse = match state.engine.exclusion(target.provider.id, &conn.id, &target.model) {
                Some(Exclusion::Cooling { remaining_ms, reason, .. }) => {
                    Lapse { remaining_ms, transient: transient(reason), connection: true }
                }
                Some(Exclusion::ModelLocked { remaining_ms, reason }) => {
                    Lapse { remaining_ms, transient: transient(Some(reason)), connection: true }
                }
                Some(Exclusion::Terminal(_)) | None => continue,
            };
            lapses.push(lapse);
        }
    }
    let held = trail
        .skipped
        .iter()
        .filter(|s| matches!(s.skip.reason, SkipReason::CircuitOpen | SkipReason::ProviderCooldown));
    lapses.extend(
        held.filter_map(|s| Some(Lapse { remaining_ms: s.skip.retry_after_ms?, transient: true, connection: false })),
    );
    lapses
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
