//! What the gateway knows of an account's remaining upstream quota, read
//! by the per-account strategies (`reset-window`, `reset-aware`,
//! `headroom`, `quota-weighted`) through [`QuotaSource`], and shown as
//! `GET /api/quotas` and the Providers page's bars.
//!
//! Two kinds of windows feed it. The rate-limit headers of API-key
//! answers (`rate_limits`) describe the provider's short windows
//! (requests and tokens per minute or day), the last seen per connection
//! and model. A subscription's plan windows (`plan`: the 5-hour "session"
//! and the weekly allowance) come per connection from the headers of its
//! answers and from the provider's usage endpoint, which
//! `workers::quota_fetch` reads in the background. An account never seen
//! is honestly unknown (`None`); each strategy says what it does then.
//!
//! Reading the headers costs one pass over the answer's header names; the
//! maps are written only when such headers are present.

mod plan;
mod rate_limits;

pub use plan::{PlanReport, PlanWindow, Source, from_claude_usage, from_code_assist_quota, from_codex_usage};

use dashmap::DashMap;
use http::HeaderMap;

/// One rate-limit window as the upstream reported it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// `requests`, `tokens`, `input-tokens`, `output-tokens`.
    pub name: &'static str,
    /// Share used, 0–1.
    pub used: f64,
    /// When it resets (epoch ms), if said.
    pub reset_at_ms: Option<i64>,
}

/// An account's windows for one model, as last reported.
#[derive(Clone, Debug, PartialEq)]
pub struct Reported {
    pub windows: Vec<Window>,
    pub observed_at_ms: i64,
}

/// An account's quota as it stands at one instant: a window whose reset
/// has passed counts as fresh (nothing used, no reset known).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Quota {
    /// `(share used 0–1, ms until it resets)` per window.
    pub windows: Vec<(f64, Option<u64>)>,
    /// The plan's 5-hour window, on a subscription.
    pub session: Option<(f64, Option<u64>)>,
    /// The plan's weekly window, on a subscription.
    pub weekly: Option<(f64, Option<u64>)>,
    /// How old the report is.
    pub age_ms: u64,
}

impl Quota {
    /// The most used window's share (the one that binds).
    pub fn used(&self) -> f64 {
        self.windows.iter().map(|w| w.0).fold(0.0, f64::max)
    }

    /// When the binding (most used) window resets.
    pub fn binding_reset_in_ms(&self) -> Option<u64> {
        self.windows.iter().max_by(|a, b| a.0.total_cmp(&b.0)).and_then(|w| w.1)
    }

    /// The soonest reset of any window.
    pub fn soonest_reset_in_ms(&self) -> Option<u64> {
        self.windows.iter().filter_map(|w| w.1).min()
    }

    /// Some window is used up and has not reset yet.
    pub fn limit_reached(&self) -> bool {
        self.windows.iter().any(|w| w.0 >= 1.0)
    }

    /// The plan's windows are known (a subscription account).
    pub fn has_plan(&self) -> bool {
        self.session.is_some() || self.weekly.is_some()
    }
}

/// `(used, reset_at_ms)` at `now_ms`: `(share used, ms until reset)`, fresh
/// once the reset has passed.
fn at(used: f64, reset_at_ms: Option<i64>, now_ms: i64) -> (f64, Option<u64>) {
    match reset_at_ms {
        Some(at) if at <= now_ms => (0.0, None),
        at => (used, at.map(|at| u64::try_from(at - now_ms).unwrap_or(0))),
    }
}

impl Reported {
    pub fn at(&self, now_ms: i64) -> Quota {
        let windows = self.windows.iter().map(|w| at(w.used, w.reset_at_ms, now_ms)).collect();
        Quota { windows, age_ms: u64::try_from(now_ms - self.observed_at_ms).unwrap_or(0), ..Quota::default() }
    }
}

impl PlanReport {
    /// The plan windows at `now_ms`, joined to `rate_limits` (the model's
    /// short windows, if any were reported).
    fn joined(&self, rate_limits: Option<Quota>, now_ms: i64) -> Quota {
        let mut q = rate_limits.unwrap_or_default();
        let age = u64::try_from(now_ms - self.fetched_at_ms).unwrap_or(0);
        q.age_ms = if q.windows.is_empty() { age } else { q.age_ms.min(age) };
        for w in &self.windows {
            let now = at(w.used, w.reset_at_ms, now_ms);
            q.windows.push(now);
            match w.window.as_str() {
                "5h" => q.session = Some(now),
                "7d" => q.weekly = Some(now),
                _ => {}
            }
        }
        q
    }
}

/// Where the strategies read an account's quota from.
pub trait QuotaSource: Send + Sync {
    /// `connection`'s quota for `model` at `now_ms`; `None` when unknown.
    fn quota(&self, connection: &str, model: &str, now_ms: i64) -> Option<Quota>;
}

/// The quotas the upstreams reported: rate-limit windows per connection
/// and model, plan windows per connection.
#[derive(Default)]
pub struct Quotas {
    reported: DashMap<(String, String), Reported>,
    plans: DashMap<String, PlanReport>,
    /// Connections whose plan report changed since it was last stored.
    unstored: DashMap<String, ()>,
    /// When each account's usage endpoint was last read, and why that
    /// read failed, if it did.
    reads: DashMap<String, (i64, Option<String>)>,
}

impl QuotaSource for Quotas {
    fn quota(&self, connection: &str, model: &str, now_ms: i64) -> Option<Quota> {
        let rate_limits = self.reported.get(&(connection.to_owned(), model.to_owned())).map(|r| r.at(now_ms));
        match self.plans.get(connection) {
            Some(plan) => Some(plan.joined(rate_limits, now_ms)),
            None => rate_limits,
        }
    }
}

impl Quotas {
    /// Remembers what an answer's headers say of `connection`'s quota for
    /// `model` and of its plan; an answer without such headers changes
    /// nothing.
    pub fn observe(&self, connection: &str, model: &str, headers: &HeaderMap, now_ms: i64) {
        let windows = rate_limits::windows(headers, now_ms);
        if !windows.is_empty() {
            let reported = Reported { windows, observed_at_ms: now_ms };
            self.reported.insert((connection.to_owned(), model.to_owned()), reported);
        }
        if let Some(mut report) = plan::from_headers(headers, now_ms) {
            // Headers name the plan only on Codex: keep what the usage endpoint said.
            if report.plan.is_none() {
                report.plan = self.plans.get(connection).and_then(|p| p.plan.clone());
            }
            self.set_plan(connection, report);
        }
    }

    /// Records what the provider said of `connection`'s plan (its usage
    /// endpoint, or an answer's headers).
    pub fn set_plan(&self, connection: &str, report: PlanReport) {
        self.plans.insert(connection.to_owned(), report);
        self.unstored.insert(connection.to_owned(), ());
    }

    /// Takes a plan report stored before a restart.
    pub fn restore_plan(&self, connection: &str, report: PlanReport) {
        self.plans.insert(connection.to_owned(), report);
    }

    /// The plan reports changed since the last call, to store.
    pub fn take_unstored(&self) -> Vec<(String, PlanReport)> {
        let ids: Vec<String> = self.unstored.iter().map(|e| e.key().clone()).collect();
        ids.into_iter()
            .filter_map(|id| {
                self.unstored.remove(&id);
                let report = self.plan(&id)?;
                Some((id, report))
            })
            .collect()
    }

    /// What is known of `connection`'s plan.
    pub fn plan(&self, connection: &str) -> Option<PlanReport> {
        self.plans.get(connection).map(|p| p.clone())
    }

    /// Notes a read of `connection`'s usage endpoint at `at_ms`.
    pub fn note_read(&self, connection: &str, at_ms: i64, error: Option<String>) {
        self.reads.insert(connection.to_owned(), (at_ms, error));
    }

    /// When `connection`'s usage endpoint was last read, and why that read
    /// failed, if it did.
    pub fn last_read(&self, connection: &str) -> Option<(i64, Option<String>)> {
        self.reads.get(connection).map(|r| r.clone())
    }

    /// Forgets what was reported of `connection` (deleted, or given new
    /// credentials).
    pub fn forget(&self, connection: &str) {
        self.reported.retain(|(c, _), _| c != connection);
        self.plans.remove(connection);
        self.unstored.remove(connection);
        self.reads.remove(connection);
    }
}

/// A header map of `pairs`, for the tests of the header readers.
#[cfg(test)]
fn test_headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        let name = http::HeaderName::from_bytes(k.as_bytes()).unwrap_or_else(|_| panic!("{k}"));
        h.insert(name, v.parse().unwrap_or_else(|_| panic!("{v}")));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::{test_headers as headers, *};

    #[test]
    fn a_quota_is_read_at_an_instant_and_a_passed_reset_is_fresh() {
        let quotas = Quotas::default();
        assert_eq!(quotas.quota("c1", "m", 0), None, "never seen is unknown");
        let spent = headers(&[
            ("anthropic-ratelimit-requests-limit", "10"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "1970-01-01T00:01:00Z"),
        ]);
        quotas.observe("c1", "m", &spent, 0);
        quotas.observe("c1", "m", &headers(&[]), 0);
        let q = quotas.quota("c1", "m", 20_000).unwrap();
        assert!(q.limit_reached() && !q.has_plan());
        assert_eq!((q.used(), q.binding_reset_in_ms(), q.age_ms), (1.0, Some(40_000), 20_000));
        let later = quotas.quota("c1", "m", 60_000).unwrap();
        assert!(!later.limit_reached() && later.used() == 0.0 && later.soonest_reset_in_ms().is_none());
        assert_eq!(quotas.quota("c1", "other-model", 0), None);
        quotas.forget("c1");
        assert_eq!(quotas.quota("c1", "m", 0), None);
    }

    #[test]
    fn a_plan_holds_for_every_model_of_the_account_and_keeps_its_name() {
        let quotas = Quotas::default();
        let usage = serde_json::json!({"plan_type": "pro", "rate_limit": {"primary_window":
            {"used_percent": 50, "limit_window_seconds": 18000, "reset_at": 100}}});
        quotas.set_plan("c1", from_codex_usage(&usage, 0).unwrap());
        let answer = headers(&[
            ("x-codex-primary-used-percent", "60"),
            ("x-codex-primary-window-minutes", "300"),
            ("x-codex-secondary-used-percent", "90"),
            ("x-codex-secondary-window-minutes", "10080"),
            ("x-codex-secondary-reset-after-seconds", "3600"),
        ]);
        quotas.observe("c1", "gpt-5-codex", &answer, 1_000);
        let q = quotas.quota("c1", "any-model", 2_000).unwrap();
        assert_eq!((q.session, q.weekly), (Some((0.6, None)), Some((0.9, Some(3_599_000)))));
        assert_eq!((q.used(), q.age_ms), (0.9, 1_000));
        assert_eq!(quotas.plan("c1").and_then(|p| p.plan).as_deref(), Some("pro"), "the name stays");
        quotas.forget("c1");
        assert_eq!(quotas.plan("c1"), None);
    }
}
