//! Mid-stream recovery (SPEC §R6, `STREAM_RECOVERY_MIDSTREAM_ENABLED`),
//! through the real server and fake-upstream: a stream that breaks after
//! the client got text is continued by an Anthropic-protocol target with
//! the text so far as the assistant's prefix, and the client sees one
//! stream with every word once; where no continuation can join (a tool
//! call, no such target) the stream ends with its error event.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{Client, ask, base_url, post, same_protocol_pairs, text},
};
use fake_upstream::{FakeUpstream, Rule, ToolCall};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

const FIRST: &str = "The quick brown fox";
/// What the first upstream sends before it breaks: its role chunk and two pieces.
const PREFIX: &str = "The quick";
const REST: &str = " brown fox jumps.";

async fn start(midstream: bool) -> (FakeUpstream, Gateway) {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.stream_recovery_midstream = midstream;
        c.stream_idle_timeout = Duration::from_millis(500);
    })
    .await;
    (fake, gw)
}

/// A connection whose every stream breaks after `PREFIX`: after the
/// events before the text (which differ by protocol) and two pieces.
async fn breaking(gw: &Gateway, fake: &FakeUpstream, provider: &str, key: &str) -> String {
    let preamble = match provider {
        "openai" => 1,
        "anthropic" => 2,
        _ => 3,
    };
    fake.push_rule(Rule {
        api_key: Some(key.into()),
        content: Some(FIRST.into()),
        drop_after_chunks: Some(preamble + 2),
        ..Default::default()
    });
    gw.add_connection(provider, key, key, &base_url(fake, provider), 0).await
}

/// An Anthropic connection that answers `REST`.
async fn continuing(gw: &Gateway, fake: &FakeUpstream, key: &str, priority: i32) -> String {
    fake.push_rule(Rule { api_key: Some(key.into()), content: Some(REST.into()), ..Default::default() });
    gw.add_connection("anthropic", key, key, &fake.url(), priority).await
}

async fn combo(gw: &Gateway, models: &[&str]) {
    let targets: Vec<Value> = models.iter().map(|m| json!({"model": m})).collect();
    let combo = json!({"name": "writer", "strategy": "priority", "targets": targets});
    assert_eq!(gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap().status(), 201);
}

/// The requests the fake got with credential `key`.
fn bodies_for(fake: &FakeUpstream, key: &str) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| r.headers.values().any(|v| v.contains(key)))
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

fn error_in(raw: &str) -> bool {
    raw.contains("event: error") || raw.contains("response.failed") || raw.contains("\"error\":{")
}

#[tokio::test]
async fn a_broken_stream_is_continued_on_an_anthropic_target_for_every_client_protocol() {
    let (fake, gw) = start(true).await;
    // Each stream must meet the breaking connection, not its cooldown.
    gw.without_cooldowns().await;
    breaking(&gw, &fake, "openai", "first-key").await;
    continuing(&gw, &fake, "second-key", 0).await;
    combo(&gw, &["openai/gpt-4o-mini", "anthropic/claude-sonnet-4"]).await;
    for client in [Client::Chat, Client::Messages, Client::Responses, Client::Gemini] {
        let resp = post(&gw, client, "writer", true, &ask(client, "writer", true)).await;
        assert_eq!(resp.status(), 200, "{client:?}");
        let raw = resp.text().await.unwrap();
        assert!(!error_in(&raw), "{client:?}: no error event: {raw}");
        let said = text(client, true, fake_response(raw.clone())).await;
        assert_eq!(said, format!("{PREFIX}{REST}"), "{client:?}: every word once: {raw}");
        let events = common::parse_sse(&raw);
        let named = |name: &str| events.iter().filter(|(e, _)| e.as_deref() == Some(name)).count();
        let data = |f: fn(&Value) -> bool| events.iter().filter(|(_, d)| f(d)).count();
        let (starts, ends) = match client {
            Client::Chat => (data(|d| d["choices"][0]["delta"]["role"].is_string()), data(|d| d == "[DONE]")),
            Client::Messages => (named("message_start"), named("message_stop")),
            Client::Responses => (named("response.created"), named("response.completed")),
            Client::Gemini => (1, data(|d| d["candidates"][0]["finishReason"].is_string())),
        };
        assert_eq!((starts, ends), (1, 1), "{client:?}: one start and one end of the answer: {raw}");
    }
    // The continuation asked the Anthropic upstream to go on after the prefix.
    let continued = bodies_for(&fake, "second-key");
    assert_eq!(continued.len(), 4, "one continuation per stream");
    for body in &continued {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "assistant", "{body}");
        assert_eq!(last["content"].to_string().matches(PREFIX).count(), 1, "{body}");
    }
    // The failed attempt and its continuation are both in the log.
    let rows = gw.logs().await;
    assert_eq!(rows.iter().filter(|r| r["errorKind"] == "stream_interrupted").count(), 4, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r["status"] == 200 && r["errorKind"].is_null()).count(), 4, "{rows:?}");
    gw.stop().await;
}

#[tokio::test]
async fn the_continuation_never_goes_back_to_the_connection_that_failed() {
    let (fake, gw) = start(true).await;
    // Same provider, two connections: the first (priority 0) breaks, in
    // the client's own protocol.
    breaking(&gw, &fake, "anthropic", "first-key").await;
    continuing(&gw, &fake, "second-key", 1).await;
    let body = ask(Client::Messages, "anthropic/claude-sonnet-4", true);
    let resp = post(&gw, Client::Messages, "anthropic/claude-sonnet-4", true, &body).await;
    let raw = resp.text().await.unwrap();
    assert!(!error_in(&raw), "{raw}");
    assert_eq!(text(Client::Messages, true, fake_response(raw.clone())).await, format!("{PREFIX}{REST}"), "{raw}");
    assert_eq!(bodies_for(&fake, "first-key").len(), 1, "the broken connection is not asked again");
    assert_eq!(bodies_for(&fake, "second-key").len(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn a_stalled_stream_is_continued_too() {
    let (fake, gw) = start(true).await;
    fake.push_rule(Rule {
        api_key: Some("first-key".into()),
        content: Some(FIRST.into()),
        stall_after_chunks: Some(4),
        ..Default::default()
    });
    gw.add_connection("anthropic", "first-key", "first-key", &fake.url(), 0).await;
    continuing(&gw, &fake, "second-key", 1).await;
    let body = ask(Client::Messages, "anthropic/claude-sonnet-4", true);
    let raw = post(&gw, Client::Messages, "anthropic/claude-sonnet-4", true, &body).await.text().await.unwrap();
    assert!(!error_in(&raw), "{raw}");
    assert_eq!(text(Client::Messages, true, fake_response(raw.clone())).await, format!("{PREFIX}{REST}"), "{raw}");
    let rows = gw.logs().await;
    assert!(rows.iter().any(|r| r["errorKind"] == "stream_stalled"), "{rows:?}");
    gw.stop().await;
}

#[tokio::test]
async fn with_the_setting_healthy_streams_of_every_protocol_arrive_whole() {
    // Same-protocol streams are followed through the internal
    // representation when they may be continued: nothing may be lost.
    let (fake, gw) = start(true).await;
    for (client, upstream) in same_protocol_pairs() {
        gw.add_connection(upstream.provider, upstream.provider, "k", &base_url(&fake, upstream.provider), 0).await;
        let resp = post(&gw, client, upstream.model, true, &ask(client, upstream.model, true)).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(text(client, true, resp).await, fake_upstream::DEFAULT_CONTENT, "{client:?}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn streams_no_continuation_can_join_end_with_their_error_event() {
    let (fake, gw) = start(true).await;
    // A tool call broken half-way: never split across targets.
    fake.push_rule(Rule {
        api_key: Some("tool-key".into()),
        tool_call: Some(ToolCall { name: "read_file".into(), arguments: json!({"path": "src/main.rs"}) }),
        drop_after_chunks: Some(3),
        ..Default::default()
    });
    gw.add_connection("openai", "tool-key", "tool-key", &base_url(&fake, "openai"), 0).await;
    continuing(&gw, &fake, "second-key", 1).await;
    combo(&gw, &["openai/gpt-4o-mini", "anthropic/claude-sonnet-4"]).await;
    let raw = post(&gw, Client::Chat, "writer", true, &ask(Client::Chat, "writer", true)).await.text().await.unwrap();
    assert!(error_in(&raw), "the stream ends with its error event: {raw}");
    assert!(bodies_for(&fake, "second-key").is_empty(), "nothing was continued");

    // Text, but no target that continues a prefix: the error says why.
    breaking(&gw, &fake, "openai-responses", "responses-key").await;
    let model = "openai-responses/gpt-5";
    let raw = post(&gw, Client::Chat, model, true, &ask(Client::Chat, model, true)).await.text().await.unwrap();
    assert!(raw.contains("could not be continued"), "{raw}");
    assert!(raw.contains(PREFIX.split(' ').next().unwrap()), "the text so far was relayed: {raw}");
    gw.stop().await;
}

#[tokio::test]
async fn a_request_that_thinks_is_not_continued_and_its_stream_says_why() {
    let (fake, gw) = start(true).await;
    breaking(&gw, &fake, "openai", "first-key").await;
    continuing(&gw, &fake, "second-key", 0).await;
    combo(&gw, &["openai/gpt-4o-mini", "anthropic/claude-sonnet-4"]).await;
    let mut body = ask(Client::Messages, "writer", true);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
    body["max_tokens"] = json!(4096);
    let raw = post(&gw, Client::Messages, "writer", true, &body).await.text().await.unwrap();
    assert!(error_in(&raw) && raw.contains("extended thinking"), "{raw}");
    assert!(bodies_for(&fake, "second-key").is_empty(), "an upstream would refuse the prefill: no call");
    gw.stop().await;
}

#[tokio::test]
async fn a_continuation_that_starts_the_answer_over_is_not_shown_twice() {
    let (fake, gw) = start(true).await;
    breaking(&gw, &fake, "openai", "first-key").await;
    // This upstream ignores the prefill and answers from the start.
    fake.push_rule(Rule {
        api_key: Some("restarting-key".into()),
        content: Some(format!("{FIRST} jumps.")),
        ..Default::default()
    });
    gw.add_connection("anthropic", "restarting-key", "restarting-key", &fake.url(), 0).await;
    combo(&gw, &["openai/gpt-4o-mini", "anthropic/claude-sonnet-4"]).await;
    let raw = post(&gw, Client::Chat, "writer", true, &ask(Client::Chat, "writer", true)).await.text().await.unwrap();
    assert!(!error_in(&raw), "{raw}");
    assert_eq!(text(Client::Chat, true, fake_response(raw.clone())).await, format!("{FIRST} jumps."), "{raw}");
    gw.stop().await;
}

#[tokio::test]
async fn without_the_setting_a_broken_stream_ends_with_its_error_event() {
    let (fake, gw) = start(false).await;
    breaking(&gw, &fake, "openai", "first-key").await;
    continuing(&gw, &fake, "second-key", 0).await;
    combo(&gw, &["openai/gpt-4o-mini", "anthropic/claude-sonnet-4"]).await;
    let raw = post(&gw, Client::Chat, "writer", true, &ask(Client::Chat, "writer", true)).await.text().await.unwrap();
    assert!(error_in(&raw), "{raw}");
    assert!(bodies_for(&fake, "second-key").is_empty());
    gw.stop().await;
}

/// `raw` as a response, for the shared stream readers.
fn fake_response(raw: String) -> reqwest::Response {
    reqwest::Response::from(http::Response::new(raw))
}
