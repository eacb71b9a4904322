//! The client session a request belongs to, from its session headers
//! (SPEC §R2.2, in precedence order). Session affinity pins a session to a
//! connection; the key is read here for every request, and the headers
//! themselves never reach an upstream (upstream headers are built from
//! scratch) nor a log line.

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

/// Session headers, first match wins.
pub const SESSION_HEADERS: [&str; 6] = [
    "x-codex-session-id",
    "x-session-id",
    "x-omniroute-session",
    "x-claude-code-session-id",
    "session-id",
    "x-session-affinity",
];

/// Values longer than this are hashed.
const MAX_PLAIN_LEN: usize = 180;

/// `header:<value>`, or `header:sha256:<hex>` for a value that is long or
/// holds characters outside `[A-Za-z0-9._:-]`.
pub fn session_key(headers: &HeaderMap) -> Option<String> {
    let value = SESSION_HEADERS
        .iter()
        .filter_map(|name| headers.get(*name))
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .find(|v| !v.is_empty())?;
    let plain = value.len() <= MAX_PLAIN_LEN
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    Some(if plain {
        format!("header:{value}")
    } else {
        format!("header:sha256:{}", hex::encode(Sha256::digest(value)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (axum::http::HeaderName::from_static(k), v.parse().unwrap())).collect()
    }

    #[test]
    fn the_first_session_header_in_precedence_order_wins() {
        assert_eq!(session_key(&HeaderMap::new()), None);
        let h = headers(&[("session-id", "s-low"), ("x-claude-code-session-id", "cc-1"), ("x-session-id", "xs-2")]);
        assert_eq!(session_key(&h).as_deref(), Some("header:xs-2"));
        let h = headers(&[("session-id", "s-low"), ("x-codex-session-id", "codex-9")]);
        assert_eq!(session_key(&h).as_deref(), Some("header:codex-9"));
        assert_eq!(session_key(&headers(&[("x-session-affinity", "a.b_c:d-e")])).as_deref(), Some("header:a.b_c:d-e"));
        assert_eq!(session_key(&headers(&[("x-session-id", "  "), ("session-id", "s")])).as_deref(), Some("header:s"));
    }

    #[test]
    fn long_or_unusual_values_are_hashed() {
        let odd = session_key(&headers(&[("x-session-id", "user@example.com")])).unwrap();
        assert!(odd.starts_with("header:sha256:") && odd.len() == "header:sha256:".len() + 64, "{odd}");
        assert!(!odd.contains("example"));
        let long = "a".repeat(181);
        assert!(session_key(&headers(&[("x-session-id", &long)])).unwrap().starts_with("header:sha256:"));
        let edge = "a".repeat(180);
        assert_eq!(session_key(&headers(&[("x-session-id", &edge)])), Some(format!("header:{edge}")));
    }
}
