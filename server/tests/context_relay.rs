//! `context-relay` (SPEC §R8, reference strategies §2.4) on real sockets:
//! an answer whose rate-limit headers show the serving account nearly used
//! up has a summary of the conversation written in the background; when
//! the conversation then moves to another account, that account gets the
//! summary as its first system instruction, and the account that served
//! until then does not. Another conversation, or an account with room
//! left, gets nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};
use server::routing::affinity::SessionId;
use std::{collections::BTreeMap, time::Duration};

const SUMMARY: &str = r#"{"summary":"the user is refactoring the parser"}"#;

async fn relay(config: Value) -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    let first = gw.add_connection("openai", "first", "sk-1", &v1(&fake), 0).await;
    gw.add_connection("openai", "second", "sk-2", &v1(&fake), 1).await;
    let combo = json!({"name": "relay", "strategy": "context-relay", "config": config,
        "targets": [{"model": "openai/gpt-4o-mini"}]});
    let resp = gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    // Without rate-limit protection, which would pace the nearly used account to its reported rate.
    let unprotected = json!({"connectionId": first, "enabled": false});
    let resp = gw.api(Method::POST, "/api/rate-limits").json(&unprotected).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    (fake, gw)
}

/// The first account answers once with `remaining` of 100 requests left.
fn nearly_used(fake: &FakeUpstream, remaining: u32) {
    let headers = BTreeMap::from([
        ("x-ratelimit-limit-requests".to_owned(), "100".to_owned()),
        ("x-ratelimit-remaining-requests".to_owned(), remaining.to_string()),
        ("x-ratelimit-reset-requests".to_owned(), "10m".to_owned()),
    ]);
    fake.push_rule(Rule { api_key: Some("sk-1".into()), times: Some(1), headers, ..Rule::default() });
}

async fn send(gw: &Gateway, session: &str, text: &str) -> reqwest::Response {
    let body = json!({"model": "relay", "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": text},
    ]});
    let resp = gw
        .http
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-session-id", session)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp
}

/// The chat bodies the fake got with credential `key`.
fn bodies(fake: &FakeUpstream, key: &str) -> Vec<Value> {
    fake.requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/chat") && r.headers["authorization"] == format!("Bearer {key}"))
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

/// Waits (bounded) until the background writer stored the handoff of the
/// session the `x-session-id` header names.
async fn handoff_written(gw: &Gateway, session: &str) {
    let ready = || {
        gw.state
            .routing
            .handoffs
            .ready(SessionId::of(&format!("header:{session}")), "relay", gw.state.engine.now())
            .is_some()
    };
    tokio::time::timeout(Duration::from_secs(10), async {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the handoff was written");
}

#[tokio::test]
async fn a_conversation_moving_to_another_account_gets_the_summary_written_when_its_account_neared_its_quota() {
    let (fake, gw) = relay(json!({"handoffThreshold": 0.8, "maxMessagesForSummary": 10})).await;
    // The newest matching rule wins: the conversation's answer takes the headers, the summary the JSON.
    fake.push_rule(Rule {
        api_key: Some("sk-1".into()),
        times: Some(1),
        content: Some(SUMMARY.into()),
        ..Rule::default()
    });
    nearly_used(&fake, 10);
    send(&gw, "s1", "Refactor the parser").await;
    handoff_written(&gw, "s1").await;
    let summary_call = &bodies(&fake, "sk-1")[1];
    let asked = summary_call["messages"].to_string();
    assert!(asked.contains("user: Refactor the parser") && asked.contains("Summarise"), "{asked}");
    assert_ne!(summary_call["stream"], true);

    // The first account now refuses: the conversation moves to the second, which gets the note.
    fake.push_rule(Rule { api_key: Some("sk-1".into()), status: Some(429), ..Rule::default() });
    send(&gw, "s1", "Go on").await;
    let refused = bodies(&fake, "sk-1").pop().unwrap();
    assert_eq!(
        refused["messages"][0]["content"], "You are a coding agent.",
        "the account it was written on gets no note"
    );
    let moved = bodies(&fake, "sk-2").pop().unwrap();
    let note = moved["messages"][0]["content"].as_str().unwrap();
    assert!(note.starts_with("<context_handoff>") && note.contains("refactoring the parser"), "{moved}");
    assert!(note.ends_with("You are a coding agent."), "the client's system prompt follows: {note}");

    send(&gw, "s2", "Another conversation").await;
    let other = bodies(&fake, "sk-2").pop().unwrap();
    assert_eq!(other["messages"][0]["content"], "You are a coding agent.", "another session carries no note");
}

#[tokio::test]
async fn an_account_with_room_left_writes_no_summary() {
    let (fake, gw) = relay(json!({})).await;
    nearly_used(&fake, 50);
    send(&gw, "s1", "Refactor the parser").await;
    send(&gw, "s1", "Go on").await;
    assert_eq!(bodies(&fake, "sk-1").len(), 2, "no summary call below the 0.85 default threshold");
    assert!(gw.state.routing.handoffs.ready(SessionId::of("header:s1"), "relay", gw.state.engine.now()).is_none());
    for (config, field) in [
        (json!({"handoffThreshold": 0.99}), "config.handoffThreshold"),
        (json!({"handoffProviders": ["nope"]}), "config.handoffProviders.0"),
        (json!({"handoffModel": "nope/model"}), "config.handoffModel"),
    ] {
        let combo = json!({"name": "r2", "strategy": "context-relay", "targets": [{"model": "openai/gpt-4o-mini"}], "config": config});
        let refused = gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
        assert_eq!(refused.status(), 400);
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["details"][0]["field"], field, "{body}");
    }
}
