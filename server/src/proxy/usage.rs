//! Token usage from OpenAI-style bodies and stream chunks, for the log.

use serde::Deserialize;

#[derive(Debug, Default, Clone, Copy, PartialEq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<i64>,
    #[serde(default)]
    pub completion_tokens: Option<i64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Deserialize)]
pub struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<i64>,
}

impl Usage {
    pub fn cached(&self) -> Option<i64> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }
}

#[derive(Deserialize)]
struct WithUsage {
    #[serde(default)]
    usage: Option<Usage>,
}

/// The `usage` object of a JSON body, if any.
pub fn from_body(body: &[u8]) -> Option<Usage> {
    serde_json::from_slice::<WithUsage>(body).ok()?.usage
}

/// The usage of an SSE chunk's `data:` lines. Cheap when absent: lines are
/// only parsed when the chunk mentions `"usage"` with a value.
pub fn from_sse_chunk(chunk: &[u8]) -> Option<Usage> {
    const NEEDLE: &[u8] = b"\"usage\":{";
    if !chunk.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return None;
    }
    chunk
        .split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data: ").or_else(|| line.strip_prefix(b"data:")))
        .find_map(from_body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_usage_in_body_and_stream() {
        let u = from_body(
            br#"{"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}"#,
        )
        .unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens, u.cached()), (Some(3), Some(4), Some(2)));
        let chunk = b"data: {\"choices\":[]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1}}\n\n";
        assert_eq!(from_sse_chunk(chunk).unwrap().prompt_tokens, Some(9));
        assert_eq!(from_sse_chunk(b"data: {\"usage\":null}\n\n"), None);
    }
}
