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
