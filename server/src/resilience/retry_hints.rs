//! Upstream hints of when to retry (SPEC §R2): `Retry-After` (seconds, a
//! unit suffix, or an HTTP date), `X-RateLimit-Reset` (epoch seconds or
//! milliseconds), `anthropic-ratelimit-*-reset` (RFC 3339), and hints in
//! the error body — Gemini `RetryInfo.retryDelay`, `retry_after_ms`,
//! "please retry in 26.66s", "reset after 2h7m23s", "resets in 3 days",
//! "try again at <ISO>". Body delays of the retry kind cap at 24 h;
//! everything caps at 30 days.

use chrono::{DateTime, Utc};
use http::HeaderMap;
use serde_json::Value;

pub const DAY_MS: u64 = 86_400_000;
/// No hint is believed beyond this.
pub const MAX_HINT_MS: u64 = 30 * DAY_MS;

/// `Retry-After` as whole seconds: `"60"`, `"60s"`, `"5m"`, `"2h"`, or an
/// HTTP date (past → 0). Anything else is no hint.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<u64> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    if let Ok(secs) = v.parse::<u64>() {
        return Some(secs);
    }
    let lower = v.to_ascii_lowercase();
    let unit =
        |suffix: char, scale: u64| lower.strip_suffix(suffix)?.parse::<u64>().ok().map(|n| n.saturating_mul(scale));
    if let Some(secs) = unit('s', 1).or_else(|| unit('m', 60)).or_else(|| unit('h', 3600)) {
        return Some(secs);
    }
    let at = DateTime::parse_from_rfc2822(v).ok()?.timestamp_millis();
    Some(u64::try_from(at.saturating_sub(now_ms)).unwrap_or(0).div_ceil(1000))
}

/// The header hint in ms, first found of `Retry-After`,
/// `X-RateLimit-Reset`, then the latest `anthropic-ratelimit-*-reset`.
pub fn from_headers(headers: &HeaderMap, now_ms: i64) -> Option<u64> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(secs) = text("retry-after").and_then(|v| parse_retry_after(v, now_ms)) {
        return Some(cap(secs.saturating_mul(1000), MAX_HINT_MS));
    }
    if let Some(reset) = text("x-ratelimit-reset").and_then(|v| v.trim().parse::<f64>().ok()) {
        let at_ms = if reset > 1e10 { reset } else { reset * 1000.0 } as i64;
        return Some(until(at_ms, now_ms));
    }
    headers
        .iter()
        .filter(|(name, _)| {
            let n = name.as_str();
            n.starts_with("anthropic-ratelimit-") && n.ends_with("-reset")
        })
        .filter_map(|(_, v)| DateTime::parse_from_rfc3339(v.to_str().ok()?.trim()).ok())
        .map(|at| until(at.timestamp_millis(), now_ms))
        .max()
}

/// A hint in the error body, in ms.
pub fn from_body(text: &str, now_ms: i64) -> Option<u64> {
    json_hint(text, now_ms).or_else(|| text_hint(text, now_ms)).map(|ms| cap(ms, MAX_HINT_MS))
}

fn cap(ms: u64, max: u64) -> u64 {
    ms.min(max)
}

fn until(at_ms: i64, now_ms: i64) -> u64 {
    cap(u64::try_from(at_ms.saturating_sub(now_ms)).unwrap_or(0), MAX_HINT_MS)
}

/// Gemini `RetryInfo.retryDelay`, else `retryAfter` (ISO), else
/// `retry_after_ms` / `retryAfterMs` at the top level or under `error`.
fn json_hint(text: &str, now_ms: i64) -> Option<u64> {
    let body: Value = serde_json::from_str(text.trim()).ok()?;
    if let Some(ms) = retry_info(&body) {
        return Some(ms);
    }
    let error = body.get("error").unwrap_or(&body);
    for scope in [error, &body] {
        if let Some(at) =
            scope.get("retryAfter").and_then(Value::as_str).and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        {
            return Some(until(at.timestamp_millis(), now_ms));
        }
        for key in ["retry_after_ms", "retryAfterMs"] {
            if let Some(ms) = scope.get(key).and_then(Value::as_f64).filter(|ms| *ms >= 0.0) {
                return Some(ms as u64);
            }
        }
    }
    None
}

/// A typed Google `RetryInfo.retryDelay` in the error body, in ms (capped
/// at 24 h) — the one body hint precise enough to lock a model on (§R5).
pub fn google_retry_info(text: &str) -> Option<u64> {
    retry_info(&serde_json::from_str(text.trim()).ok()?)
}

fn retry_info(body: &Value) -> Option<u64> {
    let error = body.get("error").unwrap_or(body);
    let details = error.get("details").and_then(Value::as_array).into_iter().flatten();
    details
        .filter(|d| d.get("@type").and_then(Value::as_str).is_some_and(|t| t.contains("RetryInfo")))
        .find_map(|d| d.get("retryDelay")?.as_str().and_then(duration_ms))
        .map(|ms| cap(ms, DAY_MS))
}

/// Phrases of free error text, in the reference order.
fn text_hint(text: &str, now_ms: i64) -> Option<u64> {
    if let Some(ms) = after_phrase(text, "please retry in ").and_then(duration_prefix_ms) {
        return Some(cap(ms, DAY_MS));
    }
    for phrase in ["try again at ", "wait until ", "resets at ", "reset at ", "available at ", "retry after "] {
        if let Some(at) = after_phrase(text, phrase).and_then(iso_prefix) {
            return Some(until(at.timestamp_millis(), now_ms));
        }
    }
    for phrase in ["reset after ", "resets in "] {
        if let Some(ms) = after_phrase(text, phrase).and_then(duration_prefix_ms) {
            return Some(ms);
        }
    }
    let days = after_phrase(text, "resets in ")?;
    let n: String = days.chars().take_while(char::is_ascii_digit).collect();
    days[n.len()..]
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("day")
        .then(|| n.parse::<u64>().ok().map(|d| d.saturating_mul(DAY_MS)))?
}

/// The text after the first case-insensitive match of `phrase`.
fn after_phrase<'a>(haystack: &'a str, phrase: &str) -> Option<&'a str> {
    let at = haystack.to_ascii_lowercase().find(phrase)?;
    haystack.get(at + phrase.len()..)
}

/// An RFC 3339 timestamp at the start of `s`.
fn iso_prefix(s: &str) -> Option<DateTime<Utc>> {
    let token: String = s.trim_start().chars().take_while(|c| !c.is_whitespace() && *c != '"' && *c != ',').collect();
    let token = token.trim_end_matches(['.', ')']);
    DateTime::parse_from_rfc3339(token).ok().map(|t| t.with_timezone(&Utc))
}

/// A duration like `2h7m23s`, `26.66s`, `500ms`, `3d` at the start of `s`.
fn duration_prefix_ms(s: &str) -> Option<u64> {
    let token: String = s.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
    duration_ms(&token.trim_end_matches('.').to_ascii_lowercase())
}

/// A whole duration string: number–unit pairs (`d`, `h`, `m`, `s`, `ms`).
/// A Go-style duration (`"38s"`, `"6m0s"`, `"1h2m3.5s"`, `"20ms"`) in ms.
pub fn duration_ms(s: &str) -> Option<u64> {
    let mut total = 0.0_f64;
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 1.0,
            "s" | "sec" | "secs" | "seconds" => 1_000.0,
            "m" | "min" | "mins" | "minutes" => 60_000.0,
            "h" | "hr" | "hrs" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    Some(total.round() as u64)
}

#[cfg(test)]
mod tests;
