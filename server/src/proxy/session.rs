//! The client session a request belongs to (SPEC §R2.2): its session
//! headers in precedence order, else the session ids of its body, else
//! its first user text. Session affinity pins a session to a connection.
//! The headers never reach an upstream (upstream headers are built from
//! scratch) nor a log line; the key itself is only ever kept as its hash
//! ([`crate::routing::affinity::SessionId`]).

use axum::http::{HeaderMap, HeaderName};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use crate::protocols::ir;

/// Session headers, first match wins.
pub const SESSION_HEADERS: [HeaderName; 6] = [
    HeaderName::from_static("x-codex-session-id"),
    HeaderName::from_static("x-session-id"),
    HeaderName::from_static("x-omniroute-session"),
    HeaderName::from_static("x-claude-code-session-id"),
    HeaderName::from_static("session-id"),
    HeaderName::from_static("x-session-affinity"),
];

/// Values longer than this are hashed.
const MAX_PLAIN_LEN: usize = 180;

/// `header:<value>`, or `header:sha256:<hex>` for a value that is long or
/// holds characters outside `[A-Za-z0-9._:-]`.
pub fn session_key(headers: &HeaderMap) -> Option<String> {
    let value = SESSION_HEADERS
        .iter()
        .filter_map(|name| headers.get(name))
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

/// Text of the first user turn that counts, at most.
const MAX_FIRST_TEXT: usize = 4096;

/// The session ids a body may carry, borrowed as they are.
#[derive(Default, Deserialize)]
pub struct BodyIds<'a> {
    #[serde(borrow, default)]
    pub metadata: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub conversation_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub prompt_cache_key: Option<&'a RawValue>,
}

/// `body:<value>` of the first string among `metadata.session_id`
/// (or `sessionId`), `conversation_id`, `session_id`, `prompt_cache_key`.
pub fn body_session_key(ids: &BodyIds<'_>) -> Option<String> {
    #[derive(Deserialize)]
    struct Metadata {
        #[serde(default, alias = "sessionId")]
        session_id: Option<serde_json::Value>,
    }
    let string = |raw: &RawValue| match serde_json::from_str::<serde_json::Value>(raw.get()) {
        Ok(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(s),
        _ => None,
    };
    let from_metadata =
        ids.metadata.and_then(|m| serde_json::from_str::<Metadata>(m.get()).ok()).and_then(|m| match m.session_id {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(s),
            _ => None,
        });
    let value = from_metadata
        .or_else(|| ids.conversation_id.and_then(string))
        .or_else(|| ids.session_id.and_then(string))
        .or_else(|| ids.prompt_cache_key.and_then(string))?;
    Some(format!("body:{value}"))
}

/// `input:<text>` of the first user turn with text (its first 4096
/// characters), when there is one.
pub fn first_text_session_key(req: &ir::Request) -> Option<String> {
    let turn = req.messages.iter().find(|m| m.role == ir::Role::User && m.parts.iter().any(is_text))?;
    let text: String = turn
        .parts
        .iter()
        .filter_map(|p| if let ir::Part::Text(t) = p { Some(t.as_str()) } else { None })
        .flat_map(str::chars)
        .take(MAX_FIRST_TEXT)
        .collect();
    Some(format!("input:{text}"))
}

fn is_text(p: &ir::Part) -> bool {
    matches!(p, ir::Part::Text(t) if !t.is_empty())
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

    fn body_key(json: &str) -> Option<String> {
        body_session_key(&serde_json::from_str::<BodyIds<'_>>(json).unwrap())
    }

    #[test]
    fn body_ids_in_precedence_order() {
        let all = r#"{"metadata":{"session_id":"m"},"conversation_id":"c","session_id":"s","prompt_cache_key":"p"}"#;
        assert_eq!(body_key(all).as_deref(), Some("body:m"));
        assert_eq!(body_key(r#"{"metadata":{"sessionId":"camel"}}"#).as_deref(), Some("body:camel"));
        assert_eq!(
            body_key(r#"{"metadata":{"user_id":"u"},"conversation_id":"c","session_id":"s"}"#).as_deref(),
            Some("body:c")
        );
        assert_eq!(
            body_key(r#"{"conversation_id":5,"session_id":"s","prompt_cache_key":"p"}"#).as_deref(),
            Some("body:s")
        );
        assert_eq!(body_key(r#"{"session_id":" ","prompt_cache_key":"p"}"#).as_deref(), Some("body:p"));
        assert_eq!(body_key(r#"{"metadata":"x","prompt_cache_key":null}"#), None);
        assert_eq!(body_key("{}"), None);
    }

    #[test]
    fn the_first_user_text_names_a_session_without_ids() {
        let text = |s: &str| ir::Part::Text(s.into());
        let turn = |role, parts| ir::Message { role, parts };
        let mut req = ir::Request {
            messages: vec![
                turn(ir::Role::Assistant, vec![text("greeting")]),
                turn(ir::Role::User, vec![ir::Part::Image(ir::ImageSource::Url("u".into()))]),
                turn(ir::Role::User, vec![text("fix "), text("the bug")]),
                turn(ir::Role::User, vec![text("later turn")]),
            ],
            ..Default::default()
        };
        assert_eq!(first_text_session_key(&req).as_deref(), Some("input:fix the bug"));
        req.messages[2].parts = vec![text(&"x".repeat(5000))];
        assert_eq!(first_text_session_key(&req).unwrap().len(), "input:".len() + 4096);
        req.messages.truncate(2);
        assert_eq!(first_text_session_key(&req), None);
    }
}
