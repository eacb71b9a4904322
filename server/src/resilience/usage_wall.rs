//! The Claude subscription usage wall (SPEC §R2.1): what a connection that
//! opted in (`lowPriorityMode`, `autoLimitReset`) does when its 5-hour
//! window is used up, instead of cooling for hours.
//!
//! The wall is a 429 whose headers say `anthropic-ratelimit-unified-status:
//! rejected`; a 429 without them is an ordinary rate limit. At the wall the
//! account may offer a low-priority lane (`…-slow-offer: treatment`):
//! requests that carry `anthropic-usage-limit: slow` are still served,
//! more slowly, until the window renews. This module keeps, per
//! connection and in memory only, whether it is in that lane and until
//! when, what ended it (a re-entry pause, an exhausted slow budget), and
//! when a free limit reset may be claimed again. The calls themselves are
//! made by the dispatch (`proxy::dispatch::usage_wall`).

use dashmap::DashMap;
use http::HeaderMap;
use rand::Rng;

/// The request header that asks for the low-priority lane.
pub const SLOW_HEADER: &str = "anthropic-usage-limit";

const UNIFIED_STATUS: &str = "anthropic-ratelimit-unified-status";
const UNIFIED_RESET: &str = "anthropic-ratelimit-unified-reset";
const SLOW_OFFER: &str = "anthropic-ratelimit-unified-slow-offer";
const SLOW_STATUS: &str = "anthropic-ratelimit-unified-slow-status";
const SLOW_RETRY_AFTER: &str = "anthropic-ratelimit-unified-slow-retry-after";
const SLOW_MAX_WAIT: &str = "anthropic-ratelimit-unified-slow-max-wait";
const SLOW_BUDGET_RESET: &str = "anthropic-ratelimit-unified-slow-budget-reset";
const OVERAGE_IN_USE: &str = "anthropic-ratelimit-unified-overage-in-use";

/// The lane lasts this long past the announced window reset.
const LANE_GRACE_MS: i64 = 60_000;
/// After the lane gave up waiting, it is not entered again for this long.
const REENTRY_PAUSE_MS: i64 = 10 * 60_000;
/// `slot_busy` waits: the default, the bounds, and the jitter (±30 %).
const RETRY_AFTER_S: (u64, u64, u64) = (20, 5, 600);
const JITTER: f64 = 0.3;
/// The most a request waits in the lane: the default and the bounds.
const MAX_WAIT_S: (u64, u64, u64) = (20 * 60, 60, 6 * 3600);
/// An exhausted slow budget is remembered until its reset, at most this long.
const BUDGET_MEMORY_MS: i64 = 8 * 86_400_000;
/// A reset said to be used or not offered is tried again after this, when
/// the answer names no time.
pub const RESET_UNAVAILABLE_MS: i64 = 7 * 86_400_000;
/// After a failed reset claim, none is tried for this long.
pub const RESET_BACKOFF_MS: i64 = 15 * 60_000;

/// What a connection opted into (`providerSpecificData` of a `claude`
/// subscription; both off by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptIns {
    pub low_priority: bool,
    pub limit_reset: bool,
}

impl OptIns {
    pub fn any(self) -> bool {
        self.low_priority || self.limit_reset
    }
}

/// Whether an answer is the usage wall.
pub fn is_wall(status: u16, headers: &HeaderMap) -> bool {
    status == 429 && header(headers, UNIFIED_STATUS) == Some("rejected")
}

/// What to do with an answer to a request sent in the lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneStep {
    /// The answer stands; the lane goes on.
    Keep,
    /// The lane is over (`extra_usage`, the weekly limit, …): the answer
    /// takes the normal path, and later requests go at full speed.
    End,
    /// The slow slot is busy: wait `wait_ms` and send again, as long as
    /// the request has waited less than `max_wait_ms` in all.
    Wait { wait_ms: u64, max_wait_ms: u64 },
}

#[derive(Clone, Copy, Debug, Default)]
struct Wall {
    /// In the lane until then (epoch ms); 0: not in it.
    lane_until: i64,
    /// The 5-hour window reset the lane was entered for (epoch ms).
    window_reset: i64,
    /// The lane is not entered before then.
    reentry_after: i64,
    /// The slow budget is exhausted until then.
    budget_until: i64,
    /// No limit reset is claimed before then.
    reset_after: i64,
}

/// Every connection's wall state, in memory (a restart costs one more
/// wall 429 to enter the lane again).
#[derive(Default)]
pub struct UsageWall {
    walls: DashMap<String, Wall>,
}

impl UsageWall {
    /// Whether requests on `connection` go in the low-priority lane now.
    pub fn in_lane(&self, connection: &str, now: i64) -> bool {
        self.walls.get(connection).is_some_and(|w| now < w.lane_until)
    }

    /// Until when `connection` is in the lane, if it is.
    pub fn lane_until(&self, connection: &str, now: i64) -> Option<i64> {
        self.walls.get(connection).map(|w| w.lane_until).filter(|&until| now < until)
    }

    /// At the wall: enters the lane when the account offers it, announces
    /// a window reset still to come, and neither a re-entry pause nor an
    /// exhausted budget holds. Whether it did.
    pub fn enter_lane(&self, connection: &str, headers: &HeaderMap, now: i64) -> bool {
        let Some(reset) = epoch_ms(headers, UNIFIED_RESET).filter(|&r| r > now) else { return false };
        if header(headers, SLOW_OFFER) != Some("treatment") {
            return false;
        }
        let mut wall = self.walls.entry(connection.to_owned()).or_default();
        if now < wall.reentry_after || now < wall.budget_until {
            return false;
        }
        wall.lane_until = reset + LANE_GRACE_MS;
        wall.window_reset = reset;
        true
    }

    /// An answer to a request sent in the lane: the lane goes on, ends, or
    /// the request waits for the slow slot.
    pub fn on_lane_answer(&self, connection: &str, status: u16, headers: &HeaderMap, now: i64) -> LaneStep {
        let slow = header(headers, SLOW_STATUS);
        let rolled_over = epoch_ms(headers, UNIFIED_RESET).is_some_and(|reset| {
            self.walls.get(connection).is_some_and(|w| w.window_reset > 0 && reset > w.window_reset)
        });
        let overage = header(headers, OVERAGE_IN_USE) == Some("true");
        if overage || rolled_over || matches!(slow, Some("weekly_limit" | "budget_exhausted" | "off" | "ineligible")) {
            let budget = (slow == Some("budget_exhausted"))
                .then(|| epoch_ms(headers, SLOW_BUDGET_RESET).unwrap_or(now).min(now + BUDGET_MEMORY_MS));
            self.end_lane(connection, 0, budget);
            return LaneStep::End;
        }
        if (status == 429 && slow == Some("slot_busy")) || status == 529 {
            let wait_s = seconds(headers, SLOW_RETRY_AFTER, RETRY_AFTER_S) as f64;
            let jitter = rand::thread_rng().gen_range(1.0 - JITTER..=1.0 + JITTER);
            let max_wait_ms = seconds(headers, SLOW_MAX_WAIT, MAX_WAIT_S) * 1000;
            return LaneStep::Wait { wait_ms: (wait_s * jitter * 1000.0) as u64, max_wait_ms };
        }
        LaneStep::Keep
    }

    /// The request could wait no longer for the slow slot: the lane ends
    /// and is not entered again for ten minutes.
    pub fn give_up(&self, connection: &str, now: i64) {
        self.end_lane(connection, now + REENTRY_PAUSE_MS, None);
    }

    fn end_lane(&self, connection: &str, reentry_after: i64, budget_until: Option<i64>) {
        let mut wall = self.walls.entry(connection.to_owned()).or_default();
        wall.lane_until = 0;
        wall.reentry_after = wall.reentry_after.max(reentry_after);
        if let Some(until) = budget_until {
            wall.budget_until = until;
        }
    }

    /// Whether a limit reset may be claimed for `connection` now.
    pub fn may_claim_reset(&self, connection: &str, now: i64) -> bool {
        self.walls.get(connection).is_none_or(|w| now >= w.reset_after)
    }

    /// No limit reset is claimed for `connection` before `at` (epoch ms).
    pub fn no_reset_before(&self, connection: &str, at: i64) {
        self.walls.entry(connection.to_owned()).or_default().reset_after = at;
    }

    /// Forgets `connection` (its credentials changed, or it was deleted).
    pub fn forget(&self, connection: &str) {
        self.walls.remove(connection);
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

/// A header holding epoch seconds, as epoch ms.
fn epoch_ms(headers: &HeaderMap, name: &str) -> Option<i64> {
    header(headers, name)?.parse::<i64>().ok()?.checked_mul(1000)
}

/// A header holding seconds, its default when missing or unreadable,
/// clamped to its bounds.
fn seconds(headers: &HeaderMap, name: &str, (default, min, max): (u64, u64, u64)) -> u64 {
    header(headers, name).and_then(|v| v.parse::<f64>().ok()).map_or(default, |s| s.max(0.0) as u64).clamp(min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap())).collect()
    }

    fn wall_429(reset_s: i64) -> HeaderMap {
        let reset = reset_s.to_string();
        headers(&[(UNIFIED_STATUS, "rejected"), (SLOW_OFFER, "treatment"), (UNIFIED_RESET, &reset)])
    }

    #[test]
    fn the_wall_is_a_429_with_the_unified_rejection() {
        assert!(is_wall(429, &wall_429(NOW / 1000 + 60)));
        assert!(!is_wall(429, &HeaderMap::new()), "a plain rate limit");
        assert!(!is_wall(200, &wall_429(NOW / 1000 + 60)));
    }

    #[test]
    fn the_lane_lasts_to_the_announced_reset_and_a_minute_more() {
        let w = UsageWall::default();
        let reset_s = NOW / 1000 + 3600;
        assert!(w.enter_lane("c", &wall_429(reset_s), NOW));
        assert!(w.in_lane("c", NOW + 3_600_000 + 59_000) && !w.in_lane("c", NOW + 3_600_000 + 60_000));
        assert!(!w.in_lane("other", NOW));
        let no_offer = headers(&[(UNIFIED_STATUS, "rejected"), (UNIFIED_RESET, &reset_s.to_string())]);
        assert!(!w.enter_lane("d", &no_offer, NOW), "no offer, no lane");
        assert!(!w.enter_lane("d", &wall_429(NOW / 1000 - 1), NOW), "a reset in the past offers nothing");
    }

    #[test]
    fn a_busy_slot_waits_within_bounds_and_giving_up_pauses_reentry() {
        let w = UsageWall::default();
        assert!(w.enter_lane("c", &wall_429(NOW / 1000 + 3600), NOW));
        let busy = headers(&[(SLOW_STATUS, "slot_busy"), (SLOW_RETRY_AFTER, "1"), (SLOW_MAX_WAIT, "99999")]);
        let LaneStep::Wait { wait_ms, max_wait_ms } = w.on_lane_answer("c", 429, &busy, NOW) else { panic!() };
        assert!((3_500..=6_500).contains(&wait_ms), "1 s is clamped to 5 s, ±30 %: {wait_ms}");
        assert_eq!(max_wait_ms, 6 * 3_600_000, "clamped to 6 h");
        let LaneStep::Wait { wait_ms, max_wait_ms } = w.on_lane_answer("c", 529, &HeaderMap::new(), NOW) else {
            panic!()
        };
        assert!((14_000..=26_000).contains(&wait_ms) && max_wait_ms == 1_200_000, "the defaults: {wait_ms}");
        assert_eq!(w.on_lane_answer("c", 200, &headers(&[(SLOW_STATUS, "active")]), NOW), LaneStep::Keep);
        w.give_up("c", NOW);
        assert!(!w.in_lane("c", NOW));
        assert!(!w.enter_lane("c", &wall_429(NOW / 1000 + 3600), NOW + 599_000), "ten minutes before re-entry");
        assert!(w.enter_lane("c", &wall_429(NOW / 1000 + 3600), NOW + 600_000));
    }

    #[test]
    fn the_weekly_limit_paid_overage_a_new_window_or_a_spent_budget_end_the_lane() {
        let w = UsageWall::default();
        let reset_s = NOW / 1000 + 3600;
        let enter = || assert!(w.enter_lane("c", &wall_429(reset_s), NOW));
        for end in [
            headers(&[(SLOW_STATUS, "weekly_limit")]),
            headers(&[(SLOW_STATUS, "off")]),
            headers(&[(SLOW_STATUS, "ineligible"), (OVERAGE_IN_USE, "true")]),
            headers(&[(SLOW_STATUS, "active"), (UNIFIED_RESET, &(reset_s + 18_000).to_string())]),
        ] {
            enter();
            assert_eq!(w.on_lane_answer("c", 200, &end, NOW), LaneStep::End, "{end:?}");
            assert!(!w.in_lane("c", NOW));
        }
        enter();
        let budget_reset = (NOW / 1000 + 86_400).to_string();
        let spent = headers(&[(SLOW_STATUS, "budget_exhausted"), (SLOW_BUDGET_RESET, &budget_reset)]);
        assert_eq!(w.on_lane_answer("c", 429, &spent, NOW), LaneStep::End);
        assert!(!w.enter_lane("c", &wall_429(reset_s), NOW + 86_399_000), "remembered until the budget resets");
        assert!(w.enter_lane("c", &wall_429(NOW / 1000 + 90_000), NOW + 86_400_000));
    }

    #[test]
    fn a_limit_reset_is_claimed_again_only_after_its_pause() {
        let w = UsageWall::default();
        assert!(w.may_claim_reset("c", NOW));
        w.no_reset_before("c", NOW + RESET_BACKOFF_MS);
        assert!(!w.may_claim_reset("c", NOW + RESET_BACKOFF_MS - 1) && w.may_claim_reset("c", NOW + RESET_BACKOFF_MS));
        w.forget("c");
        assert!(w.may_claim_reset("c", NOW));
    }
}
