//! Token usage, for the log: [`Counts`] reads a usage object as any of
//! the four protocols states it, in the parse the gateway already makes —
//! of a passed-through answer (which also tells whether a 2xx body is an
//! answer at all: JSON, not an error object), and of each stream event
//! (`proxy::stream::progress`, which the watchdogs read anyway).

use app::types::Protocol;
use serde::Deserialize;

use crate::protocols::ir;

/// A usage object's counts, in whichever protocol's words: OpenAI Chat
/// (`prompt_tokens`…), Anthropic and Responses (`input_tokens`…), Gemini
/// (`usageMetadata`: `promptTokenCount`…). Stream events each carry some
/// of them (Anthropic: input at `message_start`, output at
/// `message_delta`); [`Counts::merge`] keeps the latest of each.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Counts {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Cached>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<Cached>,
    #[serde(default, rename = "promptTokenCount")]
    prompt_token_count: Option<u64>,
    #[serde(default, rename = "candidatesTokenCount")]
    candidates_token_count: Option<u64>,
    #[serde(default, rename = "thoughtsTokenCount")]
    thoughts_token_count: Option<u64>,
    #[serde(default, rename = "cachedContentTokenCount")]
    cached_content_token_count: Option<u64>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
struct Cached {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl Counts {
    /// Keeps every count `later` states, and the others as they were.
    pub fn merge(&mut self, later: &Counts) {
        macro_rules! latest {
            ($($f:ident),*) => { $( if later.$f.is_some() { self.$f = later.$f; } )* };
        }
        latest!(
            prompt_tokens,
            completion_tokens,
            prompt_tokens_details,
            input_tokens,
            output_tokens,
            cache_read_input_tokens,
            cache_creation_input_tokens,
            input_tokens_details,
            prompt_token_count,
            candidates_token_count,
            thoughts_token_count,
            cached_content_token_count
        );
    }

    /// The counts as the log keeps them — all input (cache reads
    /// included), all output (reasoning included), cache reads — when the
    /// upstream stated any.
    pub fn usage(&self, protocol: Protocol) -> Option<ir::Usage> {
        let sum = |a: Option<u64>, b: Option<u64>| a.map(|a| a + b.unwrap_or(0)).or(b);
        let (input, output, cached) = match protocol {
            Protocol::OpenaiChat => {
                (self.prompt_tokens, self.completion_tokens, self.prompt_tokens_details.and_then(|d| d.cached_tokens))
            }
            // Anthropic counts input without what the cache served or took.
            Protocol::Anthropic => (
                sum(sum(self.input_tokens, self.cache_read_input_tokens), self.cache_creation_input_tokens),
                self.output_tokens,
                self.cache_read_input_tokens,
            ),
            Protocol::Responses => {
                (self.input_tokens, self.output_tokens, self.input_tokens_details.and_then(|d| d.cached_tokens))
            }
            Protocol::Gemini => (
                self.prompt_token_count,
                sum(self.candidates_token_count, self.thoughts_token_count),
                self.cached_content_token_count,
            ),
        };
        (input.is_some() || output.is_some()).then(|| ir::Usage {
            input_tokens: input.unwrap_or(0),
            output_tokens: output.unwrap_or(0),
            cached_tokens: cached,
        })
    }
}

/// A passed-through 2xx body, as far as the gateway reads it.
#[derive(Deserialize)]
struct PassedAnswer {
    #[serde(default, alias = "usageMetadata")]
    usage: Option<Counts>,
    /// Non-null only when the "answer" is an error.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// A passed-through 2xx body's usage (in `protocol`'s words) — or why it
/// is no answer: not JSON (empty, an HTML page, cut short) or an error
/// object.
pub fn read_answer(protocol: Protocol, body: &[u8]) -> Result<Option<ir::Usage>, String> {
    let answer: PassedAnswer =
        serde_json::from_slice(body).map_err(|e| format!("the upstream's 2xx answer is not JSON: {e}"))?;
    match answer.error {
        None => Ok(answer.usage.and_then(|u| u.usage(protocol))),
        Some(e) => {
            let message = e.get("message").and_then(|m| m.as_str()).map_or_else(|| e.to_string(), str::to_owned);
            Err(format!("the upstream answered 2xx with an error: {message}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocols_usage_reads_as_all_input_all_output_and_cache_reads() {
        let read = |p, body: &str| read_answer(p, body.as_bytes()).unwrap().unwrap();
        let usage =
            |input, output, cached| ir::Usage { input_tokens: input, output_tokens: output, cached_tokens: cached };
        let chat = r#"{"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}"#;
        assert_eq!(read(Protocol::OpenaiChat, chat), usage(3, 4, Some(2)));
        let anthropic = r#"{"usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":7}}"#;
        assert_eq!(read(Protocol::Anthropic, anthropic), usage(18, 7, Some(10)));
        let responses = r#"{"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":8},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}}"#;
        assert_eq!(read(Protocol::Responses, responses), usage(12, 5, Some(8)));
        let gemini = r#"{"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4,"thoughtsTokenCount":6,"cachedContentTokenCount":1}}"#;
        assert_eq!(read(Protocol::Gemini, gemini), usage(9, 10, Some(1)));
        assert_eq!(read_answer(Protocol::OpenaiChat, br#"{"choices":[]}"#), Ok(None));
    }

    #[test]
    fn stream_events_merge_into_the_latest_of_each_count() {
        let counts = |json: &str| serde_json::from_str::<Counts>(json).unwrap();
        let mut total = counts(r#"{"input_tokens":20,"cache_read_input_tokens":100,"output_tokens":1}"#);
        total.merge(&counts(r#"{"output_tokens":42}"#));
        let usage = total.usage(Protocol::Anthropic).unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens, usage.cached_tokens), (120, 42, Some(100)));
        assert_eq!(Counts::default().usage(Protocol::Gemini), None, "nothing stated, nothing claimed");
    }

    #[test]
    fn a_passed_through_answer_must_be_json_and_no_error() {
        let read = |body: &[u8]| read_answer(Protocol::OpenaiChat, body);
        let ok = read(br#"{"id":"r","error":null,"usage":{"prompt_tokens":3}}"#).unwrap();
        assert_eq!(ok.map(|u| u.input_tokens), Some(3));
        for not_json in [&b""[..], b"<html>502 Bad Gateway</html>", br#"{"choices":[{"message":"#] {
            assert!(read(not_json).unwrap_err().contains("not JSON"));
        }
        let e = read(br#"{"error":{"message":"model overloaded","code":503}}"#).unwrap_err();
        assert!(e.ends_with("with an error: model overloaded"), "{e}");
    }
}
