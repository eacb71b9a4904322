//! Reference §5 items 17–23 and 29–30, and the SPEC §R2 text rules.

use super::*;
use crate::resilience::breaker::FailureKind;
use app::types::settings::ResilienceSettings;
use http::HeaderValue;

const NOW: i64 = 1_767_225_600_000;
const CAP: u64 = 1_800_000;

fn apikey() -> ConnectionCooldownProfile {
    ResilienceSettings::default().connection_cooldown.apikey
}

fn verdict(
    status: Option<u16>,
    body: &str,
    headers: &HeaderMap,
    level: u32,
    profile: &ConnectionCooldownProfile,
) -> Verdict {
    classify(&Failure {
        status,
        headers,
        body,
        backoff_level: level,
        profile,
        max_cooldown_ms: CAP,
        rule: None,
        now_ms: NOW,
    })
}

fn simple(status: u16, body: &str) -> Verdict {
    verdict(Some(status), body, &HeaderMap::new(), 0, &apikey())
}

#[test]
fn a_bare_429_climbs_the_api_key_ladder() {
    let v = simple(429, "");
    assert_eq!(
        (v.reason, v.should_fallback, v.cooldown_ms, v.backoff_level),
        (ErrorReason::RateLimited, true, 3_000, 1)
    );
    assert!(!v.used_upstream_hint && v.rule.is_none());
    let seconds: Vec<u64> =
        (0..8).map(|l| verdict(Some(429), "", &HeaderMap::new(), l, &apikey()).cooldown_ms / 1000).collect();
    assert_eq!(seconds, [3, 6, 12, 24, 48, 96, 96, 96]);
    assert_eq!(verdict(Some(429), "", &HeaderMap::new(), 5, &apikey()).backoff_level, 5, "stays at the top step");
}

#[test]
fn the_ladder_is_capped_and_hints_replace_it() {
    let profile =
        ConnectionCooldownProfile { base_cooldown_ms: 60_000, use_upstream_retry_hints: false, max_backoff_steps: 8 };
    let f = |level, headers: &HeaderMap, p: &ConnectionCooldownProfile| {
        classify(&Failure {
            status: Some(429),
            headers,
            body: "",
            backoff_level: level,
            profile: p,
            max_cooldown_ms: 600_000,
            rule: None,
            now_ms: NOW,
        })
    };
    assert_eq!(f(8, &HeaderMap::new(), &profile).cooldown_ms, 600_000);
    assert_eq!(f(0, &HeaderMap::new(), &profile).cooldown_ms, 60_000);
    let mut h = HeaderMap::new();
    h.insert("retry-after", HeaderValue::from_static("30"));
    assert_eq!(f(8, &h, &profile).cooldown_ms, 600_000, "hints are off for this profile");
    let hinted = ConnectionCooldownProfile { use_upstream_retry_hints: true, ..profile };
    let v = f(8, &h, &hinted);
    assert!(v.used_upstream_hint);
    assert_eq!((v.cooldown_ms, v.backoff_level), (30_000, 0));
}

#[test]
fn status_and_text_verdicts() {
    let v = simple(403, "Fire Pass API keys are not authorized for this route.");
    assert_eq!((v.should_fallback, v.cooldown_ms), (false, 0));
    let v = simple(400, "prompt is too long: 210000 tokens > 200000 maximum");
    assert_eq!((v.reason, v.should_fallback, v.cooldown_ms), (ErrorReason::ContextOverflow, true, 0));
    let v = simple(400, "Detected high-frequency non-compliant requests");
    assert_eq!((v.reason, v.should_fallback, v.cooldown_ms), (ErrorReason::RateLimited, true, 3_000));
    let v = simple(400, "some other error");
    assert_eq!((v.reason, v.should_fallback, v.cooldown_ms), (ErrorReason::BadRequest, false, 0));
    let v = simple(401, "invalid x-api-key");
    assert_eq!((v.reason, v.should_fallback, v.cooldown_ms), (ErrorReason::AuthError, true, 3_000));
    let v = simple(404, r#"{"error":{"type":"not_found_error","message":"model: claude-x"}}"#);
    assert_eq!(v.reason, ErrorReason::ModelAccessDenied);
    let v = simple(403, r#"{"error":{"type":"permission_error","message":"Request not allowed"}}"#);
    assert_eq!((v.reason, v.cooldown_ms), (ErrorReason::RequestRejected, REQUEST_REJECTED_COOLDOWN_MS));
    let v = verdict(None, "", &HeaderMap::new(), 0, &apikey());
    assert_eq!((v.reason, v.cooldown_ms), (ErrorReason::Timeout, 3_000));
    assert!(trips_breaker(None, &v));
    assert!(trips_breaker(Some(503), &simple(503, "")));
    assert!(!trips_breaker(Some(429), &simple(429, "")));
    assert!(!trips_breaker(Some(401), &simple(401, "")));
}

#[test]
fn terminal_states() {
    let v = simple(403, "Your account has been deactivated");
    assert_eq!((v.reason, v.terminal), (ErrorReason::Banned, Some(Terminal::Banned)));
    assert!(v.skip_provider_breaker);
    for (status, body) in
        [(402, ""), (429, r#"{"error":{"code":"insufficient_quota"}}"#), (400, "Your credit balance is too low")]
    {
        assert_eq!(simple(status, body).terminal, Some(Terminal::CreditsExhausted), "{status} {body}");
    }
    assert_eq!(simple(429, "rate limit").terminal, None);
}

#[test]
fn an_internal_fallback_hint_cools_briefly_without_the_breaker() {
    let mut h = HeaderMap::new();
    h.insert("x-omni-fallback-hint", HeaderValue::from_static("connection_cooldown"));
    let v = verdict(Some(503), "", &h, 4, &apikey());
    assert_eq!((v.cooldown_ms, v.backoff_level, v.skip_provider_breaker), (5_000, 0, true));
}

#[test]
fn concurrency_limits_switch_at_once_and_quota_text_wins() {
    let v = verdict(Some(429), "Too many concurrent requests for this key", &HeaderMap::new(), 3, &apikey());
    assert_eq!((v.reason, v.cooldown_ms, v.backoff_level), (ErrorReason::ConcurrencyLimited, 1_000, 3));
    assert!(v.skip_provider_breaker);
    assert_eq!(simple(429, "并发数过高，请稍后再试").reason, ErrorReason::ConcurrencyLimited);
    let both = simple(429, "concurrency limit reached; daily quota exhausted, try again tomorrow");
    assert_eq!(both.reason, ErrorReason::QuotaExhausted);
}

#[test]
fn quota_texts() {
    let daily = simple(429, "You have used up today's quota");
    assert_eq!(daily.reason, ErrorReason::QuotaExhausted);
    assert_eq!(daily.cooldown_ms, until_local_midnight(NOW));
    let end = chrono::Local.timestamp_millis_opt(NOW + daily.cooldown_ms as i64).single().unwrap();
    assert_eq!(end.format("%H:%M:%S").to_string(), "00:00:00", "until local midnight");
    assert_eq!(simple(429, "weekly usage limit reached").cooldown_ms, 24 * HOUR_MS);
    assert_eq!(simple(429, "5-hour limit reached").cooldown_ms, HOUR_MS);
    assert_eq!(simple(429, "5-hour limit reached, resets in 2h").cooldown_ms, 2 * HOUR_MS);
}

#[test]
fn gemini_typed_retry_delays() {
    let body = |delay: &str, msg: &str| {
        format!(
            r#"{{"error":{{"code":429,"message":"{msg}","details":[{{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{{"quotaId":"GenerateRequestsPerDayPerProjectPerModel"}}]}},{{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"{delay}"}}]}}}}"#
        )
    };
    let v = simple(429, &body("38s", "You exceeded your current quota"));
    assert_eq!((v.reason, v.cooldown_ms, v.terminal), (ErrorReason::RateLimited, 38_000, None));
    assert_eq!(simple(429, &body("7200s", "You exceeded your current quota")).reason, ErrorReason::QuotaExhausted);
    let credits = simple(429, &body("20s", "insufficient balance on the billing account"));
    assert_eq!((credits.reason, credits.terminal), (ErrorReason::QuotaExhausted, None));
}

#[test]
fn breaker_kind_of_a_429() {
    assert_eq!(failure_kind(Some(500), ""), None);
    assert_eq!(failure_kind(Some(429), ""), Some(FailureKind::RateLimit));
    assert_eq!(failure_kind(Some(429), "plan limit reached"), Some(FailureKind::QuotaExhausted));
    assert_eq!(failure_kind(Some(429), "daily rate limit exceeded"), Some(FailureKind::QuotaExhausted));
    assert_eq!(failure_kind(Some(429), r#"{"error":"usage limit reached"}"#), Some(FailureKind::QuotaExhausted));
    assert_eq!(failure_kind(Some(429), "usage limit reached"), Some(FailureKind::RateLimit));
    assert_eq!(failure_kind(Some(429), "rate limit, please retry in 60s"), Some(FailureKind::RateLimit));
}

#[test]
fn a_rule_decides_the_verdict_and_keeps_the_breaker_out() {
    use crate::resilience::rules;
    let h = HeaderMap::new();
    let rule = rules::find("agentrouter", 429, &h, "用户额度不足", &[]);
    let v = classify(&Failure {
        status: Some(429),
        headers: &h,
        body: "用户额度不足",
        backoff_level: 0,
        profile: &apikey(),
        max_cooldown_ms: CAP,
        rule,
        now_ms: NOW,
    });
    assert_eq!((v.reason, v.terminal), (ErrorReason::QuotaExhausted, None));
    assert!(v.cooldown_ms > 0 && v.skip_provider_breaker);
    assert_eq!(v.rule.unwrap().scope, app::types::settings::RuleScope::Connection);
}

#[test]
fn a_whole_answer_is_transient_when_the_upstream_was_only_busy_or_failing() {
    let transient = |status, body| is_transient(reason_of(Some(status), body));
    for status in [429, 500, 502, 503, 504, 408] {
        assert!(transient(status, "try later"), "{status}");
    }
    assert!(is_transient(reason_of(None, "connection reset")), "a transport failure");
    assert!(!transient(400, "bad field"));
    assert!(!transient(401, "Invalid API key"));
    assert!(!transient(404, "model_not_found"));
    assert!(!transient(429, "You exceeded your current quota: insufficient_quota"), "credits are not a moment");
    assert!(!transient(429, "You have reached your daily quota, try again tomorrow"), "a quota waits for midnight");
    assert!(!transient(503, "prompt is too long for this model"), "the request itself is too large");
    assert!(transient(400, "Too many concurrent requests"), "a concurrency limit passes");
}

#[test]
fn a_redirect_fails_over_as_the_upstreams_fault() {
    for status in [301, 302, 307, 308] {
        let v = simple(status, "<html>Moved</html>");
        assert!(v.should_fallback, "{status}");
        assert_eq!(v.reason, ErrorReason::ServerError, "{status}");
    }
}
