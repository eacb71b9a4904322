//! Clients of one protocol served by upstreams of another, through the
//! real server and fake-upstream (SPEC §P): Anthropic Messages clients on
//! an OpenAI-compatible upstream and the reverse, JSON and streams, a tool
//! round trip, same-protocol pass-through, and errors in the client's
//! envelope.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, sse_events as events, v1};
use fake_upstream::{FakeUpstream, Rule};
use serde_json::{Value, json};

async fn messages(gw: &Gateway, body: Value) -> reqwest::Response {
    gw.http
        .post(format!("{}/v1/messages?beta=true", gw.url))
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .header("x-claude-code-session-id", "session-123")
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn anthropic_body(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 512, "stream": stream,
           "system": [{"type": "text", "text": "Be brief."}],
           "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}]})
}

/// The last request the fake received on `path`, as JSON, with its headers.
fn last_request(fake: &FakeUpstream, path: &str) -> (Value, std::collections::BTreeMap<String, String>) {
    let r = fake.requests().into_iter().rev().find(|r| r.path == path).unwrap();
    (serde_json::from_str(&r.body).unwrap(), r.headers.into_iter().collect())
}

#[tokio::test]
async fn an_anthropic_client_is_served_by_an_openai_upstream() {
    let (fake, gw) = Gateway::with_fake().await;
    let conn = gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let resp = messages(&gw, anthropic_body("openai/gpt-4o-mini", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], conn.as_str());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["content"], json!([{"type": "text", "text": "Hello from fake-upstream."}]));
    assert_eq!(body["stop_reason"], "end_turn");
    assert!(body["usage"]["input_tokens"].as_u64().unwrap() > 0);

    let (sent, headers) = last_request(&fake, "/v1/chat/completions");
    assert_eq!(sent["model"], "gpt-4o-mini");
    assert_eq!(
        sent["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}])
    );
    assert_eq!(headers.get("authorization").map(String::as_str), Some("Bearer sk-o"));
    for h in ["anthropic-beta", "anthropic-version", "x-claude-code-session-id", "x-api-key"] {
        assert!(!headers.contains_key(h), "{h} must not reach an OpenAI upstream");
    }
    let logs = gw.logs().await;
    assert!(logs[0]["promptTokens"].as_i64().unwrap() > 0, "usage logged from the translated answer");
    gw.stop().await;
}

#[tokio::test]
async fn an_anthropic_client_streams_from_an_openai_upstream() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let resp = messages(&gw, anthropic_body("openai/gpt-4o-mini", true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let evs = events(resp).await;
    let kinds: Vec<&str> = evs.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(&kinds[kinds.len() - 2..], ["message_delta", "message_stop"]);
    let text: String = evs.iter().filter_map(|(_, d)| d["delta"]["text"].as_str()).collect();
    assert_eq!(text, "Hello from fake-upstream.");
    let delta = &evs[evs.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 0, "usage from the upstream's final chunk");
    let (sent, _) = last_request(&fake, "/v1/chat/completions");
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
    gw.stop().await;
}

#[tokio::test]
async fn an_openai_client_is_served_by_an_anthropic_upstream_json_and_stream() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("anthropic", "a", "sk-ant", &fake.url(), 0).await;
    let body = json!({"model": "anthropic/claude-sonnet-4", "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]});
    let resp = gw.chat(body.clone(), None).await;
    assert_eq!(resp.status(), 200);
    let out: Value = resp.json().await.unwrap();
    assert_eq!(out["object"], "chat.completion");
    assert_eq!(out["choices"][0]["message"]["content"], "Hello from fake-upstream.");
    assert_eq!(out["choices"][0]["finish_reason"], "stop");
    let (sent, headers) = last_request(&fake, "/v1/messages");
    assert_eq!(
        sent,
        json!({"model": "claude-sonnet-4", "max_tokens": 4096, "system": "Be brief.",
                            "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}]})
    );
    assert_eq!(headers.get("x-api-key").map(String::as_str), Some("sk-ant"));
    assert_eq!(headers.get("anthropic-version").map(String::as_str), Some("2023-06-01"));

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let evs = events(gw.chat(streamed, None).await).await;
    let text: String = evs.iter().filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(text, "Hello from fake-upstream.");
    assert_eq!(evs.last().unwrap().1, json!("[DONE]"));
    assert!(evs.iter().any(|(_, d)| d["choices"][0]["finish_reason"] == "stop"));
    gw.stop().await;
}

#[tokio::test]
async fn a_tool_round_trip_crosses_protocols() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let tool_call = json!({"id": "chatcmpl-t", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5}});
    fake.push_rule(Rule { times: Some(1), body: Some(tool_call), ..Default::default() });
    let tools = json!([{"name": "get_weather", "description": "Weather now",
                        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let mut first = anthropic_body("openai/gpt-4o-mini", false);
    first["tools"] = tools.clone();
    let answer: Value = messages(&gw, first.clone()).await.json().await.unwrap();
    assert_eq!(answer["stop_reason"], "tool_use");
    assert_eq!(
        answer["content"],
        json!([{"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}])
    );
    let (sent, _) = last_request(&fake, "/v1/chat/completions");
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");

    let mut second = first;
    let history = second["messages"].as_array_mut().unwrap();
    history.push(json!({"role": "assistant", "content": answer["content"]}));
    history.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "18C and sunny"}]}));
    let done: Value = messages(&gw, second).await.json().await.unwrap();
    assert_eq!(done["content"][0]["text"], "Hello from fake-upstream.");
    let (sent, _) = last_request(&fake, "/v1/chat/completions");
    let msgs = sent["messages"].as_array().unwrap();
    assert_eq!(
        msgs[2]["tool_calls"][0]["function"],
        json!({"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    assert_eq!(msgs[3], json!({"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"}));
    gw.stop().await;
}

#[tokio::test]
async fn a_streamed_tool_call_arrives_as_tool_use_blocks() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let sse = [
        chunk(json!({"role": "assistant"}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "ls", "arguments": ""}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"dir\":"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"src\"}"}}]}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    fake.push_rule(Rule { times: Some(1), body: Some(json!(sse)), ..Default::default() });
    let evs = events(messages(&gw, anthropic_body("openai/gpt-4o-mini", true)).await).await;
    let start = evs.iter().find(|(e, _)| e.as_deref() == Some("content_block_start")).unwrap();
    assert_eq!(start.1["content_block"], json!({"type": "tool_use", "id": "call_9", "name": "ls", "input": {}}));
    let args: String = evs.iter().filter_map(|(_, d)| d["delta"]["partial_json"].as_str()).collect();
    assert_eq!(args, "{\"dir\":\"src\"}");
    assert!(evs.iter().any(|(_, d)| d["delta"]["stop_reason"] == "tool_use"));
    gw.stop().await;
}

#[tokio::test]
async fn same_protocol_requests_pass_through_with_their_beta_headers() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("anthropic", "a", "sk-ant", &fake.url(), 0).await;
    let mut body = anthropic_body("anthropic/claude-sonnet-4", false);
    body["context_management"] = json!({"edits": [{"type": "clear_tool_uses_20250919"}]});
    let resp = messages(&gw, body.clone()).await;
    assert_eq!(resp.status(), 200);
    let (sent, headers) = last_request(&fake, "/v1/messages");
    body["model"] = json!("claude-sonnet-4");
    assert_eq!(sent, body, "unknown fields untouched");
    assert_eq!(headers.get("anthropic-beta").map(String::as_str), Some("interleaved-thinking-2025-05-14"));
    assert!(!headers.contains_key("x-claude-code-session-id"), "session headers never reach an upstream");
    gw.stop().await;
}

#[tokio::test]
async fn anthropic_clients_get_errors_in_their_envelope() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let mut no_max = anthropic_body("openai/gpt-4o-mini", false);
    no_max.as_object_mut().unwrap().remove("max_tokens");
    let resp = messages(&gw, no_max).await;
    assert_eq!(resp.status(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_eq!((e["type"].as_str(), e["error"]["type"].as_str()), (Some("error"), Some("invalid_request_error")));
    assert_eq!(e["error"]["param"], "max_tokens");

    let resp = messages(&gw, anthropic_body("nope/missing", false)).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["type"], "not_found_error");

    let bad_role =
        json!({"model": "openai/gpt-4o-mini", "max_tokens": 5, "messages": [{"role": "robot", "content": "x"}]});
    let e: Value = messages(&gw, bad_role).await.json().await.unwrap();
    assert_eq!(e["error"]["param"], "messages.0.role");

    fake.push_rule(Rule {
        times: Some(1),
        status: Some(400),
        body: Some(json!({"error": {"message": "context too long", "type": "invalid_request_error"}})),
        ..Default::default()
    });
    let resp = messages(&gw, anthropic_body("openai/gpt-4o-mini", false)).await;
    assert_eq!(resp.status(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_eq!((e["type"].as_str(), e["error"]["message"].as_str()), (Some("error"), Some("context too long")));

    fake.push_rule(Rule {
        status: Some(429),
        headers: [("retry-after".into(), "7".into())].into(),
        ..Default::default()
    });
    let resp = messages(&gw, anthropic_body("openai/gpt-4o-mini", false)).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "7");
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["type"], "rate_limit_error");

    gw.create_key(json!({"name": "cc"})).await;
    let resp = messages(&gw, anthropic_body("openai/gpt-4o-mini", false)).await;
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["type"], "authentication_error");
    gw.stop().await;
}

#[tokio::test]
async fn a_broken_upstream_stream_ends_with_an_anthropic_error_event() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    fake.push_rule(Rule { times: Some(1), drop_after_chunks: Some(3), ..Default::default() });
    let evs = events(messages(&gw, anthropic_body("openai/gpt-4o-mini", true)).await).await;
    let (last_event, last) = evs.last().unwrap();
    assert_eq!(last_event.as_deref(), Some("error"));
    assert_eq!(last["type"], "error");
    assert!(!evs.iter().any(|(e, _)| e.as_deref() == Some("message_stop")), "never a clean end after a cut");
    gw.stop().await;
}

#[tokio::test]
async fn count_tokens_is_answered_locally() {
    let (fake, gw) = Gateway::with_fake().await;
    let resp = gw
        .http
        .post(format!("{}/v1/messages/count_tokens", gw.url))
        .json(
            &json!({"model": "anthropic/claude-sonnet-4", "messages": [{"role": "user", "content": "x".repeat(400)}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"input_tokens": 100}));
    assert_eq!(fake.requests().len(), 0, "no upstream call");
    gw.stop().await;
}

async fn responses(gw: &Gateway, body: Value) -> reqwest::Response {
    gw.http
        .post(format!("{}/v1/responses", gw.url))
        .header("session-id", "codex-session")
        .header("thread-id", "thread-1")
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn codex_body(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "store": false, "prompt_cache_key": "thread-1",
           "instructions": "You are Codex.",
           "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}]})
}

#[tokio::test]
async fn a_responses_client_is_served_by_openai_and_anthropic_upstreams() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("anthropic", "a", "sk-ant", &fake.url(), 0).await;
    for model in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4"] {
        let out: Value = responses(&gw, codex_body(model, false)).await.json().await.unwrap();
        assert_eq!(out["object"], "response", "{model}");
        assert_eq!(out["status"], "completed");
        assert_eq!(out["output"][0]["content"][0]["text"], "Hello from fake-upstream.", "{model}");
        assert!(out["usage"]["output_tokens"].as_u64().unwrap() > 0);

        let evs = events(responses(&gw, codex_body(model, true)).await).await;
        assert_eq!(evs[0].0.as_deref(), Some("response.created"));
        let text: String = evs
            .iter()
            .filter(|(e, _)| e.as_deref() == Some("response.output_text.delta"))
            .filter_map(|(_, d)| d["delta"].as_str())
            .collect();
        assert_eq!(text, "Hello from fake-upstream.", "{model}");
        let done = evs.iter().find(|(e, _)| e.as_deref() == Some("response.output_item.done")).unwrap();
        assert_eq!(done.1["item"]["content"][0]["text"], "Hello from fake-upstream.", "Codex records items from here");
        let (last, completed) = evs.last().unwrap();
        assert_eq!(last.as_deref(), Some("response.completed"));
        assert!(completed["response"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
    }
    let (sent, headers) = last_request(&fake, "/v1/chat/completions");
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "You are Codex."}));
    for h in ["session-id", "thread-id"] {
        assert!(!headers.contains_key(h), "{h} never reaches an upstream");
    }
    gw.stop().await;
}

#[tokio::test]
async fn responses_clients_pass_through_to_a_responses_upstream_and_get_openai_errors() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai-responses", "r", "sk-r", &v1(&fake), 0).await;
    let out: Value = responses(&gw, codex_body("openai-responses/gpt-5", false)).await.json().await.unwrap();
    assert_eq!(out["output"][0]["content"][0]["text"], "Hello from fake-upstream.");
    let (sent, _) = last_request(&fake, "/v1/responses");
    let mut expected = codex_body("gpt-5", false);
    expected["model"] = json!("gpt-5");
    assert_eq!(sent, expected, "same protocol: unknown fields like prompt_cache_key untouched");

    let resp = responses(&gw, json!({"model": "openai-responses/gpt-5"})).await;
    assert_eq!(resp.status(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_eq!(
        (e["error"]["param"].as_str(), e["error"]["type"].as_str()),
        (Some("input"), Some("invalid_request_error"))
    );

    fake.push_rule(Rule { status: Some(429), ..Default::default() });
    let resp = responses(&gw, codex_body("openai-responses/gpt-5", true)).await;
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().contains_key("retry-after"), "a 429 without Retry-After is fatal to Codex");
    gw.stop().await;
}

#[tokio::test]
async fn a_background_responses_request_runs_synchronously_and_says_so() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai-responses", "r", "sk-r", &v1(&fake), 0).await;
    let mut body = codex_body("openai-responses/gpt-5", false);
    body["background"] = json!(true);
    let resp = responses(&gw, body).await;
    assert_eq!(resp.status(), 200);
    let warning = resp.headers()["x-omniroute-warning"].to_str().unwrap().to_owned();
    assert!(warning.contains("produced synchronously"), "{warning}");
    let out: Value = resp.json().await.unwrap();
    assert_eq!(out["status"], "completed", "the answer itself, not a queued job to poll");
    let (sent, _) = last_request(&fake, "/v1/responses");
    assert!(sent.get("background").is_none(), "the upstream is not asked to queue it: {sent}");
    assert_eq!(sent["prompt_cache_key"], "thread-1", "everything else passes through");
    gw.stop().await;
}

#[tokio::test]
async fn an_anthropic_client_is_served_by_a_responses_upstream() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai-responses", "r", "sk-r", &v1(&fake), 0).await;
    let out: Value = messages(&gw, anthropic_body("openai-responses/gpt-5", false)).await.json().await.unwrap();
    assert_eq!(out["content"], json!([{"type": "text", "text": "Hello from fake-upstream."}]));
    let (sent, _) = last_request(&fake, "/v1/responses");
    assert_eq!(sent["instructions"], "Be brief.");
    assert_eq!(sent["input"][0]["content"][0], json!({"type": "input_text", "text": "Say hello"}));
    let evs = events(messages(&gw, anthropic_body("openai-responses/gpt-5", true)).await).await;
    let text: String = evs.iter().filter_map(|(_, d)| d["delta"]["text"].as_str()).collect();
    assert_eq!(text, "Hello from fake-upstream.");
    assert_eq!(evs.last().unwrap().0.as_deref(), Some("message_stop"));
    gw.stop().await;
}

#[tokio::test]
async fn an_openai_client_is_served_by_a_gemini_upstream() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("gemini", "g", "g-key", &format!("{}/v1beta", fake.url()), 0).await;
    let body = json!({"model": "gemini/gemini-2.5-flash", "messages": [{"role": "user", "content": "Say hello"}]});
    let out: Value = gw.chat(body.clone(), None).await.json().await.unwrap();
    assert_eq!(out["choices"][0]["message"]["content"], "Hello from fake-upstream.");
    let (sent, headers) = last_request(&fake, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(sent["contents"], json!([{"role": "user", "parts": [{"text": "Say hello"}]}]));
    assert_eq!(headers.get("x-goog-api-key").map(String::as_str), Some("g-key"));

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let evs = events(gw.chat(streamed, None).await).await;
    let text: String = evs.iter().filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(text, "Hello from fake-upstream.");
    let req = fake.requests().into_iter().rev().find(|r| r.path.contains(":streamGenerateContent")).unwrap();
    assert_eq!(req.query.as_deref(), Some("alt=sse"));
    gw.stop().await;
}

#[tokio::test]
async fn an_oversized_body_is_refused_in_the_clients_envelope_before_any_upstream_call() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.max_body_bytes = 2048).await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let mut big = anthropic_body("openai/gpt-4o-mini", false);
    big["messages"][0]["content"][0]["text"] = json!("x".repeat(4096));
    let resp = messages(&gw, big).await;
    assert_eq!(resp.status(), 413);
    let e: Value = resp.json().await.unwrap();
    assert_eq!((e["type"].as_str(), e["error"]["type"].as_str()), (Some("error"), Some("request_too_large")));
    assert_eq!(fake.requests().len(), 0, "nothing reached the upstream");
    gw.stop().await;
}

#[tokio::test]
async fn gemini_clients_use_their_key_header_and_get_gemini_errors() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let key = gw.create_key(json!({"name": "gemini-cli"})).await["key"].as_str().unwrap().to_owned();
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "Say hello"}]}]});
    let post = |path: &str, key: Option<&str>| {
        let mut req = gw.http.post(format!("{}{path}", gw.url)).json(&body);
        if let Some(k) = key {
            req = req.header("x-goog-api-key", k);
        }
        req.send()
    };
    let ok: Value =
        post("/v1beta/models/openai/gpt-4o-mini:generateContent", Some(&key)).await.unwrap().json().await.unwrap();
    assert_eq!(ok["candidates"][0]["content"]["parts"][0]["text"], "Hello from fake-upstream.");

    let resp = post("/v1beta/models/nope/missing:generateContent", Some(&key)).await.unwrap();
    assert_eq!(resp.status(), 404);
    let e: Value = resp.json().await.unwrap();
    assert_eq!((e["error"]["code"].as_u64(), e["error"]["status"].as_str()), (Some(404), Some("NOT_FOUND")));
    assert_eq!(e["error"]["reason"], "model_not_found");

    let resp = post("/v1beta/models/openai/gpt-4o-mini:generateContent", None).await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["status"], "UNAUTHENTICATED");
    let resp = post("/v1beta/models/openai/gpt-4o-mini:countTokens", Some(&key)).await.unwrap();
    assert_eq!(resp.status(), 404, "an unknown method");
    gw.stop().await;
}
