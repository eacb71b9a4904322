//! Formatting shared by server render and browser hydration: it must give
//! the same text on both sides, so it uses no clock and no locale.

/// `2026-11-30` from days since 1970-01-01 (UTC).
pub fn day(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `2026-11-30 10:37:05` (UTC) from epoch milliseconds.
pub fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A UTC RFC 3339 time as the dashboard writes times: `2026-11-30
/// 10:37:05 UTC` (as given when it is not one).
pub fn utc_time(rfc3339: &str) -> String {
    let utc = rfc3339.ends_with('Z') || rfc3339.ends_with("+00:00");
    match rfc3339.get(..19) {
        Some(head) if utc && head.as_bytes().get(10) == Some(&b'T') => format!("{} UTC", head.replacen('T', " ", 1)),
        _ => rfc3339.to_owned(),
    }
}

/// A breaker state as words (`OPEN` → `open: failing fast`).
pub fn breaker_state(state: &str) -> &str {
    match state {
        "CLOSED" => "closed",
        "OPEN" => "open: failing fast",
        "HALF_OPEN" => "half-open: probing",
        "DEGRADED" => "degraded",
        other => other,
    }
}

/// A remaining time: `1h 02m`, `3m 05s`, `42s`; `0s` when none is left.
pub fn duration(ms: u64) -> String {
    let secs = ms.div_ceil(1000);
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}

/// `n` with its noun, plural unless `n` is 1: `count(1, "key")` is
/// `1 key`, `count(0, "key")` `0 keys` (for nouns whose plural adds `s`).
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) { format!("{n} {noun}") } else { format!("{n} {noun}s") }
}

/// How long ago, from a span in ms: `12 s ago`, `3 min ago`, `5 h ago`,
/// `2 d ago`.
pub fn ago(span_ms: i64) -> String {
    let secs = span_ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Percent-encodes a query parameter value.
pub fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_their_nouns_plural_unless_one() {
        assert_eq!(count(0_usize, "key"), "0 keys");
        assert_eq!(count(1_u32, "model lockout"), "1 model lockout");
        assert_eq!(count(2_u32, "connection"), "2 connections");
    }

    #[test]
    fn formats_utc_timestamps() {
        assert_eq!(timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(timestamp(1_796_035_025_000), "2026-11-30 10:37:05");
        assert_eq!(timestamp(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc_time("2026-11-30T10:37:05.123+00:00"), "2026-11-30 10:37:05 UTC");
        assert_eq!(utc_time("2026-11-30T10:37:05Z"), "2026-11-30 10:37:05 UTC");
        assert_eq!(utc_time("2026-11-30T10:37:05+02:00"), "2026-11-30T10:37:05+02:00", "not UTC: as given");
        assert_eq!(breaker_state("HALF_OPEN"), "half-open: probing");
    }

    #[test]
    fn says_how_long_ago() {
        assert_eq!(ago(-5), "0 s ago");
        assert_eq!(ago(59_999), "59 s ago");
        assert_eq!(ago(180_000), "3 min ago");
        assert_eq!(ago(5 * 3_600_000 + 1), "5 h ago");
        assert_eq!(ago(2 * 86_400_000), "2 d ago");
    }

    #[test]
    fn escapes_query_values() {
        assert_eq!(query_escape("a b&c=é"), "a%20b%26c%3D%C3%A9");
    }
}

/// The sentence inside an upstream's error text: the `error.message`
/// (or `message`, `detail`, `error_description`, a string `error`) of the
/// JSON body it holds, after whatever came before it ("HTTP 401: ").
/// `None` when the text holds no such JSON.
pub fn upstream_message(text: &str) -> Option<String> {
    let start = text.find('{')?;
    let body: serde_json::Value = serde_json::Deserializer::from_str(&text[start..]).into_iter().next()?.ok()?;
    let field = |v: &serde_json::Value, k: &str| v.get(k).and_then(|m| m.as_str()).map(str::to_owned);
    let message = body
        .get("error")
        .and_then(|e| field(e, "message").or_else(|| e.as_str().map(str::to_owned)))
        .or_else(|| field(&body, "message"))
        .or_else(|| field(&body, "detail"))
        .or_else(|| field(&body, "error_description"))?;
    Some(format!("{}{message}", &text[..start]))
}

#[cfg(test)]
mod upstream_message_tests {
    use super::upstream_message;

    #[test]
    fn the_sentence_comes_out_of_the_json() {
        let raw = r#"HTTP 401: {"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
        assert_eq!(upstream_message(raw).as_deref(), Some("HTTP 401: Incorrect API key provided"));
        assert_eq!(upstream_message(r#"{"detail":"Not found"} trailing"#).as_deref(), Some("Not found"));
        assert_eq!(upstream_message(r#"{"error":"overloaded"}"#).as_deref(), Some("overloaded"));
        assert_eq!(upstream_message("connection refused"), None);
        assert_eq!(upstream_message(r#"{"unrelated":1}"#), None);
    }
}
