//! Token usage from OpenAI-style bodies and stream chunks, for the log;
//! and, in the same parse, whether a passed-through 2xx body is an answer
//! at all (JSON, not an error object).

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

/// A passed-through 2xx body, as far as the gateway reads it.
#[derive(Deserialize)]
struct PassedAnswer {
    #[serde(default)]
    usage: Option<Usage>,
    /// Non-null only when the "answer" is an error.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// A passed-through 2xx body's usage — or why it is no answer: not JSON
/// (empty, an HTML page, cut short) or an error object.
pub fn read_answer(body: &[u8]) -> Result<Option<Usage>, String> {
    let answer: PassedAnswer =
        serde_json::from_slice(body).map_err(|e| format!("the upstream's 2xx answer is not JSON: {e}"))?;
    match answer.error {
        None => Ok(answer.usage),
        Some(e) => {
            let message = e.get("message").and_then(|m| m.as_str()).map_or_else(|| e.to_string(), str::to_owned);
            Err(format!("the upstream answered 2xx with an error: {message}"))
        }
    }
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

    #[test]
    fn a_passed_through_answer_must_be_json_and_no_error() {
        let ok = read_answer(br#"{"id":"r","error":null,"usage":{"prompt_tokens":3}}"#).unwrap();
        assert_eq!(ok.and_then(|u| u.prompt_tokens), Some(3));
        assert_eq!(read_answer(br#"{"choices":[]}"#), Ok(None));
        for not_json in [&b""[..], b"<html>502 Bad Gateway</html>", br#"{"choices":[{"message":"#] {
            assert!(read_answer(not_json).unwrap_err().contains("not JSON"));
        }
        let e = read_answer(br#"{"error":{"message":"model overloaded","code":503}}"#).unwrap_err();
        assert!(e.ends_with("with an error: model overloaded"), "{e}");
    }
}
