//! Golden tests, one per translation direction: realistic bodies in,
//! exact bodies out (requests, complete answers, streams).

use super::*;
use crate::protocols::sse;
use serde_json::json;

pub(super) fn to_value(b: &Bytes) -> Value {
    serde_json::from_slice(b).unwrap()
}

pub(super) fn translate_request(from: Protocol, body: Value, to: Protocol, model: &str) -> Value {
    let mut req = read_request(from, &body).unwrap();
    req.model = model.to_owned();
    to_value(&write_request(to, &req).unwrap())
}

/// A Claude Code turn: system blocks, a `role:"system"` entry inside
/// `messages`, thinking with a signature, parallel tool calls, their
/// results (one an error), an image, tools, tool_choice.
fn claude_code_request() -> Value {
    json!({
        "model": "openai/gpt-4o",
        "max_tokens": 32000,
        "stream": true,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "thinking": {"type": "enabled", "budget_tokens": 8000},
        "metadata": {"user_id": "u1"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "List the files and show README."}]},
            {"role": "system", "content": "Reminder: be brief."},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should call two tools.", "signature": "sig-1"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"path": "README.md"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.rs\nb.rs"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": [{"type": "text", "text": "no such file"}]},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
                {"type": "text", "text": "Why?"}
            ]}
        ],
        "tools": [
            {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
            {"name": "Read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
            {"type": "web_search_20250305", "name": "web_search"}
        ],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": false}
    })
}

#[test]
fn anthropic_request_to_openai_chat() {
    let out = translate_request(Protocol::Anthropic, claude_code_request(), Protocol::OpenaiChat, "gpt-4o");
    assert_eq!(
        out,
        json!({
            "model": "gpt-4o",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 32000,
            "messages": [
                {"role": "system", "content": "You are Claude Code.\n\nReminder: be brief."},
                {"role": "user", "content": "List the files and show README."},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "toolu_2", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"README.md\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "a.rs\nb.rs"},
                {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: no such file"},
                {"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                    {"type": "text", "text": "Why?"}
                ]}
            ],
            "tools": [
                {"type": "function", "function": {"name": "Bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
                {"type": "function", "function": {"name": "Read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
            ],
            "tool_choice": "auto"
        })
    );
}

#[test]
fn openai_chat_request_to_anthropic() {
    let body = json!({
        "model": "anthropic/claude-sonnet-4",
        "stream": false,
        "max_completion_tokens": 1000,
        "temperature": 0.2,
        "stop": "END",
        "parallel_tool_calls": false,
        "messages": [
            {"role": "developer", "content": "Be terse."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"},
                                         {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}]},
            {"role": "assistant", "content": null, "reasoning_content": "unsigned thoughts",
             "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "user", "content": "Thanks"}
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "description": "Weather now", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "weather"}}
    });
    let out = translate_request(Protocol::OpenaiChat, body, Protocol::Anthropic, "claude-sonnet-4");
    assert_eq!(
        out,
        json!({
            "model": "claude-sonnet-4",
            "max_tokens": 1000,
            "system": "Be terse.",
            "temperature": 0.2,
            "stop_sequences": ["END"],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"},
                                             {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "18C"}], "is_error": false},
                    {"type": "text", "text": "Thanks"}
                ]}
            ],
            "tools": [{"name": "weather", "description": "Weather now", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "weather", "disable_parallel_tool_use": true}
        })
    );
}

#[test]
fn reasoning_effort_becomes_a_thinking_budget_with_room_to_answer() {
    let body = json!({"model": "m", "reasoning_effort": "high", "max_tokens": 2000, "temperature": 1,
                      "messages": [{"role": "user", "content": "hi"}]});
    let out = translate_request(Protocol::OpenaiChat, body, Protocol::Anthropic, "claude");
    assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": 16384}));
    assert_eq!(out["max_tokens"], json!(16384 + 4096));
    assert!(out.get("temperature").is_none(), "Anthropic refuses temperature with thinking");
    let none = json!({"model": "m", "reasoning_effort": "none", "temperature": 1, "messages": [{"role": "user", "content": "hi"}]});
    let out = translate_request(Protocol::OpenaiChat, none, Protocol::Anthropic, "claude");
    assert!(out.get("thinking").is_none(), "effort none asks for no thinking: {out}");
    assert_eq!(out["temperature"], json!(1.0));
}

#[test]
fn openai_chat_answer_to_anthropic() {
    let upstream = json!({
        "id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "Checking.",
            "reasoning_content": "think",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 60}}
    });
    let (out, usage) = response(Protocol::OpenaiChat, upstream.to_string().as_bytes(), Protocol::Anthropic, 7).unwrap();
    assert_eq!(usage, ir::Usage { input_tokens: 100, output_tokens: 20, cached_tokens: Some(60) });
    assert_eq!(
        to_value(&out),
        json!({
            "id": "msg_9", "type": "message", "role": "assistant", "model": "gpt-4o",
            "content": [
                {"type": "thinking", "thinking": "think", "signature": ""},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 40, "output_tokens": 20, "cache_read_input_tokens": 60, "cache_creation_input_tokens": 0}
        })
    );
}

#[test]
fn anthropic_answer_to_openai_chat() {
    let upstream = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4",
        "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "Hi."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 0}
    });
    let (out, _) = response(Protocol::Anthropic, upstream.to_string().as_bytes(), Protocol::OpenaiChat, 7).unwrap();
    assert_eq!(
        to_value(&out),
        json!({
            "id": "msg_1", "object": "chat.completion", "created": 7, "model": "claude-sonnet-4",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Hi.", "reasoning_content": "hmm",
                "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105, "prompt_tokens_details": {"cached_tokens": 90}}
        })
    );
}

/// Runs a stream through the translator, split into `chunk`-byte pieces.
fn run_stream(upstream: Protocol, client: Protocol, frames: &str, chunk: usize) -> String {
    let mut t = StreamTranslator::new(upstream, client, 7);
    let mut out = Vec::new();
    for piece in frames.as_bytes().chunks(chunk) {
        out.extend_from_slice(&t.chunk(piece).unwrap());
    }
    out.extend_from_slice(&t.finish().unwrap());
    String::from_utf8(out).unwrap()
}

fn sse_frames(events: &[(Option<&str>, Value)]) -> String {
    events.iter().map(|(e, d)| String::from_utf8(sse::frame(*e, &d.to_string()).to_vec()).unwrap()).collect()
}

/// Parses client frames back into (event, data) pairs.
fn parse_frames(s: &str) -> Vec<(Option<String>, Value)> {
    let mut r = SseReader::default();
    let mut evs = r.feed(s.as_bytes()).unwrap();
    evs.extend(r.finish());
    evs.into_iter()
        .map(|e| (e.event, if e.data == "[DONE]" { json!("[DONE]") } else { serde_json::from_str(&e.data).unwrap() }))
        .collect()
}

fn openai_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[test]
fn openai_chat_stream_to_anthropic_events() {
    let mut upstream = sse_frames(&[
        (None, openai_chunk(json!({"role": "assistant", "content": ""}), Value::Null)),
        (None, openai_chunk(json!({"reasoning_content": "Let me "}), Value::Null)),
        (None, openai_chunk(json!({"reasoning_content": "think."}), Value::Null)),
        (None, openai_chunk(json!({"content": "Calling "}), Value::Null)),
        (None, openai_chunk(json!({"content": "tools."}), Value::Null)),
        (
            None,
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "Bash", "arguments": ""}}]}),
                Value::Null,
            ),
        ),
        (
            None,
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\":"}}]}),
                Value::Null,
            ),
        ),
        (None, openai_chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ls\"}"}}]}), Value::Null)),
        (
            None,
            openai_chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]}),
                Value::Null,
            ),
        ),
        (None, openai_chunk(json!({}), json!("tool_calls"))),
        (
            None,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [],
                      "usage": {"prompt_tokens": 50, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 20}}}),
        ),
    ]);
    upstream.push_str("data: [DONE]\n\n");
    let expected = vec![
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "gpt-4o", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Calling "}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "tools."}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 1})),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "call_a", "name": "Bash", "input": {}}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":"}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"ls\"}"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 2})),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "call_b", "name": "Read", "input": {}}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 3})),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"input_tokens": 30, "output_tokens": 9, "cache_read_input_tokens": 20, "cache_creation_input_tokens": 0}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ];
    let expected: Vec<(Option<String>, Value)> = expected.into_iter().map(|(e, v)| (e.map(str::to_owned), v)).collect();
    for chunk in [1, 7, 64, usize::MAX] {
        assert_eq!(
            parse_frames(&run_stream(Protocol::OpenaiChat, Protocol::Anthropic, &upstream, chunk.min(upstream.len()))),
            expected,
            "chunks of {chunk}"
        );
    }
}

#[test]
fn anthropic_stream_to_openai_chunks() {
    let upstream = sse_frames(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_7", "model": "claude-sonnet-4", "usage": {"input_tokens": 12, "cache_read_input_tokens": 100, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm."}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
        (Some("ping"), json!({"type": "ping"})),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 1})),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":\"ls\"}"}}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 2})),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ]);
    let chunk = |delta: Value| {
        json!({"id": "msg_7", "object": "chat.completion.chunk", "created": 7, "model": "claude-sonnet-4",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    };
    let expected = vec![
        chunk(json!({"role": "assistant", "content": ""})),
        chunk(json!({"reasoning_content": "Hmm."})),
        chunk(json!({"content": "Hi"})),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": ""}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\":\"ls\"}"}}]})),
        json!({"id": "msg_7", "object": "chat.completion.chunk", "created": 7, "model": "claude-sonnet-4",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"id": "msg_7", "object": "chat.completion.chunk", "created": 7, "model": "claude-sonnet-4", "choices": [],
               "usage": {"prompt_tokens": 112, "completion_tokens": 30, "total_tokens": 142, "prompt_tokens_details": {"cached_tokens": 100}}}),
        json!("[DONE]"),
    ];
    for size in [1, 5, 100, upstream.len()] {
        let got: Vec<Value> = parse_frames(&run_stream(Protocol::Anthropic, Protocol::OpenaiChat, &upstream, size))
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(got, expected, "chunks of {size}");
    }
}

#[test]
fn an_upstream_error_event_fails_the_translated_stream() {
    let upstream = sse_frames(&[
        (Some("message_start"), json!({"type": "message_start", "message": {"id": "msg_1", "model": "c"}})),
        (Some("error"), json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    ]);
    let mut t = StreamTranslator::new(Protocol::Anthropic, Protocol::OpenaiChat, 7);
    assert_eq!(t.chunk(upstream.as_bytes()), Err(StreamFailed("Overloaded".into())));
    let frame = parse_frames(std::str::from_utf8(&t.fail("Overloaded")).unwrap());
    assert_eq!(frame[0].1["error"]["message"], "Overloaded");
    let mut a = StreamTranslator::new(Protocol::OpenaiChat, Protocol::Anthropic, 7);
    let frame = parse_frames(std::str::from_utf8(&a.fail("cut off")).unwrap());
    assert_eq!(
        frame[0],
        (Some("error".to_owned()), json!({"type": "error", "error": {"type": "api_error", "message": "cut off"}}))
    );
}

/// A Claude Code-sized request (~100 KB: a long system prompt, 40 tools,
/// a long history with tool rounds and thinking) translates completely.
#[test]
fn a_100_kb_claude_code_request_translates_completely() {
    let mut body = claude_code_request();
    body["system"][0]["text"] = json!("Follow the repository conventions. ".repeat(800));
    let tools: Vec<Value> = (0..40)
        .map(|i| json!({"name": format!("tool_{i}"), "description": "Does one thing well. ".repeat(20),
                        "input_schema": {"type": "object", "properties": {"arg": {"type": "string", "description": "x".repeat(200)}}}}))
        .collect();
    body["tools"] = json!(tools);
    let mut history = Vec::new();
    for i in 0..60 {
        history.push(json!({"role": "user", "content": [{"type": "text", "text": format!("step {i}: {}", "context ".repeat(40))}]}));
        history.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan ".repeat(30), "signature": format!("sig{i}")},
            {"type": "tool_use", "id": format!("toolu_{i}"), "name": format!("tool_{}", i % 40), "input": {"arg": "v".repeat(50)}}]}));
        history.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": "ok ".repeat(60)}]}));
    }
    body["messages"] = json!(history);
    let size = body.to_string().len();
    assert!(size > 100_000, "{size} bytes");
    let out = translate_request(Protocol::Anthropic, body.clone(), Protocol::OpenaiChat, "gpt-4o");
    assert_eq!(out["tools"].as_array().unwrap().len(), 40);
    let msgs = out["messages"].as_array().unwrap();
    assert_eq!(msgs.iter().filter(|m| m["role"] == "tool").count(), 60, "every tool result");
    assert_eq!(
        msgs.iter().filter_map(|m| m["tool_calls"].as_array()).map(Vec::len).sum::<usize>(),
        60,
        "every tool call"
    );
    assert!(msgs[0]["content"].as_str().unwrap().starts_with("Follow the repository conventions."));
    // And back: the same history reaches an Anthropic upstream intact.
    let back = translate_request(Protocol::OpenaiChat, out, Protocol::Anthropic, "claude");
    let blocks: usize =
        back["messages"].as_array().unwrap().iter().map(|m| m["content"].as_array().unwrap().len()).sum();
    assert_eq!(blocks, 60 * 3, "text, tool_use and tool_result per round (unsigned reasoning is not sent back)");
}

#[test]
fn count_tokens_estimates_from_everything_the_model_reads() {
    let req = read_request(Protocol::Anthropic, &claude_code_request()).unwrap();
    let n = req.estimated_input_tokens();
    assert!((1_600..1_800).contains(&n), "one image (~1,600) plus some text: {n}");
    let empty = ir::Request::default();
    assert_eq!(empty.estimated_input_tokens(), 0);
}

/// The text of Anthropic frames a client got.
fn anthropic_text(out: &[u8]) -> String {
    let mut reader = sse::SseReader::default();
    let events = reader.feed(out).unwrap();
    events
        .iter()
        .filter_map(|e| to_value(&Bytes::from(e.data.clone()))["delta"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// A translator (OpenAI upstream, Anthropic client) that sent `sent` and
/// now reads a continuation; the frames the client got so far.
fn continuing_after(sent: &str) -> (StreamTranslator, Vec<u8>) {
    let mut t = StreamTranslator::new(Protocol::OpenaiChat, Protocol::Anthropic, 0).with_transcript();
    let first =
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": sent}}]});
    let out = t.chunk(&sse::frame(None, &first.to_string())).unwrap().to_vec();
    assert_eq!(t.continuable(), Some(sent));
    // The continuation speaks the client's protocol (Anthropic) and starts anew.
    t.continue_from(Protocol::Anthropic);
    let start = r#"{"type":"message_start","message":{"id":"msg_2","model":"claude","content":[],"usage":{"input_tokens":3,"output_tokens":0}}}"#;
    let block = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    let mut out = out;
    out.extend_from_slice(&t.chunk(&sse::frame(Some("message_start"), start)).unwrap());
    out.extend_from_slice(&t.chunk(&sse::frame(Some("content_block_start"), block)).unwrap());
    (t, out)
}

/// An Anthropic text delta.
fn text_delta(text: &str) -> Bytes {
    let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}});
    sse::frame(Some("content_block_delta"), &delta.to_string())
}

/// The Anthropic frames that end an answer.
fn anthropic_end() -> [Bytes; 2] {
    [
        sse::frame(
            Some("message_delta"),
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        ),
        sse::frame(Some("message_stop"), r#"{"type":"message_stop"}"#),
    ]
}

/// Feeds `frames` and the end of the stream; what the client got, or the
/// failure.
fn feed(t: &mut StreamTranslator, out: &mut Vec<u8>, frames: &[Bytes]) -> Result<(), StreamFailed> {
    for frame in frames {
        out.extend_from_slice(&t.chunk(frame)?);
    }
    out.extend_from_slice(&t.finish()?);
    Ok(())
}

#[test]
fn a_continuation_joins_the_client_stream_without_its_start_or_repeated_whitespace() {
    let (mut t, mut out) = continuing_after("Hello ");
    let [delta, stop] = anthropic_end();
    feed(&mut t, &mut out, &[text_delta(" world"), delta, stop]).unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    assert_eq!(text.matches("event: message_start").count(), 1, "{text}");
    assert_eq!(text.matches("event: message_stop").count(), 1, "{text}");
    assert_eq!(anthropic_text(&out), "Hello world", "the prefix's trailing space is not doubled");
}

#[test]
fn a_continuation_that_starts_the_answer_over_drops_the_repeat() {
    let (mut t, mut out) = continuing_after("the quick brown fo");
    let [delta, stop] = anthropic_end();
    let restart = [text_delta("the quick "), text_delta("brown"), text_delta(" fox jumps"), delta, stop];
    feed(&mut t, &mut out, &restart).unwrap();
    assert_eq!(anthropic_text(&out), "the quick brown fox jumps", "never the text twice");
}

#[test]
fn a_real_continuation_that_begins_like_the_answer_is_held_only_until_it_differs() {
    let (mut t, mut out) = continuing_after("Yes. Yes, it works");
    // "Yes" could be the answer starting over: held until the next text tells.
    let held = t.chunk(&text_delta("Yes")).unwrap();
    assert_eq!(anthropic_text(&held), "");
    out.extend_from_slice(&held);
    let [delta, stop] = anthropic_end();
    feed(&mut t, &mut out, &[text_delta(", really."), delta, stop]).unwrap();
    assert_eq!(anthropic_text(&out), "Yes. Yes, it worksYes, really.");
}

#[test]
fn a_continuation_that_ends_before_it_can_be_told_from_a_repeat_fails() {
    let (mut t, mut out) = continuing_after("the quick brown fo");
    let [delta, stop] = anthropic_end();
    let err = feed(&mut t, &mut out, &[text_delta("the quick"), delta, stop]).unwrap_err();
    assert!(err.0.contains("started the answer over"), "{err:?}");
    assert_eq!(anthropic_text(&out), "the quick brown fo", "nothing of the repeat reached the client");
}

#[test]
fn a_stream_with_a_tool_call_or_reasoning_or_a_stop_cannot_be_continued() {
    let chunk = |delta: Value| {
        sse::frame(None, &json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]}).to_string())
    };
    let tool = json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "ls", "arguments": ""}}]});
    let reasoning = json!({"reasoning_content": "thinking"});
    for (what, delta) in [("tool call", tool), ("reasoning", reasoning)] {
        let mut t = StreamTranslator::new(Protocol::OpenaiChat, Protocol::Anthropic, 0).with_transcript();
        t.chunk(&chunk(json!({"role": "assistant", "content": "ok"}))).unwrap();
        t.chunk(&chunk(delta)).unwrap();
        assert_eq!(t.continuable(), None, "{what}");
    }
    let mut t = StreamTranslator::new(Protocol::OpenaiChat, Protocol::Anthropic, 0).with_transcript();
    t.chunk(&chunk(json!({"content": "done"}))).unwrap();
    let stop = sse::frame(
        None,
        &json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
    );
    t.chunk(&stop).unwrap();
    assert_eq!(t.continuable(), None, "a stopped answer");
    let plain = StreamTranslator::new(Protocol::OpenaiChat, Protocol::Anthropic, 0);
    assert_eq!(plain.continuable(), None, "no transcript kept");
}
