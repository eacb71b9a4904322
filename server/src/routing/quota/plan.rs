//! A subscription's plan windows — the 5-hour and weekly allowances of
//! Claude Pro/Max and ChatGPT plans — as the provider states them: on the
//! headers of every answer (Claude's `anthropic-ratelimit-unified-*`,
//! Codex's `x-codex-*`) and from its usage endpoint (Claude's
//! `{base}/api/oauth/usage`, Codex's `{base}/wham/usage`); and a Gemini
//! CLI account's per-model daily quotas (Code Assist's `retrieveUserQuota`).

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One plan window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanWindow {
    /// `5h`, `7d`, or the window's length in minutes or hours (`90m`, `24h`).
    pub window: String,
    /// Share used, 0–1.
    pub used: f64,
    /// When it renews (epoch ms), if said.
    pub reset_at_ms: Option<i64>,
}

/// Where a plan report came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// An answer's headers.
    Headers,
    /// The provider's usage endpoint.
    UsageEndpoint,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Headers => "headers",
            Self::UsageEndpoint => "usage-endpoint",
        }
    }
}

/// What the provider last said of an account's plan (stored as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// The plan's name, where the provider says it (`pro`, `plus`, `max`…).
    pub plan: Option<String>,
    pub windows: Vec<PlanWindow>,
    pub source: Source,
    pub fetched_at_ms: i64,
}

/// A window's name from its length in minutes.
fn window_name(minutes: i64) -> String {
    match minutes {
        300 => "5h".into(),
        10_080 => "7d".into(),
        m if m % 1440 == 0 => format!("{}d", m / 1440),
        m if m % 60 == 0 => format!("{}h", m / 60),
        m => format!("{m}m"),
    }
}

/// Claude's windows: name, utilization (0–1) and reset (epoch s) headers.
const CLAUDE_WINDOWS: [(&str, &str, &str); 2] = [
    ("5h", "anthropic-ratelimit-unified-5h-utilization", "anthropic-ratelimit-unified-5h-reset"),
    ("7d", "anthropic-ratelimit-unified-7d-utilization", "anthropic-ratelimit-unified-7d-reset"),
];

/// Codex's windows: used percent, window minutes, reset (epoch s) and
/// reset-after (s) headers.
const CODEX_WINDOWS: [[&str; 4]; 2] = [
    [
        "x-codex-primary-used-percent",
        "x-codex-primary-window-minutes",
        "x-codex-primary-reset-at",
        "x-codex-primary-reset-after-seconds",
    ],
    [
        "x-codex-secondary-used-percent",
        "x-codex-secondary-window-minutes",
        "x-codex-secondary-reset-at",
        "x-codex-secondary-reset-after-seconds",
    ],
];

/// The plan windows an answer's headers state (Claude's or Codex's);
/// `None` when they state none. An answer without such headers costs one
/// look at its header names, and nothing is allocated.
pub fn from_headers(headers: &HeaderMap, now_ms: i64) -> Option<PlanReport> {
    let stated = |name: &http::HeaderName| {
        let name = name.as_str();
        name.starts_with("anthropic-ratelimit-unified-") || name.starts_with("x-codex-")
    };
    if !headers.keys().any(stated) {
        return None;
    }
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let number = |name: &str| text(name)?.parse::<f64>().ok();
    let mut windows = Vec::new();
    for (window, utilization, reset) in CLAUDE_WINDOWS {
        if let Some(used) = number(utilization) {
            let reset_at_ms = number(reset).map(|s| (s * 1000.0) as i64);
            windows.push(PlanWindow { window: window.into(), used: used.clamp(0.0, 1.0), reset_at_ms });
        }
    }
    for [percent, minutes, reset_at, reset_after] in CODEX_WINDOWS {
        let (Some(percent), Some(minutes)) = (number(percent), number(minutes)) else { continue };
        let reset_at_ms = number(reset_at)
            .map(|s| (s * 1000.0) as i64)
            .or_else(|| number(reset_after).map(|s| now_ms + (s * 1000.0) as i64));
        let used = (percent / 100.0).clamp(0.0, 1.0);
        windows.push(PlanWindow { window: window_name(minutes as i64), used, reset_at_ms });
    }
    if windows.is_empty() {
        return None;
    }
    let plan = text("x-codex-plan-type").map(str::to_owned);
    Some(PlanReport { plan, windows, source: Source::Headers, fetched_at_ms: now_ms })
}

/// The plan windows Claude's usage endpoint states: `five_hour` and
/// `seven_day`, each `{utilization: percent, resets_at: RFC 3339}`.
pub fn from_claude_usage(body: &Value, now_ms: i64) -> Option<PlanReport> {
    let windows: Vec<PlanWindow> = [("5h", "five_hour"), ("7d", "seven_day")]
        .into_iter()
        .filter_map(|(window, key)| {
            let w = &body[key];
            let used = (w["utilization"].as_f64()? / 100.0).clamp(0.0, 1.0);
            let reset_at_ms = w["resets_at"]
                .as_str()
                .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
                .map(|at| at.timestamp_millis());
            Some(PlanWindow { window: window.into(), used, reset_at_ms })
        })
        .collect();
    (!windows.is_empty()).then_some(PlanReport {
        plan: None,
        windows,
        source: Source::UsageEndpoint,
        fetched_at_ms: now_ms,
    })
}

/// The plan windows Codex's usage endpoint states: `plan_type`, and
/// `rate_limit.{primary,secondary}_window` with `used_percent`,
/// `limit_window_seconds` and `reset_at` (epoch s) or `reset_after_seconds`.
pub fn from_codex_usage(body: &Value, now_ms: i64) -> Option<PlanReport> {
    let windows: Vec<PlanWindow> = ["primary_window", "secondary_window"]
        .into_iter()
        .filter_map(|key| {
            let w = &body["rate_limit"][key];
            let used = (w["used_percent"].as_f64()? / 100.0).clamp(0.0, 1.0);
            let seconds = w["limit_window_seconds"].as_i64()?;
            let reset_at_ms = w["reset_at"]
                .as_i64()
                .map(|s| s * 1000)
                .or_else(|| w["reset_after_seconds"].as_i64().map(|s| now_ms + s * 1000));
            Some(PlanWindow { window: window_name(seconds / 60), used, reset_at_ms })
        })
        .collect();
    (!windows.is_empty()).then_some(PlanReport {
        plan: body["plan_type"].as_str().map(str::to_owned),
        windows,
        source: Source::UsageEndpoint,
        fetched_at_ms: now_ms,
    })
}

/// The quotas Code Assist states for a Gemini CLI account
/// (`retrieveUserQuota`): a bucket per model, each `{modelId,
/// remainingFraction, resetTime: RFC 3339}`; a window per model, named by
/// it (they renew daily).
pub fn from_code_assist_quota(body: &Value, now_ms: i64) -> Option<PlanReport> {
    let mut windows: Vec<PlanWindow> = Vec::new();
    for bucket in body["buckets"].as_array().into_iter().flatten() {
        let (Some(model), Some(left)) = (bucket["modelId"].as_str(), bucket["remainingFraction"].as_f64()) else {
            continue;
        };
        if windows.iter().any(|w| w.window == model) {
            continue;
        }
        let reset_at_ms = bucket["resetTime"]
            .as_str()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
            .map(|at| at.timestamp_millis());
        windows.push(PlanWindow { window: model.to_owned(), used: (1.0 - left).clamp(0.0, 1.0), reset_at_ms });
    }
    (!windows.is_empty()).then_some(PlanReport {
        plan: None,
        windows,
        source: Source::UsageEndpoint,
        fetched_at_ms: now_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::{super::test_headers as headers, *};
    use serde_json::json;

    fn w(window: &str, used: f64, reset_at_ms: Option<i64>) -> PlanWindow {
        PlanWindow { window: window.into(), used, reset_at_ms }
    }

    #[test]
    fn claude_and_codex_headers_state_their_plan_windows() {
        let claude = headers(&[
            ("anthropic-ratelimit-unified-5h-utilization", "0.21"),
            ("anthropic-ratelimit-unified-5h-reset", "1790000000"),
            ("anthropic-ratelimit-unified-7d-utilization", "0.68"),
            ("anthropic-ratelimit-unified-status", "allowed"),
        ]);
        let report = from_headers(&claude, 5).unwrap_or_else(|| panic!("no report"));
        assert_eq!(report.windows, [w("5h", 0.21, Some(1_790_000_000_000)), w("7d", 0.68, None)]);
        assert_eq!((report.source, report.fetched_at_ms, report.plan), (Source::Headers, 5, None));
        let codex = headers(&[
            ("x-codex-primary-used-percent", "37.5"),
            ("x-codex-primary-window-minutes", "300"),
            ("x-codex-primary-reset-after-seconds", "60"),
            ("x-codex-secondary-used-percent", "12"),
            ("x-codex-secondary-window-minutes", "10080"),
            ("x-codex-secondary-reset-at", "1790000000"),
            ("x-codex-plan-type", "pro"),
        ]);
        let report = from_headers(&codex, 1_000).unwrap_or_else(|| panic!("no report"));
        assert_eq!(report.windows, [w("5h", 0.375, Some(61_000)), w("7d", 0.12, Some(1_790_000_000_000))]);
        assert_eq!(report.plan.as_deref(), Some("pro"));
        assert_eq!(from_headers(&headers(&[("x-ratelimit-remaining-requests", "3")]), 0), None);
    }

    #[test]
    fn the_usage_endpoints_state_the_same_windows() {
        let claude = json!({"five_hour": {"utilization": 12.0, "resets_at": "2026-12-05T10:00:00+00:00"},
                            "seven_day": {"utilization": 87, "resets_at": null}, "seven_day_opus": null});
        let report = from_claude_usage(&claude, 7).unwrap_or_else(|| panic!("no report"));
        assert_eq!(report.windows, [w("5h", 0.12, Some(1_796_464_800_000)), w("7d", 0.87, None)]);
        assert_eq!(report.source, Source::UsageEndpoint);
        let codex = json!({"plan_type": "plus", "rate_limit": {
            "primary_window": {"used_percent": 42, "limit_window_seconds": 18000, "reset_at": 1_790_000_000},
            "secondary_window": {"used_percent": 87, "limit_window_seconds": 604800, "reset_after_seconds": 10}}});
        let report = from_codex_usage(&codex, 1_000).unwrap_or_else(|| panic!("no report"));
        assert_eq!(report.windows, [w("5h", 0.42, Some(1_790_000_000_000)), w("7d", 0.87, Some(11_000))]);
        assert_eq!(report.plan.as_deref(), Some("plus"));
        assert_eq!(from_codex_usage(&json!({"rate_limit": null}), 0), None);
        assert_eq!(window_name(90), "90m");
    }

    #[test]
    fn code_assist_states_a_window_per_model() {
        let body = json!({"buckets": [
            {"modelId": "gemini-2.5-pro", "tokenType": "REQUESTS", "remainingFraction": 0.75, "resetTime": "2026-12-06T00:00:00Z"},
            {"modelId": "gemini-2.5-pro", "tokenType": "TOKENS", "remainingFraction": 0.1},
            {"modelId": "gemini-2.5-flash", "remainingFraction": 1.0},
            {"tokenType": "REQUESTS"}]});
        let report = from_code_assist_quota(&body, 9).unwrap_or_else(|| panic!("no report"));
        assert_eq!(
            report.windows,
            [w("gemini-2.5-pro", 0.25, Some(1_796_515_200_000)), w("gemini-2.5-flash", 0.0, None)]
        );
        assert_eq!(from_code_assist_quota(&json!({"buckets": []}), 9), None);
    }
}
