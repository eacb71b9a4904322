//! What the gateway knows of an account's remaining upstream quota, read
//! by the per-account strategies (`reset-window`, `reset-aware`,
//! `headroom`, `quota-weighted`) through [`QuotaSource`].
//!
//! What feeds it today: the rate-limit headers of the upstream's answers,
//! the last seen per connection and model — OpenAI's
//! `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` and Anthropic's
//! `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`.
//! Those describe the provider's short windows (requests and tokens per
//! minute, per day), not the 5-hour and weekly windows of subscription
//! plans, which the gateway has no fetcher for: a strategy asking for a
//! "session" or "weekly" window gets the windows the upstream reported,
//! and an account never seen, or whose upstream sends no such headers, is
//! honestly unknown (`None`) — each strategy says what it does then.
//!
//! Reading the headers costs one pass over the answer's header names; the
//! map is written only when such headers are present.

use dashmap::DashMap;
use http::HeaderMap;

use crate::resilience::retry_hints;

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
}

impl Reported {
    pub fn at(&self, now_ms: i64) -> Quota {
        let windows = self
            .windows
            .iter()
            .map(|w| match w.reset_at_ms {
                Some(at) if at <= now_ms => (0.0, None),
                at => (w.used, at.map(|at| u64::try_from(at - now_ms).unwrap_or(0))),
            })
            .collect();
        Quota { windows, age_ms: u64::try_from(now_ms - self.observed_at_ms).unwrap_or(0) }
    }
}

/// Where the strategies read an account's quota from.
pub trait QuotaSource: Send + Sync {
    /// `connection`'s quota for `model` at `now_ms`; `None` when unknown.
    fn quota(&self, connection: &str, model: &str, now_ms: i64) -> Option<Quota>;
}

/// The quotas the upstreams' rate-limit headers reported.
#[derive(Default)]
pub struct HeaderQuotas {
    reported: DashMap<(String, String), Reported>,
}

impl QuotaSource for HeaderQuotas {
    fn quota(&self, connection: &str, model: &str, now_ms: i64) -> Option<Quota> {
        let reported = self.reported.get(&(connection.to_owned(), model.to_owned()))?;
        Some(reported.at(now_ms))
    }
}

impl HeaderQuotas {
    /// Remembers what an answer's headers say of `connection`'s quota for
    /// `model`; an answer without rate-limit headers changes nothing.
    pub fn observe(&self, connection: &str, model: &str, headers: &HeaderMap, now_ms: i64) {
        let windows = windows(headers, now_ms);
        if !windows.is_empty() {
            let reported = Reported { windows, observed_at_ms: now_ms };
            self.reported.insert((connection.to_owned(), model.to_owned()), reported);
        }
    }

    /// Forgets what was reported of `connection` (deleted, or given new
    /// credentials).
    pub fn forget(&self, connection: &str) {
        self.reported.retain(|(c, _), _| c != connection);
    }
}

const KINDS: [&str; 4] = ["requests", "tokens", "input-tokens", "output-tokens"];

#[derive(Default, Clone, Copy)]
struct Parts {
    limit: Option<f64>,
    remaining: Option<f64>,
    reset_at_ms: Option<i64>,
}

/// The windows `headers` report, in one pass over them.
fn windows(headers: &HeaderMap, now_ms: i64) -> Vec<Window> {
    let mut parts = [Parts::default(); KINDS.len()];
    let mut any = false;
    for (name, value) in headers {
        let name = name.as_str();
        let (kind, field, openai) = if let Some(rest) = name.strip_prefix("x-ratelimit-") {
            let Some((field, kind)) = rest.split_once('-') else { continue };
            (kind, field, true)
        } else if let Some(rest) = name.strip_prefix("anthropic-ratelimit-") {
            let Some((kind, field)) = rest.rsplit_once('-') else { continue };
            (kind, field, false)
        } else {
            continue;
        };
        let (Some(k), Ok(value)) = (KINDS.iter().position(|k| *k == kind), value.to_str()) else { continue };
        let value = value.trim();
        let p = &mut parts[k];
        match field {
            "limit" => p.limit = value.parse().ok(),
            "remaining" => p.remaining = value.parse().ok(),
            "reset" if openai => {
                p.reset_at_ms = retry_hints::duration_ms(value).map(|ms| now_ms.saturating_add_unsigned(ms))
            }
            "reset" => p.reset_at_ms = chrono::DateTime::parse_from_rfc3339(value).ok().map(|at| at.timestamp_millis()),
            _ => continue,
        }
        any = true;
    }
    if !any {
        return Vec::new();
    }
    KINDS
        .iter()
        .zip(parts)
        .filter_map(|(name, p)| {
            let (limit, remaining) = (p.limit.filter(|l| *l > 0.0)?, p.remaining?);
            let used = (1.0 - remaining / limit).clamp(0.0, 1.0);
            Some(Window { name, used, reset_at_ms: p.reset_at_ms })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn openai_and_anthropic_headers_give_their_windows() {
        let openai = headers(&[
            ("x-ratelimit-limit-requests", "100"),
            ("x-ratelimit-remaining-requests", "25"),
            ("x-ratelimit-reset-requests", "1m30s"),
            ("x-ratelimit-limit-tokens", "1000"),
            ("x-ratelimit-remaining-tokens", "900"),
            ("x-ratelimit-reset-tokens", "6ms"),
            ("x-ratelimit-reset", "1700000000"),
            ("content-type", "application/json"),
        ]);
        let w = windows(&openai, 1_000);
        assert_eq!(
            w,
            [
                Window { name: "requests", used: 0.75, reset_at_ms: Some(91_000) },
                Window { name: "tokens", used: 0.09999999999999998, reset_at_ms: Some(1_006) },
            ]
        );
        let anthropic = headers(&[
            ("anthropic-ratelimit-input-tokens-limit", "400"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", "1970-01-01T00:00:10Z"),
        ]);
        assert_eq!(windows(&anthropic, 0), [Window { name: "input-tokens", used: 1.0, reset_at_ms: Some(10_000) }]);
        assert!(windows(&headers(&[("retry-after", "3")]), 0).is_empty());
    }

    #[test]
    fn a_quota_is_read_at_an_instant_and_a_passed_reset_is_fresh() {
        let quotas = HeaderQuotas::default();
        assert_eq!(quotas.quota("c1", "m", 0), None, "never seen is unknown");
        let spent = headers(&[
            ("anthropic-ratelimit-requests-limit", "10"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "1970-01-01T00:01:00Z"),
        ]);
        quotas.observe("c1", "m", &spent, 0);
        quotas.observe("c1", "m", &headers(&[]), 0);
        let q = quotas.quota("c1", "m", 20_000).unwrap();
        assert!(q.limit_reached());
        assert_eq!((q.used(), q.binding_reset_in_ms(), q.age_ms), (1.0, Some(40_000), 20_000));
        let later = quotas.quota("c1", "m", 60_000).unwrap();
        assert!(!later.limit_reached() && later.used() == 0.0 && later.soonest_reset_in_ms().is_none());
        assert_eq!(quotas.quota("c1", "other-model", 0), None);
        quotas.forget("c1");
        assert_eq!(quotas.quota("c1", "m", 0), None);
    }
}
