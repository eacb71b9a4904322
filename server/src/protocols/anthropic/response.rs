//! Anthropic answers (not streamed) ⇄ the internal representation.

use serde_json::{Value, json};

use super::{read_block, write_block};
use crate::protocols::{
    ir::{Part, Response, StopReason, Usage},
    json::{self as j, path},
};

pub fn read_response(body: &Value) -> j::Result<Response> {
    let o = j::object(body, "response")?;
    let content = j::array(o, "content", "")?.map(Vec::as_slice).unwrap_or_default();
    let parts = content
        .iter()
        .enumerate()
        .filter_map(|(i, b)| read_block(b, &path("content", i)).transpose())
        .collect::<j::Result<Vec<_>>>()?;
    Ok(Response {
        id: j::string(o, "id", "")?.unwrap_or_default(),
        model: j::string(o, "model", "")?.unwrap_or_default(),
        stop: j::string(o, "stop_reason", "")?.as_deref().map_or(StopReason::EndTurn, stop_from),
        usage: j::field(o, "usage").map(read_usage).unwrap_or_default(),
        parts,
    })
}

pub(super) fn read_usage(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let cached = n("cache_read_input_tokens");
    Usage {
        input_tokens: n("input_tokens").unwrap_or(0)
            + cached.unwrap_or(0)
            + n("cache_creation_input_tokens").unwrap_or(0),
        output_tokens: n("output_tokens").unwrap_or(0),
        cached_tokens: cached,
    }
}

pub(super) fn usage_json(u: &Usage) -> Value {
    let cached = u.cached_tokens.unwrap_or(0);
    json!({
        "input_tokens": u.input_tokens.saturating_sub(cached),
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    })
}

pub(super) fn stop_from(reason: &str) -> StopReason {
    match reason {
        "max_tokens" => StopReason::MaxTokens,
        "tool_use" => StopReason::ToolUse,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

pub(super) fn stop_name(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::ToolUse => "tool_use",
        StopReason::StopSequence => "stop_sequence",
        StopReason::ContentFilter => "refusal",
    }
}

pub fn write_response(r: &Response) -> Value {
    json!({
        "id": message_id(&r.id),
        "type": "message",
        "role": "assistant",
        "model": r.model,
        "content": r.parts.iter().filter_map(write_response_block).collect::<Vec<_>>(),
        "stop_reason": stop_name(r.stop),
        "stop_sequence": null,
        "usage": usage_json(&r.usage),
    })
}

/// Like [`write_block`], but unsigned reasoning is still shown to the
/// client (it came from another protocol's model).
fn write_response_block(p: &Part) -> Option<Value> {
    match p {
        Part::Reasoning { text, signature: None } => {
            Some(json!({"type": "thinking", "thinking": text, "signature": ""}))
        }
        other => write_block(other),
    }
}

/// Anthropic ids start with `msg_`; other protocols' ids get the prefix.
pub(super) fn message_id(id: &str) -> String {
    if id.starts_with("msg_") { id.to_owned() } else { format!("msg_{}", id.trim_start_matches("chatcmpl-")) }
}

// ---- streams ------------------------------------------------------------
