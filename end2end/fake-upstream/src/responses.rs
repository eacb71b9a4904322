//! Canned answers in each upstream protocol: a JSON body and the SSE
//! frames of the same answer, plus each protocol's error envelope.

use bytes::Bytes;
use serde_json::{Value, json};

/// The protocol a request path speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    OpenaiChat,
    Anthropic,
    AnthropicCountTokens,
    Responses,
    Gemini,
    Models,
    GeminiModels,
}

impl Kind {
    pub fn from_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::OpenaiChat)
        } else if path.ends_with("/messages/count_tokens") {
            Some(Self::AnthropicCountTokens)
        } else if path.ends_with("/messages") {
            Some(Self::Anthropic)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
            Some(Self::Gemini)
        } else if path.starts_with("/v1beta/models") {
            Some(Self::GeminiModels)
        } else if path.ends_with("/models") {
            Some(Self::Models)
        } else {
            None
        }
    }
}

/// The model list the fake advertises.
pub const MODELS: [&str; 3] = ["fake-model", "fake-model-mini", "gpt-4o-mini"];

/// The default assistant text.
pub const DEFAULT_CONTENT: &str = "Hello from fake-upstream.";

pub fn models_body(kind: Kind) -> Value {
    if kind == Kind::GeminiModels {
        json!({"models": MODELS.iter().map(|m| json!({"name": format!("models/{m}")})).collect::<Vec<_>>()})
    } else {
        json!({"object": "list", "data": MODELS.iter().map(|m| json!({"id": m, "object": "model", "owned_by": "fake"})).collect::<Vec<_>>()})
    }
}

/// Token counts the fake reports: a crude estimate from the request size.
pub fn usage(prompt_bytes: usize, content: &str) -> (u64, u64) {
    ((prompt_bytes / 4).max(1) as u64, content.split_whitespace().count().max(1) as u64)
}

pub fn json_body(kind: Kind, model: &str, content: &str, prompt_bytes: usize) -> Value {
    let (pt, ct) = usage(prompt_bytes, content);
    match kind {
        Kind::Anthropic => json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": pt, "output_tokens": ct}
        }),
        Kind::AnthropicCountTokens => json!({"input_tokens": pt}),
        Kind::Responses => json!({
            "id": "resp_fake", "object": "response", "status": "completed", "model": model,
            "output": [{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}]}],
            "usage": {"input_tokens": pt, "output_tokens": ct, "total_tokens": pt + ct}
        }),
        Kind::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": content}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": pt, "candidatesTokenCount": ct, "totalTokenCount": pt + ct},
            "modelVersion": model
        }),
        Kind::OpenaiChat | Kind::Models | Kind::GeminiModels => json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        }),
    }
}

pub fn sse(event: Option<&str>, data: &Value) -> Bytes {
    match event {
        Some(e) => Bytes::from(format!("event: {e}\ndata: {data}\n\n")),
        None => Bytes::from(format!("data: {data}\n\n")),
    }
}

/// `response.created` of a Responses stream.
pub fn responses_created(model: &str) -> Bytes {
    sse(
        Some("response.created"),
        &json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress", "model": model}}),
    )
}

/// `response.output_item.added` for the first output item.
pub fn item_added(item: Value) -> Bytes {
    sse(
        Some("response.output_item.added"),
        &json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
    )
}

/// Splits `content` into word-sized pieces, keeping the spaces.
fn pieces(content: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in content.char_indices() {
        if c == ' ' && i > start {
            out.push(&content[start..i]);
            start = i;
        }
    }
    if start < content.len() {
        out.push(&content[start..]);
    }
    out
}

/// The SSE frames of one answer, in order.
pub fn stream_frames(kind: Kind, model: &str, content: &str, prompt_bytes: usize) -> Vec<Bytes> {
    let (pt, ct) = usage(prompt_bytes, content);
    let parts = pieces(content);
    match kind {
        Kind::Anthropic | Kind::AnthropicCountTokens => {
            let mut f = vec![
                sse(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "usage": {"input_tokens": pt, "output_tokens": 0}}}),
                ),
                sse(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
            ];
            f.extend(parts.iter().map(|p| {
                sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
                )
            }));
            f.push(sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0})));
            f.push(sse(Some("message_delta"), &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": ct}})));
            f.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
            f
        }
        Kind::Responses => {
            let done = json_body(Kind::Responses, model, content, prompt_bytes);
            let at = json!({"item_id": "msg_fake", "output_index": 0, "content_index": 0});
            let with = |kind: &str, key: &str, value: Value| {
                let mut v = at.clone();
                v["type"] = json!(kind);
                v[key] = value;
                sse(Some(kind), &v)
            };
            let mut f = vec![
                responses_created(model),
                item_added(
                    json!({"type": "message", "id": "msg_fake", "status": "in_progress", "role": "assistant", "content": []}),
                ),
                with(
                    "response.content_part.added",
                    "part",
                    json!({"type": "output_text", "text": "", "annotations": []}),
                ),
            ];
            f.extend(parts.iter().map(|p| with("response.output_text.delta", "delta", json!(p))));
            f.push(with("response.output_text.done", "text", json!(content)));
            f.push(with("response.content_part.done", "part", done["output"][0]["content"][0].clone()));
            f.push(sse(
                Some("response.output_item.done"),
                &json!({"type": "response.output_item.done", "output_index": 0, "item": done["output"][0]}),
            ));
            f.push(sse(Some("response.completed"), &json!({"type": "response.completed", "response": done})));
            f
        }
        Kind::Gemini => {
            let mut f: Vec<Bytes> = parts
                .iter()
                .map(|p| sse(None, &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}], "modelVersion": model})))
                .collect();
            f.push(sse(None, &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": pt, "candidatesTokenCount": ct, "totalTokenCount": pt + ct}})));
            f
        }
        Kind::OpenaiChat | Kind::Models | Kind::GeminiModels => {
            let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            let mut f = vec![sse(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
            f.extend(parts.iter().map(|p| sse(None, &chunk(json!({"content": p}), Value::Null))));
            f.push(sse(None, &chunk(json!({}), json!("stop"))));
            f.push(sse(None, &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model, "choices": [], "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})));
            f.push(Bytes::from_static(b"data: [DONE]\n\n"));
            f
        }
    }
}

/// The error event an upstream of `kind` sends inside a stream.
pub fn stream_error_frame(kind: Kind) -> Bytes {
    match kind {
        Kind::Anthropic | Kind::AnthropicCountTokens => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Kind::Responses => {
            sse(Some("error"), &json!({"type": "error", "code": "server_error", "message": "upstream overloaded"}))
        }
        Kind::Gemini | Kind::GeminiModels => {
            sse(None, &json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}))
        }
        Kind::OpenaiChat | Kind::Models => {
            sse(None, &json!({"error": {"message": "upstream overloaded", "type": "server_error"}}))
        }
    }
}

/// The default error body for a scripted non-2xx status.
pub fn error_body(kind: Kind, status: u16) -> Value {
    let message = format!("fake upstream error {status}");
    match kind {
        Kind::Anthropic | Kind::AnthropicCountTokens => {
            let t = if status == 429 {
                "rate_limit_error"
            } else if status >= 500 {
                "api_error"
            } else {
                "invalid_request_error"
            };
            json!({"type": "error", "error": {"type": t, "message": message}})
        }
        Kind::Gemini | Kind::GeminiModels => {
            json!({"error": {"code": status, "message": message, "status": "UNAVAILABLE"}})
        }
        _ => {
            let t = if status == 429 {
                "rate_limit_error"
            } else if status >= 500 {
                "server_error"
            } else {
                "invalid_request_error"
            };
            json!({"error": {"message": message, "type": t, "code": status}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_stream_ends_with_done_and_carries_all_text() {
        let frames = stream_frames(Kind::OpenaiChat, "m", "a b c", 40);
        assert_eq!(frames.last().unwrap().as_ref(), b"data: [DONE]\n\n");
        let text: String = frames
            .iter()
            .filter_map(|f| std::str::from_utf8(f).ok()?.strip_prefix("data: ").map(str::to_owned))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(text, "a b c");
    }

    #[test]
    fn paths_map_to_protocols() {
        assert_eq!(Kind::from_path("/v1/chat/completions"), Some(Kind::OpenaiChat));
        assert_eq!(Kind::from_path("/v1/messages"), Some(Kind::Anthropic));
        assert_eq!(Kind::from_path("/v1beta/models/g:streamGenerateContent"), Some(Kind::Gemini));
        assert_eq!(Kind::from_path("/v1beta/models"), Some(Kind::GeminiModels));
        assert_eq!(Kind::from_path("/nope"), None);
    }
}
