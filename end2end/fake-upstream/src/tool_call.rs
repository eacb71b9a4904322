//! Scripted tool calls: the answer, in each protocol, of a model that
//! calls one function (`Rule::tool_call`), as a JSON body and as stream
//! frames with the arguments split across deltas.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::responses::{Kind, item_added, responses_created, sse};

/// The call a scripted answer makes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
}

/// The call id every protocol's answer uses.
pub const CALL_ID: &str = "call_fake_1";

pub fn json_body(kind: Kind, model: &str, call: &ToolCall) -> Value {
    let args = call.arguments.to_string();
    match kind {
        Kind::Anthropic | Kind::AnthropicCountTokens => json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "tool_use", "id": CALL_ID, "name": call.name, "input": call.arguments}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
        Kind::Responses => json!({
            "id": "resp_fake", "object": "response", "status": "completed", "model": model,
            "output": [{"type": "function_call", "id": "fc_fake", "call_id": CALL_ID, "name": call.name,
                        "arguments": args, "status": "completed"}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        }),
        Kind::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"id": CALL_ID, "name": call.name, "args": call.arguments}}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model
        }),
        Kind::OpenaiChat | Kind::Models | Kind::GeminiModels => json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": CALL_ID, "type": "function", "function": {"name": call.name, "arguments": args}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }),
    }
}

pub fn stream_frames(kind: Kind, model: &str, call: &ToolCall) -> Vec<Bytes> {
    let args = call.arguments.to_string();
    let (head, tail) = args.split_at(args.len() / 2);
    match kind {
        Kind::Anthropic | Kind::AnthropicCountTokens => {
            let delta = |part: &str| {
                sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
                )
            };
            vec![
                sse(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
                    "role": "assistant", "model": model, "content": [], "usage": {"input_tokens": 10, "output_tokens": 0}}}),
                ),
                sse(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": CALL_ID, "name": call.name, "input": {}}}),
                ),
                delta(head),
                delta(tail),
                sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0})),
                sse(
                    Some("message_delta"),
                    &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
                ),
                sse(Some("message_stop"), &json!({"type": "message_stop"})),
            ]
        }
        Kind::Responses => {
            let delta = |part: &str| {
                sse(
                    Some("response.function_call_arguments.delta"),
                    &json!({"type": "response.function_call_arguments.delta",
                    "item_id": "fc_fake", "output_index": 0, "delta": part}),
                )
            };
            vec![
                responses_created(model),
                item_added(
                    json!({"type": "function_call", "id": "fc_fake", "call_id": CALL_ID, "name": call.name, "arguments": ""}),
                ),
                delta(head),
                delta(tail),
                sse(
                    Some("response.function_call_arguments.done"),
                    &json!({"type": "response.function_call_arguments.done",
                    "item_id": "fc_fake", "output_index": 0, "arguments": args}),
                ),
                sse(
                    Some("response.output_item.done"),
                    &json!({"type": "response.output_item.done", "output_index": 0,
                    "item": json_body(kind, model, call)["output"][0]}),
                ),
                sse(
                    Some("response.completed"),
                    &json!({"type": "response.completed", "response": json_body(kind, model, call)}),
                ),
            ]
        }
        Kind::Gemini => vec![sse(None, &json_body(kind, model, call))],
        Kind::OpenaiChat | Kind::Models | Kind::GeminiModels => {
            let chunk = |delta: Value, finish: Value| {
                sse(
                    None,
                    &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
                                  "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
                )
            };
            vec![
                chunk(json!({"role": "assistant", "content": null}), Value::Null),
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": CALL_ID, "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
                    Value::Null,
                ),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": head}}]}), Value::Null),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}), Value::Null),
                chunk(json!({}), json!("tool_calls")),
                Bytes::from_static(b"data: [DONE]\n\n"),
            ]
        }
    }
}
