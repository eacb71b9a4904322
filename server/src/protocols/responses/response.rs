//! Responses answers (not streamed) ⇄ the internal representation.

use serde_json::{Value, json};

use crate::protocols::{
    ir::{Part, Response, StopReason, Usage},
    json as j,
};

pub fn read_response(body: &Value) -> j::Result<Response> {
    let o = j::object(body, "response")?;
    let mut parts = Vec::new();
    for item in j::array(o, "output", "")?.into_iter().flatten() {
        match item["type"].as_str().unwrap_or_default() {
            "message" => {
                for c in item["content"].as_array().into_iter().flatten() {
                    if let Some(t) = c["text"].as_str().or(c["refusal"].as_str()) {
                        parts.push(Part::Text(t.to_owned()));
                    }
                }
            }
            "reasoning" => {
                let text: Vec<&str> = ["summary", "content"]
                    .iter()
                    .flat_map(|k| item[*k].as_array().into_iter().flatten())
                    .filter_map(|s| s["text"].as_str())
                    .collect();
                if !text.is_empty() {
                    parts.push(Part::Reasoning { text: text.join("\n"), signature: None });
                }
            }
            "function_call" => parts.push(Part::ToolCall {
                id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                name: item["name"].as_str().unwrap_or_default().to_owned(),
                arguments: item["arguments"].as_str().unwrap_or("{}").to_owned(),
            }),
            _ => {}
        }
    }
    let incomplete = o.get("incomplete_details").and_then(|d| d["reason"].as_str());
    let stop = match incomplete {
        Some("max_output_tokens") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::ContentFilter,
        _ if parts.iter().any(|p| matches!(p, Part::ToolCall { .. })) => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    };
    Ok(Response {
        id: j::string(o, "id", "")?.unwrap_or_default(),
        model: j::string(o, "model", "")?.unwrap_or_default(),
        stop,
        usage: o.get("usage").map(read_usage).unwrap_or_default(),
        parts,
    })
}

fn read_usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        cached_tokens: u.pointer("/input_tokens_details/cached_tokens").and_then(Value::as_u64),
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens.unwrap_or(0)},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

/// Responses ids start with `resp_`; other protocols' ids get the prefix.
fn response_id(id: &str) -> String {
    if id.starts_with("resp_") {
        id.to_owned()
    } else {
        format!("resp_{}", id.trim_start_matches("chatcmpl-").trim_start_matches("msg_"))
    }
}

/// The response object around `output`.
pub(super) fn response_object(
    id: &str,
    model: &str,
    created: i64,
    stop: Option<StopReason>,
    output: Vec<Value>,
    usage: Option<&Usage>,
) -> Value {
    let (status, incomplete) = match stop {
        None => ("in_progress", Value::Null),
        Some(StopReason::MaxTokens) => ("incomplete", json!({"reason": "max_output_tokens"})),
        Some(StopReason::ContentFilter) => ("incomplete", json!({"reason": "content_filter"})),
        Some(_) => ("completed", Value::Null),
    };
    json!({
        "id": response_id(id), "object": "response", "created_at": created, "status": status,
        "model": model, "output": output, "incomplete_details": incomplete, "error": null,
        "usage": usage.map(usage_json),
    })
}

pub fn write_response(r: &Response, created: i64) -> Value {
    let mut output = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    let flush = |texts: &mut Vec<&str>, output: &mut Vec<Value>| {
        if !texts.is_empty() {
            let n = output.len();
            output.push(message_item(&format!("msg_{n}"), &texts.concat(), "completed"));
            texts.clear();
        }
    };
    for p in &r.parts {
        match p {
            Part::Text(t) => texts.push(t),
            Part::Reasoning { text, .. } => {
                flush(&mut texts, &mut output);
                let n = output.len();
                output.push(reasoning_item(&format!("rs_{n}"), text));
            }
            Part::ToolCall { id, name, arguments } => {
                flush(&mut texts, &mut output);
                let n = output.len();
                output.push(call_item(&format!("fc_{n}"), id, name, arguments, "completed"));
            }
            Part::Image(_) | Part::ToolResult { .. } => {}
        }
    }
    flush(&mut texts, &mut output);
    response_object(&r.id, &r.model, created, Some(r.stop), output, Some(&r.usage))
}

pub(super) fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({"type": "message", "id": id, "status": status, "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

pub(super) fn reasoning_item(id: &str, text: &str) -> Value {
    json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": text}]})
}

pub(super) fn call_item(id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments, "status": status})
}

// ---- streams ------------------------------------------------------------
