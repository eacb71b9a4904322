//! Reference §5 items 27–28 and the header hints of SPEC §R2.

use super::*;
use http::HeaderValue;

const NOW: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

#[test]
fn retry_after_values() {
    let cases = [
        ("60", Some(60)),
        ("0", Some(0)),
        ("5m", Some(300)),
        ("2h", Some(7200)),
        ("1H", Some(3600)),
        ("60s", Some(60)),
    ];
    for (v, expected) in cases {
        assert_eq!(parse_retry_after(v, NOW), expected, "{v}");
    }
    for v in ["", "   ", "not-a-date", "60xyz"] {
        assert_eq!(parse_retry_after(v, NOW), None, "{v:?}");
    }
    assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", NOW), Some(0), "past date");
    assert_eq!(parse_retry_after("Thu, 01 Jan 2026 00:01:30 GMT", NOW), Some(90));
}

#[test]
fn header_hints_in_order() {
    let mut h = HeaderMap::new();
    h.insert("RETRY-AFTER", HeaderValue::from_static("60s"));
    assert_eq!(from_headers(&h, NOW), Some(60_000), "header names are case-insensitive");
    let mut h = HeaderMap::new();
    h.insert("x-ratelimit-reset", HeaderValue::from_str(&(NOW / 1000 + 30).to_string()).unwrap());
    assert_eq!(from_headers(&h, NOW), Some(30_000), "epoch seconds");
    h.insert("x-ratelimit-reset", HeaderValue::from_str(&(NOW + 45_000).to_string()).unwrap());
    assert_eq!(from_headers(&h, NOW), Some(45_000), "epoch milliseconds");
    let mut h = HeaderMap::new();
    h.insert("anthropic-ratelimit-requests-reset", HeaderValue::from_static("2026-01-01T00:00:20Z"));
    h.insert("anthropic-ratelimit-tokens-reset", HeaderValue::from_static("2026-01-01T00:01:00Z"));
    assert_eq!(from_headers(&h, NOW), Some(60_000));
    assert_eq!(from_headers(&HeaderMap::new(), NOW), None);
}

#[test]
fn text_hints() {
    assert_eq!(from_body("Limit hit, reset after 2h7m23s", NOW), Some(7_643_000));
    assert_eq!(from_body("Resets in 164h27m24s", NOW), Some(592_044_000));
    assert_eq!(from_body("Please retry in 26.660853464s.", NOW), Some(26_661));
    assert_eq!(from_body("quota resets in 3 days", NOW), Some(3 * DAY_MS));
    assert_eq!(from_body("usage limit: resets in 40 days", NOW), Some(MAX_HINT_MS), "capped at 30 days");
    assert_eq!(from_body("Try again at 2026-01-01T00:10:00Z.", NOW), Some(600_000));
    assert_eq!(from_body("rate limit exceeded", NOW), None);
}

#[test]
fn json_hints() {
    let gemini =
        r#"{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"38s"}]}}"#;
    assert_eq!(from_body(gemini, NOW), Some(38_000));
    let long = r#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"200000s"}]}}"#;
    assert_eq!(from_body(long, NOW), Some(DAY_MS), "RetryInfo caps at 24 h");
    assert_eq!(from_body(r#"{"error":{"retry_after_ms":1500}}"#, NOW), Some(1_500));
    assert_eq!(from_body(r#"{"retryAfterMs":2500}"#, NOW), Some(2_500));
    assert_eq!(from_body(r#"{"error":{"retryAfter":"2026-01-01T00:00:05Z"}}"#, NOW), Some(5_000));
}
