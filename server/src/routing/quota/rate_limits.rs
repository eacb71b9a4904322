//! The rate-limit headers of API-key answers: OpenAI's
//! `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` and Anthropic's
//! `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`,
//! the provider's short windows (per minute, per day), read in one pass
//! over the answer's header names.

use http::HeaderMap;

use super::Window;
use crate::resilience::retry_hints;

const KINDS: [&str; 4] = ["requests", "tokens", "input-tokens", "output-tokens"];

#[derive(Default, Clone, Copy)]
struct Parts {
    limit: Option<f64>,
    remaining: Option<f64>,
    reset_at_ms: Option<i64>,
}

/// The windows `headers` report, in one pass over them.
pub fn windows(headers: &HeaderMap, now_ms: i64) -> Vec<Window> {
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
    use super::{super::test_headers as headers, *};

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
}
