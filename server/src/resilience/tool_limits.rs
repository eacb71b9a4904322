//! Dynamic tool-limit detection (SPEC §R8). Providers cap how many tools a
//! request may declare (OpenAI: 128) and refuse a longer list with a 400.
//! Coding agents with many MCP servers cross such caps, and in a combo the
//! request should go to a target that takes it rather than end on that
//! refusal — and later requests with as many tools should not ask there
//! again. So a refusal for the tool count is remembered per provider and
//! model: the smallest count known to be refused (one more than the limit
//! the message states, else the count sent). In memory: a restart
//! relearns it from the next refusal. What is learnt goes in an outbox, so
//! that other instances on a shared database learn it too.
//!
//! The table is empty until a provider first refuses; until then a request
//! pays one atomic load to learn there is nothing to check.

use dashmap::DashMap;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use crate::outbox::Outbox;

/// What was learnt: the refused count per provider and model.
pub type ToolLimitChanges = Outbox<(&'static str, String), usize>;

/// Counts of tools each provider and model refused.
pub struct ToolLimits {
    any: AtomicBool,
    refused_from: DashMap<(&'static str, String), usize>,
    changes: Arc<ToolLimitChanges>,
}

impl ToolLimits {
    /// An empty table whose lessons go to `changes`.
    pub fn new(changes: Arc<ToolLimitChanges>) -> Self {
        Self { any: AtomicBool::new(false), refused_from: DashMap::new(), changes }
    }

    /// Remembers that `provider`'s `model` refuses `refused_from` tools or more.
    pub fn learn(&self, provider: &'static str, model: &str, refused_from: usize) {
        if self.keep(provider, model, refused_from) {
            self.changes.put((provider, model.to_owned()), refused_from);
        }
    }

    /// What another instance learnt (not put in the outbox again).
    pub fn adopt(&self, provider: &'static str, model: &str, refused_from: usize) {
        self.keep(provider, model, refused_from);
    }

    /// Keeps the smaller count; whether it was news.
    fn keep(&self, provider: &'static str, model: &str, refused_from: usize) -> bool {
        let mut entry = self.refused_from.entry((provider, model.to_owned())).or_insert(usize::MAX);
        let news = refused_from < *entry;
        *entry = (*entry).min(refused_from);
        self.any.store(true, Ordering::Relaxed);
        news
    }

    /// The smallest count of tools `provider`'s `model` is known to refuse.
    pub fn refused_from(&self, provider: &'static str, model: &str) -> Option<usize> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        self.refused_from.get(&(provider, model.to_owned())).map(|n| *n)
    }
}

/// The smallest tool count an upstream's refusal (`status`, `body`) says
/// it refuses, when it refused the request for its count of `sent` tools.
pub fn refusal(status: u16, body: &str, sent: usize) -> Option<usize> {
    if sent == 0 || !matches!(status, 400 | 413 | 422) {
        return None;
    }
    let text = body.to_ascii_lowercase();
    let about_tools = ["too many tools", "'tools': array too long", "tools: array too long", "number of tools"]
        .iter()
        .any(|p| text.contains(p))
        || (text.contains("tools") && ["exceed", "at most", "maximum", "limit"].iter().any(|p| text.contains(p)));
    if !about_tools {
        return None;
    }
    let stated = ["maximum length ", "maximum of ", "at most ", "limit of ", "limit is ", "up to ", "max "]
        .iter()
        .find_map(|phrase| number_after(&text, phrase))
        .filter(|limit| *limit < sent);
    Some(stated.map_or(sent, |limit| limit + 1))
}

fn number_after(text: &str, phrase: &str) -> Option<usize> {
    let rest = &text[text.find(phrase)? + phrase.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_for_the_tool_count_are_recognised_with_their_limit() {
        let openai = r#"{"error":{"message":"Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 140 instead.","type":"invalid_request_error","param":"tools","code":"array_above_max_length"}}"#;
        assert_eq!(refusal(400, openai, 140), Some(129));
        assert_eq!(refusal(400, r#"{"error":{"message":"too many tools: at most 64 are allowed"}}"#, 70), Some(65));
        assert_eq!(refusal(400, "the number of tools exceeds what this model supports", 30), Some(30));
        assert_eq!(refusal(422, "tools exceed the limit", 12), Some(12), "no number: the count sent");
    }

    #[test]
    fn other_refusals_are_not_about_the_tool_count() {
        assert_eq!(refusal(400, "tool_choice must name one of the tools", 3), None);
        assert_eq!(refusal(400, "maximum context length is 8192 tokens", 3), None);
        assert_eq!(refusal(500, "too many tools", 3), None, "only a refusal of the request");
        assert_eq!(refusal(400, "too many tools", 0), None, "a request without tools");
        assert_eq!(
            refusal(400, "tools: at most 200 allowed", 150),
            Some(150),
            "a stated limit above what was sent is not believed"
        );
    }

    #[test]
    fn the_smallest_refused_count_is_kept_per_provider_and_model() {
        let changes = Outbox::detached();
        let limits = ToolLimits::new(changes.clone());
        assert_eq!(limits.refused_from("openai", "gpt-4o"), None);
        limits.learn("openai", "gpt-4o", 140);
        limits.learn("openai", "gpt-4o", 129);
        limits.learn("openai", "gpt-4o", 135);
        assert_eq!(limits.refused_from("openai", "gpt-4o"), Some(129));
        assert_eq!(
            changes.take().into_iter().collect::<Vec<_>>(),
            [(("openai", "gpt-4o".to_owned()), 129)],
            "news only"
        );
        limits.adopt("openai", "gpt-4o", 100);
        assert_eq!(limits.refused_from("openai", "gpt-4o"), Some(100));
        assert!(changes.take().is_empty(), "what another instance learnt is not sent back");
        assert_eq!(limits.refused_from("openai", "gpt-4o-mini"), None);
        assert_eq!(limits.refused_from("deepseek", "gpt-4o"), None);
    }
}
