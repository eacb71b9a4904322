//! Golden tests for the Responses API and Gemini directions.

use super::{
    tests::{to_value, translate_request},
    *,
};
use crate::protocols::sse;
use serde_json::json;

pub(super) fn stream(upstream: Protocol, client: Protocol, frames: &str, chunk: usize) -> Vec<(Option<String>, Value)> {
    let mut t = StreamTranslator::new(upstream, client, 7);
    let mut out = Vec::new();
    for piece in frames.as_bytes().chunks(chunk.max(1)) {
        out.extend_from_slice(&t.chunk(piece).unwrap());
    }
    out.extend_from_slice(&t.finish().unwrap());
    let mut r = SseReader::default();
    let mut evs = r.feed(&out).unwrap();
    evs.extend(r.finish());
    evs.into_iter()
        .map(|e| (e.event, if e.data == "[DONE]" { json!("[DONE]") } else { serde_json::from_str(&e.data).unwrap() }))
        .collect()
}

pub(super) fn frames(events: &[(Option<&str>, Value)]) -> String {
    events.iter().map(|(e, d)| String::from_utf8(sse::frame(*e, &d.to_string()).to_vec()).unwrap()).collect()
}

/// A Codex turn: instructions, a developer message, a user message, an
/// earlier reasoning item, a function call and its output, tools.
fn codex_request() -> Value {
    json!({
        "model": "openai/gpt-4o",
        "instructions": "You are Codex.",
        "stream": true,
        "store": false,
        "prompt_cache_key": "thread-1",
        "reasoning": {"effort": "medium", "summary": "auto"},
        "max_output_tokens": 4000,
        "parallel_tool_calls": true,
        "include": ["reasoning.encrypted_content"],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox: read-only."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files."}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Use shell."}], "encrypted_content": "gAAA"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.rs\nb.rs"},
            {"role": "user", "content": "Thanks"}
        ],
        "tools": [
            {"type": "function", "name": "shell", "description": "Run a command", "strict": false,
             "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}}},
            {"type": "web_search"}
        ],
        "tool_choice": "auto"
    })
}

#[test]
fn responses_request_to_openai_chat() {
    let out = translate_request(Protocol::Responses, codex_request(), Protocol::OpenaiChat, "gpt-4o");
    assert_eq!(
        out,
        json!({
            "model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 4000,
            "reasoning_effort": "medium",
            "messages": [
                {"role": "system", "content": "You are Codex.\n\nSandbox: read-only."},
                {"role": "user", "content": "List files."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"ls\"]}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.rs\nb.rs"},
                {"role": "user", "content": "Thanks"}
            ],
            "tools": [{"type": "function", "function": {"name": "shell", "description": "Run a command",
                       "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}}}}],
            "parallel_tool_calls": true,
            "tool_choice": "auto"
        })
    );
}

#[test]
fn anthropic_request_to_responses() {
    let body = json!({"model": "m", "max_tokens": 100, "system": "Sys.",
        "messages": [
            {"role": "user", "content": "Run ls"},
            {"role": "assistant", "content": [{"type": "text", "text": "Sure."}, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x.rs"}, {"type": "text", "text": "And?"}]}
        ],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]});
    let out = translate_request(Protocol::Anthropic, body, Protocol::Responses, "gpt-5");
    assert_eq!(
        out,
        json!({
            "model": "gpt-5", "instructions": "Sys.", "store": false, "max_output_tokens": 100,
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run ls"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sure."}]},
                {"type": "function_call", "call_id": "toolu_1", "name": "Bash", "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call_output", "call_id": "toolu_1", "output": "x.rs"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And?"}]}
            ],
            "tools": [{"type": "function", "name": "Bash", "description": null, "parameters": {"type": "object"}}]
        })
    );
}

#[test]
fn openai_chat_answer_to_responses() {
    let upstream = json!({"id": "chatcmpl-5", "model": "gpt-4o", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "Running.", "tool_calls": [{"id": "call_7", "type": "function",
            "function": {"name": "shell", "arguments": "{\"command\":[\"ls\"]}"}}]}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 10}}});
    let (out, _) = response(Protocol::OpenaiChat, upstream.to_string().as_bytes(), Protocol::Responses, 9).unwrap();
    assert_eq!(
        to_value(&out),
        json!({
            "id": "resp_5", "object": "response", "created_at": 9, "status": "completed", "model": "gpt-4o",
            "incomplete_details": null, "error": null,
            "output": [
                {"type": "message", "id": "msg_0", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Running.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_7", "name": "shell",
                 "arguments": "{\"command\":[\"ls\"]}", "status": "completed"}
            ],
            "usage": {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 4,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 34}
        })
    );
}

#[test]
fn openai_chat_stream_to_responses_events() {
    let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "model": "gpt-4o", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let upstream = frames(&[
        (None, chunk(json!({"role": "assistant", "content": ""}), Value::Null)),
        (None, chunk(json!({"reasoning_content": "Think."}), Value::Null)),
        (None, chunk(json!({"content": "Hel"}), Value::Null)),
        (None, chunk(json!({"content": "lo"}), Value::Null)),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "shell", "arguments": "{\"a\""}}]}),
                Value::Null,
            ),
        ),
        (None, chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}), Value::Null)),
        (None, chunk(json!({}), json!("tool_calls"))),
        (
            None,
            json!({"id": "chatcmpl-1", "model": "gpt-4o", "choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 3}}),
        ),
    ]) + "data: [DONE]\n\n";
    for size in [1, 9, upstream.len()] {
        let evs = stream(Protocol::OpenaiChat, Protocol::Responses, &upstream, size);
        let kinds: Vec<&str> = evs.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed"
            ],
            "chunks of {size}"
        );
        let seq: Vec<u64> = evs.iter().map(|(_, d)| d["sequence_number"].as_u64().unwrap()).collect();
        assert_eq!(seq, (0..evs.len() as u64).collect::<Vec<_>>(), "sequence numbers count up");
        assert!(evs.iter().all(|(e, d)| d["type"] == json!(e)), "type matches the event name");
        let done = &evs.last().unwrap().1["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["id"], "resp_1");
        assert_eq!(done["output"][1]["content"][0]["text"], "Hello");
        assert_eq!(
            done["output"][2],
            json!({"type": "function_call", "id": "fc_2", "call_id": "call_1", "name": "shell",
                                             "arguments": "{\"a\":1}", "status": "completed"})
        );
        assert_eq!(done["usage"]["input_tokens"], 8);
        assert_eq!(
            evs[7].1["item"],
            json!({"type": "reasoning", "id": "rs_0", "summary": [{"type": "summary_text", "text": "Think."}]})
        );
    }
}

#[test]
fn responses_stream_to_anthropic_events() {
    let upstream = frames(&[
        (Some("response.created"), json!({"type": "response.created", "response": {"id": "resp_9", "model": "gpt-5"}})),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "item": {"type": "reasoning", "id": "rs_1"}}),
        ),
        (
            Some("response.reasoning_summary_text.delta"),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "Plan."}),
        ),
        (
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"}),
        ),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "Bash"}}),
        ),
        (
            Some("response.function_call_arguments.delta"),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{}"}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": {"id": "resp_9", "status": "completed",
            "output": [{"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": "{}"}],
            "usage": {"input_tokens": 11, "output_tokens": 2}}}),
        ),
    ]);
    let evs = stream(Protocol::Responses, Protocol::Anthropic, &upstream, 13);
    let kinds: Vec<&str> = evs.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(evs[0].1["message"]["id"], "msg_resp_9");
    assert_eq!(evs[7].1["content_block"], json!({"type": "tool_use", "id": "call_1", "name": "Bash", "input": {}}));
    assert_eq!(evs[10].1["delta"]["stop_reason"], "tool_use");
    assert_eq!(evs[10].1["usage"]["input_tokens"], 11);
}

#[test]
fn a_failed_responses_stream_fails_and_a_responses_client_sees_response_failed() {
    let upstream = frames(&[(
        Some("response.failed"),
        json!({"type": "response.failed", "response": {"error": {"message": "quota"}}}),
    )]);
    let mut t = StreamTranslator::new(Protocol::Responses, Protocol::OpenaiChat, 1);
    assert_eq!(t.chunk(upstream.as_bytes()), Err(StreamFailed("quota".into())));
    let mut r = StreamTranslator::new(Protocol::OpenaiChat, Protocol::Responses, 1);
    let out = String::from_utf8(r.fail("cut off").to_vec()).unwrap();
    assert!(out.contains("event: response.failed"), "{out}");
    assert!(out.contains(r#""status":"failed""#) && out.contains(r#""message":"cut off""#), "{out}");
}

#[test]
fn anthropic_request_to_gemini() {
    let body = json!({"model": "m", "max_tokens": 300, "system": "Sys.", "stop_sequences": ["X"],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAA"}}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3C"}]}
        ],
        "tools": [{"name": "weather", "description": "Now", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "any"}});
    let out = translate_request(Protocol::Anthropic, body, Protocol::Gemini, "gemini-2.5-flash");
    assert_eq!(
        out,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "Weather?"}, {"inlineData": {"mimeType": "image/jpeg", "data": "AAA"}}]},
                {"role": "model", "parts": [{"functionCall": {"id": "toolu_1", "name": "weather", "args": {"city": "Oslo"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "toolu_1", "name": "weather", "response": {"output": "3C"}}}]}
            ],
            "systemInstruction": {"parts": [{"text": "Sys."}]},
            "tools": [{"functionDeclarations": [{"name": "weather", "description": "Now",
                       "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {"maxOutputTokens": 300, "stopSequences": ["X"],
                                 "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true}}
        })
    );
    assert_eq!(
        upstream_path(Protocol::Gemini, "gemini-2.5-flash", true),
        "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
}

#[test]
fn gemini_answer_to_openai_chat_and_stream_to_anthropic() {
    let upstream = json!({"responseId": "g1", "modelVersion": "gemini-2.5-flash",
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hmm", "thought": true}, {"text": "Calling."},
            {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5, "thoughtsTokenCount": 3, "cachedContentTokenCount": 4}});
    let (out, usage) = response(Protocol::Gemini, upstream.to_string().as_bytes(), Protocol::OpenaiChat, 1).unwrap();
    let out = to_value(&out);
    assert_eq!(usage, ir::Usage { input_tokens: 20, output_tokens: 8, cached_tokens: Some(4) });
    assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(out["choices"][0]["message"]["reasoning_content"], "Hmm");
    assert_eq!(
        out["choices"][0]["message"]["tool_calls"][0]["function"],
        json!({"name": "weather", "arguments": "{\"city\":\"Oslo\"}"})
    );

    let chunks = frames(&[
        (
            None,
            json!({"responseId": "g2", "modelVersion": "gemini-2.5-flash", "candidates": [{"content": {"parts": [{"text": "Hel"}]}}]}),
        ),
        (None, json!({"candidates": [{"content": {"parts": [{"text": "lo"}]}}]})),
        (
            None,
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "ls", "args": {}}}]}, "finishReason": "STOP"}],
                      "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2}}),
        ),
    ]);
    let evs = stream(Protocol::Gemini, Protocol::Anthropic, &chunks, 10);
    let text: String = evs.iter().filter_map(|(_, d)| d["delta"]["text"].as_str()).collect();
    assert_eq!(text, "Hello");
    let tool = evs.iter().find(|(_, d)| d["content_block"]["type"] == "tool_use").unwrap();
    assert_eq!(tool.1["content_block"]["name"], "ls");
    let end = &evs[evs.len() - 2].1;
    assert_eq!(
        (end["delta"]["stop_reason"].as_str(), end["usage"]["output_tokens"].as_u64()),
        (Some("tool_use"), Some(2))
    );
}

#[test]
fn gemini_client_request_to_openai_chat() {
    let body = json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}, {"inlineData": {"mimeType": "image/png", "data": "QQ"}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"output": "3C"}}}]}
        ],
        "tools": [{"functionDeclarations": [{"name": "weather", "description": "Now", "parameters": {"type": "object"}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}},
        "generationConfig": {"maxOutputTokens": 99, "temperature": 0.5, "stopSequences": ["Z"]}
    });
    let out = translate_request(Protocol::Gemini, body, Protocol::OpenaiChat, "gpt-4o");
    assert_eq!(
        out,
        json!({
            "model": "gpt-4o", "max_tokens": 99, "temperature": 0.5, "stop": ["Z"],
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ"}}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "3C"}
            ],
            "tools": [{"type": "function", "function": {"name": "weather", "description": "Now", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "weather"}}
        })
    );
    let orphan =
        json!({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "nope", "response": {}}}]}]});
    assert_eq!(read_request(Protocol::Gemini, &orphan).unwrap_err().field, "contents.0.parts.0.functionResponse.name");
}

#[test]
fn anthropic_answer_and_stream_to_a_gemini_client() {
    let upstream = json!({"id": "msg_1", "model": "claude", "content": [{"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"dir": "."}}], "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 2}});
    let (out, _) = response(Protocol::Anthropic, upstream.to_string().as_bytes(), Protocol::Gemini, 1).unwrap();
    assert_eq!(
        to_value(&out),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"},
                {"functionCall": {"id": "toolu_1", "name": "ls", "args": {"dir": "."}}}]}, "index": 0, "finishReason": "STOP"}],
               "modelVersion": "claude", "responseId": "msg_1",
               "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7}})
    );
    let chunk = |delta: Value, finish: Value| json!({"id": "c1", "model": "gpt", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let sse_in = frames(&[
        (None, chunk(json!({"content": "Hel"}), Value::Null)),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "ls", "arguments": "{\"dir\""}}]}),
                Value::Null,
            ),
        ),
        (None, chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ":\".\"}"}}]}), Value::Null)),
        (None, chunk(json!({}), json!("tool_calls"))),
    ]);
    let evs = stream(Protocol::OpenaiChat, Protocol::Gemini, &sse_in, 11);
    let parts: Vec<Value> = evs.iter().map(|(_, d)| d["candidates"][0]["content"]["parts"][0].clone()).collect();
    assert_eq!(parts[0], json!({"text": "Hel"}));
    assert_eq!(
        parts[1],
        json!({"functionCall": {"id": "call_1", "name": "ls", "args": {"dir": "."}}}),
        "the call goes out whole"
    );
    assert_eq!(evs.last().unwrap().1["candidates"][0]["finishReason"], "STOP");
    assert_eq!(evs.len(), 3);
}
