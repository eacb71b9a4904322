//! Scripted behaviour: rules that say how the fake answers a matching
//! request (status, headers, body, latency, stalls, drops, trickle).

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One scripted behaviour. Every `match*` field that is set must match;
/// the newest matching rule wins. Fields not set keep the default answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// Request path prefix, e.g. `/v1/chat/completions`.
    #[serde(default)]
    pub path: Option<String>,
    /// The `model` of the request body (or Gemini URL model).
    #[serde(default)]
    pub model: Option<String>,
    /// The credential the request carries (Bearer, x-api-key or `key=`).
    #[serde(default)]
    pub api_key: Option<String>,
    /// Apply this many times, then fall through. `None` = forever.
    #[serde(default)]
    pub times: Option<u32>,
    /// Answer with this status instead of 200 (non-2xx → error body).
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Replaces the body: a JSON value, or a string sent verbatim.
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    /// Delay before the response headers, in ms.
    #[serde(default)]
    pub latency_ms: u64,
    /// Text the assistant answers with (split into stream chunks).
    #[serde(default)]
    pub content: Option<String>,
    /// Answer with this tool call instead of text (in the request's protocol).
    #[serde(default)]
    pub tool_call: Option<crate::tool_call::ToolCall>,
    /// Stream: stop sending (but keep the connection open) after N chunks.
    #[serde(default)]
    pub stall_after_chunks: Option<u32>,
    /// Drop the connection after N body chunks (0 = right after headers).
    #[serde(default)]
    pub drop_after_chunks: Option<u32>,
    /// End the body cleanly after N chunks (0 = headers, then the end).
    #[serde(default)]
    pub end_after_chunks: Option<u32>,
    /// Stream: delay between chunks, in ms.
    #[serde(default)]
    pub trickle_ms: u64,
    /// Stream: after the last frame (the terminator), send a late event
    /// and keep the connection open instead of ending the body.
    /// (`garble*`, `linger` and `error_after_chunks` leave JSON answers be.)
    #[serde(default)]
    pub linger: bool,
    /// Stream: from frame N on, the frames turn to garbage (see `garble`).
    #[serde(default)]
    pub garble_after_chunks: Option<u32>,
    /// How the frames turn to garbage (default: a line that is not JSON).
    #[serde(default)]
    pub garble: Garble,
    /// Stream: after N frames, the protocol's in-band error event ends it.
    #[serde(default)]
    pub error_after_chunks: Option<u32>,
}

/// Ways a stream turns to garbage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Garble {
    /// An event whose data is an HTML error page, then the rest.
    #[default]
    NotJson,
    /// A 2 MB line without its end, then the rest.
    Oversize,
    /// The rest framed with bare carriage returns instead of line feeds.
    BareCr,
}

/// The late event a lingering stream sends after its terminator.
pub const LATE_EVENT: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" LATE\"}}]}\n\n";

impl Garble {
    /// `frames` with everything from frame `at` on garbled.
    pub fn apply(self, mut frames: Vec<bytes::Bytes>, at: usize) -> Vec<bytes::Bytes> {
        let at = at.min(frames.len());
        match self {
            Self::NotJson => {
                frames.insert(at, bytes::Bytes::from_static(b"data: <html><body>502 Bad Gateway</body></html>\n\n"))
            }
            Self::Oversize => {
                let mut line = b"data: ".to_vec();
                line.resize(2 * 1024 * 1024, b'x');
                frames.insert(at, bytes::Bytes::from(line));
            }
            Self::BareCr => {
                for f in &mut frames[at..] {
                    *f =
                        bytes::Bytes::from(f.iter().map(|b| if *b == b'\n' { b'\r' } else { *b }).collect::<Vec<u8>>());
                }
            }
        }
        frames
    }
}

/// What the fake knows about an incoming request, for matching.
pub struct RequestFacts<'a> {
    pub path: &'a str,
    pub model: Option<&'a str>,
    pub api_key: Option<&'a str>,
}

impl Rule {
    fn matches(&self, facts: &RequestFacts<'_>) -> bool {
        self.path.as_deref().is_none_or(|p| facts.path.starts_with(p))
            && self.model.as_deref().is_none_or(|m| facts.model == Some(m))
            && self.api_key.as_deref().is_none_or(|k| facts.api_key == Some(k))
    }
}

/// The rule list. Matching consumes one use of a `times`-bounded rule.
#[derive(Default)]
pub struct Script {
    rules: Mutex<Vec<Rule>>,
}

impl Script {
    pub fn push(&self, rule: Rule) {
        self.rules.lock().push(rule);
    }

    pub fn clear(&self) {
        self.rules.lock().clear();
    }

    /// The newest rule matching `facts`, with one use consumed.
    pub fn take(&self, facts: &RequestFacts<'_>) -> Option<Rule> {
        let mut rules = self.rules.lock();
        let idx = rules.iter().rposition(|r| r.matches(facts))?;
        let rule = rules[idx].clone();
        if let Some(times) = rules[idx].times.as_mut() {
            *times = times.saturating_sub(1);
            if *times == 0 {
                rules.remove(idx);
            }
        }
        Some(rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(path: &'a str, key: Option<&'a str>) -> RequestFacts<'a> {
        RequestFacts { path, model: Some("m"), api_key: key }
    }

    #[test]
    fn newest_matching_rule_wins_and_times_expire() {
        let s = Script::default();
        s.push(Rule { status: Some(500), ..Default::default() });
        s.push(Rule { status: Some(503), times: Some(1), api_key: Some("a".into()), ..Default::default() });
        assert_eq!(s.take(&facts("/v1/x", Some("b"))).unwrap().status, Some(500));
        assert_eq!(s.take(&facts("/v1/x", Some("a"))).unwrap().status, Some(503));
        assert_eq!(s.take(&facts("/v1/x", Some("a"))).unwrap().status, Some(500));
    }
}
