//! Golden tests for the directions the other files leave out, so that
//! every (client protocol, upstream protocol) pair has an exact request,
//! answer and stream test somewhere.

use super::{
    responses_gemini_tests::{frames, stream},
    tests::{to_value, translate_request},
    *,
};
use serde_json::json;

fn openai_request() -> Value {
    json!({"model": "x", "max_tokens": 50, "messages": [
        {"role": "system", "content": "Sys."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "R"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})
}

fn responses_request() -> Value {
    json!({"model": "x", "instructions": "Sys.", "max_output_tokens": 50, "input": [
        {"role": "user", "content": "Hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"},
        {"type": "function_call_output", "call_id": "c1", "output": "R"}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}]})
}

fn gemini_request() -> Value {
    json!({"systemInstruction": {"parts": [{"text": "Sys."}]}, "contents": [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "R"}}}]}],
        "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "object"}}]}],
        "generationConfig": {"maxOutputTokens": 50}})
}

fn gemini_out(id: &str) -> Value {
    json!({"contents": [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"functionCall": {"id": id, "name": "f", "args": {"a": 1}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": id, "name": "f", "response": {"output": "R"}}}]}],
        "systemInstruction": {"parts": [{"text": "Sys."}]},
        "tools": [{"functionDeclarations": [{"name": "f", "description": "", "parametersJsonSchema": {"type": "object"}}]}],
        "generationConfig": {"maxOutputTokens": 50}})
}

fn anthropic_out(id: &str) -> Value {
    json!({"model": "claude", "max_tokens": 50, "system": "Sys.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "R"}], "is_error": false}]}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}]})
}

fn responses_out(id: &str) -> Value {
    json!({"model": "gpt", "instructions": "Sys.", "store": false, "max_output_tokens": 50, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {"type": "function_call", "call_id": id, "name": "f", "arguments": "{\"a\":1}"},
        {"type": "function_call_output", "call_id": id, "output": "R"}],
        "tools": [{"type": "function", "name": "f", "description": null, "parameters": {"type": "object"}}]})
}

#[test]
fn requests_in_the_remaining_directions() {
    assert_eq!(
        translate_request(Protocol::OpenaiChat, openai_request(), Protocol::Responses, "gpt"),
        responses_out("c1")
    );
    assert_eq!(translate_request(Protocol::OpenaiChat, openai_request(), Protocol::Gemini, "g"), gemini_out("c1"));
    assert_eq!(
        translate_request(Protocol::Responses, responses_request(), Protocol::Anthropic, "claude"),
        anthropic_out("c1")
    );
    assert_eq!(translate_request(Protocol::Responses, responses_request(), Protocol::Gemini, "g"), gemini_out("c1"));
    assert_eq!(
        translate_request(Protocol::Gemini, gemini_request(), Protocol::Anthropic, "claude"),
        anthropic_out("call_0")
    );
    assert_eq!(
        translate_request(Protocol::Gemini, gemini_request(), Protocol::Responses, "gpt"),
        responses_out("call_0")
    );
}

fn answer(upstream: Protocol, body: Value, client: Protocol) -> Value {
    to_value(&response(upstream, body.to_string().as_bytes(), client, 9).unwrap().0)
}

#[test]
fn answers_in_the_remaining_directions() {
    let anthropic = json!({"id": "msg_1", "model": "c", "stop_reason": "tool_use",
        "content": [{"type": "thinking", "thinking": "T", "signature": "s"}, {"type": "text", "text": "Hi"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}],
        "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 5}});
    assert_eq!(
        answer(Protocol::Anthropic, anthropic, Protocol::Responses),
        json!({"id": "resp_1", "object": "response", "created_at": 9, "status": "completed", "model": "c",
               "incomplete_details": null, "error": null,
               "output": [
                   {"type": "reasoning", "id": "rs_0", "summary": [{"type": "summary_text", "text": "T"}]},
                   {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hi", "annotations": []}]},
                   {"type": "function_call", "id": "fc_2", "call_id": "t1", "name": "f", "arguments": "{\"a\":1}", "status": "completed"}],
               "usage": {"input_tokens": 15, "input_tokens_details": {"cached_tokens": 5}, "output_tokens": 3,
                         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 18}})
    );
    let responses = json!({"id": "resp_9", "model": "g", "status": "completed", "output": [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "T"}]},
        {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}],
        "usage": {"input_tokens": 7, "output_tokens": 2, "input_tokens_details": {"cached_tokens": 1}}});
    assert_eq!(
        answer(Protocol::Responses, responses.clone(), Protocol::OpenaiChat),
        json!({"id": "resp_9", "object": "chat.completion", "created": 9, "model": "g",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "Hi",
                   "reasoning_content": "T", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
               "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1}}})
    );
    assert_eq!(
        answer(Protocol::Responses, responses, Protocol::Gemini),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "T", "thought": true}, {"text": "Hi"},
                   {"functionCall": {"id": "c1", "name": "f", "args": {}}}]}, "index": 0, "finishReason": "STOP"}],
               "modelVersion": "g", "responseId": "resp_9",
               "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 2, "totalTokenCount": 9, "cachedContentTokenCount": 1}})
    );
    let incomplete = json!({"id": "resp_2", "model": "g", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hal"}]}], "usage": {"input_tokens": 4, "output_tokens": 50}});
    assert_eq!(
        answer(Protocol::Responses, incomplete, Protocol::Anthropic),
        json!({"id": "msg_resp_2", "type": "message", "role": "assistant", "model": "g", "content": [{"type": "text", "text": "Hal"}],
               "stop_reason": "max_tokens", "stop_sequence": null,
               "usage": {"input_tokens": 4, "output_tokens": 50, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
    );
    let gemini = json!({"responseId": "g1", "modelVersion": "gm", "candidates": [{"content": {"parts": [{"text": "Hi"}]}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 9}});
    assert_eq!(
        answer(Protocol::Gemini, gemini.clone(), Protocol::Anthropic),
        json!({"id": "msg_g1", "type": "message", "role": "assistant", "model": "gm", "content": [{"type": "text", "text": "Hi"}],
               "stop_reason": "max_tokens", "stop_sequence": null,
               "usage": {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
    );
    assert_eq!(
        answer(Protocol::Gemini, gemini, Protocol::Responses),
        json!({"id": "resp_g1", "object": "response", "created_at": 9, "status": "incomplete", "model": "gm",
               "output": [{"type": "message", "id": "msg_0", "status": "completed", "role": "assistant",
                           "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}],
               "incomplete_details": {"reason": "max_output_tokens"}, "error": null,
               "usage": {"input_tokens": 3, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 9,
                         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 12}})
    );
    let openai = json!({"id": "chatcmpl-3", "model": "o", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 1}});
    assert_eq!(
        answer(Protocol::OpenaiChat, openai, Protocol::Gemini),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0, "finishReason": "STOP"}],
               "modelVersion": "o", "responseId": "chatcmpl-3",
               "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 1, "totalTokenCount": 3}})
    );
}

fn kinds(evs: &[(Option<String>, Value)]) -> Vec<String> {
    evs.iter().map(|(e, _)| e.clone().unwrap_or_default()).collect()
}

const RESPONSES_TEXT_THEN_CALL: [&str; 13] = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.completed",
];

#[test]
fn streams_in_the_remaining_directions() {
    let anthropic = frames(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_1", "model": "c", "usage": {"input_tokens": 5}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "f"}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 1})),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ]);
    let evs = stream(Protocol::Anthropic, Protocol::Responses, &anthropic, 17);
    assert_eq!(kinds(&evs), RESPONSES_TEXT_THEN_CALL);
    let done = &evs[12].1["response"];
    assert_eq!((done["id"].as_str(), done["status"].as_str()), (Some("resp_1"), Some("completed")));
    assert_eq!(
        done["output"][1],
        json!({"type": "function_call", "id": "fc_1", "call_id": "t1", "name": "f", "arguments": "{}", "status": "completed"})
    );
    assert_eq!((done["usage"]["input_tokens"].as_u64(), done["usage"]["output_tokens"].as_u64()), (Some(5), Some(2)));

    let evs = stream(Protocol::Anthropic, Protocol::Gemini, &anthropic, 17);
    let bodies: Vec<Value> = evs.into_iter().map(|(_, d)| d).collect();
    assert_eq!(
        bodies,
        vec![
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}], "modelVersion": "c", "responseId": "msg_1"}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"id": "t1", "name": "f", "args": {}}}]}, "index": 0}],
                   "modelVersion": "c", "responseId": "msg_1"}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "index": 0, "finishReason": "STOP"}],
                   "modelVersion": "c", "responseId": "msg_1", "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7}}),
        ]
    );

    let responses = frames(&[
        (Some("response.created"), json!({"type": "response.created", "response": {"id": "resp_1", "model": "g"}})),
        (
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "item_id": "m", "delta": "Hi"}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": {"status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}], "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
    ]);
    let chunk = |delta: Value, finish: Value| json!({"id": "resp_1", "object": "chat.completion.chunk", "created": 7, "model": "g", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let got: Vec<Value> =
        stream(Protocol::Responses, Protocol::OpenaiChat, &responses, 9).into_iter().map(|(_, d)| d).collect();
    assert_eq!(
        got,
        vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Hi"}), Value::Null),
            json!({"id": "resp_1", "object": "chat.completion.chunk", "created": 7, "model": "g", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"id": "resp_1", "object": "chat.completion.chunk", "created": 7, "model": "g", "choices": [],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}),
            json!("[DONE]"),
        ]
    );
    let got: Vec<Value> =
        stream(Protocol::Responses, Protocol::Gemini, &responses, 9).into_iter().map(|(_, d)| d).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0]["candidates"][0]["content"]["parts"], json!([{"text": "Hi"}]));
    assert_eq!(
        (got[1]["candidates"][0]["finishReason"].as_str(), got[1]["usageMetadata"]["totalTokenCount"].as_u64()),
        (Some("STOP"), Some(4))
    );

    let gemini = frames(&[
        (
            None,
            json!({"responseId": "g1", "modelVersion": "gm", "candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}),
        ),
        (
            None,
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}, "finishReason": "STOP"}],
                      "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 3}}),
        ),
    ]);
    let chunk = |delta: Value| json!({"id": "g1", "object": "chat.completion.chunk", "created": 7, "model": "gm", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let got: Vec<Value> =
        stream(Protocol::Gemini, Protocol::OpenaiChat, &gemini, 5).into_iter().map(|(_, d)| d).collect();
    assert_eq!(
        got,
        vec![
            chunk(json!({"role": "assistant", "content": ""})),
            chunk(json!({"content": "Hi"})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": ""}}]})
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":1}"}}]})),
            json!({"id": "g1", "object": "chat.completion.chunk", "created": 7, "model": "gm", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"id": "g1", "object": "chat.completion.chunk", "created": 7, "model": "gm", "choices": [],
                   "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}}),
            json!("[DONE]"),
        ]
    );
    let evs = stream(Protocol::Gemini, Protocol::Responses, &gemini, 5);
    assert_eq!(kinds(&evs), RESPONSES_TEXT_THEN_CALL);
    let done = &evs[12].1["response"];
    assert_eq!(done["output"][1]["call_id"], "call_0");
    assert_eq!((done["id"].as_str(), done["usage"]["total_tokens"].as_u64()), (Some("resp_g1"), Some(5)));
}
