//! Wait-for-cooldown (SPEC §R2): when no connection of a single-model
//! request could even be tried because they are all cooling (or
//! model-locked), the request waits for the earliest one and tries again —
//! within the attempt, per-wait and total budgets. This is the decision;
//! the dispatch loop waits, and logs a client that went away meanwhile
//! (`proxy::cooldown_wait`).

use app::types::settings::WaitForCooldownSettings;

use super::engine::Exclusion;

/// The waits one request has done so far.
#[derive(Default)]
pub struct CooldownWaits {
    done: u64,
    waited_ms: u64,
}

impl CooldownWaits {
    /// How long to wait before the next try, if at all.
    pub fn next(&mut self, s: &WaitForCooldownSettings, excluded: &[Exclusion]) -> Option<u64> {
        let earliest = excluded.iter().filter_map(Exclusion::remaining_ms).min()?;
        let fits = s.is_active()
            && self.done < s.max_retries
            && earliest <= s.max_retry_wait_sec * 1000
            && self.waited_ms + earliest <= s.budget_ms;
        fits.then(|| {
            self.done += 1;
            self.waited_ms += earliest;
            earliest
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resilience::connection_health::TerminalStatus;

    #[test]
    fn cooldown_waits_respect_every_limit() {
        let s = WaitForCooldownSettings { enabled: true, max_retries: 2, max_retry_wait_sec: 10, budget_ms: 15_000 };
        let cooling =
            |ms| vec![Exclusion::Cooling { remaining_ms: ms, error_code: Some(429), last_error: None, reason: None }];
        let mut w = CooldownWaits::default();
        assert_eq!(w.next(&s, &cooling(8_000)), Some(8_000));
        assert_eq!(w.next(&s, &cooling(8_000)), None, "over the total budget");
        assert_eq!(w.next(&s, &cooling(7_000)), Some(7_000));
        assert_eq!(w.next(&s, &cooling(1)), None, "no attempts left");
        let mut w = CooldownWaits::default();
        assert_eq!(w.next(&s, &cooling(10_001)), None, "longer than one wait");
        assert_eq!(w.next(&s, &[Exclusion::Terminal(TerminalStatus::Banned)]), None, "nothing to wait for");
        let off = WaitForCooldownSettings { enabled: false, ..s };
        assert_eq!(CooldownWaits::default().next(&off, &cooling(1)), None);
    }
}
