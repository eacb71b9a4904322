//! Session affinity through the real server (SPEC §R2.2): a session stays
//! on the connection that served it while that connection is eligible,
//! moves when it is not, is unpinned by a 429, survives a restart, and
//! its key reaches neither an upstream nor a log line.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};
use server::routing::affinity::{PinKey, SessionId};
use std::sync::Arc;

fn rule(key: &str, status: u16) -> Rule {
    let body = json!({"error": {"message": "slow down"}});
    Rule { api_key: Some(key.into()), status: Some(status), body: Some(body), times: Some(1), ..Default::default() }
}

/// Two OpenAI connections on one fake: `a` (priority 0) and `b` (1).
async fn two_connections(
    dir: tempfile::TempDir,
) -> (FakeUpstream, Gateway, Arc<server::resilience::clock::ManualClock>, [String; 2]) {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, clock) = Gateway::start_with_clock(dir).await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    (fake, gw, clock, [a, b])
}

/// A chat turn of `session` (an `x-session-id` header; `None`: none);
/// the connection that served it.
async fn turn(gw: &Gateway, session: Option<&str>, body: Value) -> String {
    let mut req = gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&body);
    if let Some(s) = session {
        req = req.header("x-session-id", s);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    resp.headers()["x-omniroute-selected-connection-id"].to_str().unwrap().to_owned()
}

async fn ask(gw: &Gateway, session: &str) -> String {
    turn(gw, Some(session), chat_body("openai/gpt-4o-mini", false)).await
}

fn pinned(gw: &Gateway, session_key: &str) -> Option<String> {
    let key = PinKey { session: SessionId::of(session_key), provider: "openai" };
    gw.state.routing.affinity.pinned(&key, 3_600_000).map(|c| c.to_string())
}

async fn patch(gw: &Gateway, body: Value) {
    let resp = gw.api(Method::PATCH, "/api/resilience").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

#[tokio::test]
async fn a_session_served_by_the_second_connection_stays_there_after_the_first_recovers() {
    let (fake, gw, clock, [a, b]) = two_connections(tempfile::tempdir().unwrap()).await;
    fake.push_rule(rule("sk-a", 429));
    assert_eq!(ask(&gw, "s1").await, b, "a is rate limited: b serves and the session is pinned there");
    clock.advance(3_000);
    assert_eq!(ask(&gw, "s1").await, b, "a has recovered, the session stays on b");
    assert_eq!(ask(&gw, "s1").await, b);
    assert_eq!(ask(&gw, "s2").await, a, "a new session takes the priority order");
    assert_eq!(pinned(&gw, "header:s2"), Some(a.clone()));
    let health = gw.get_json("/api/monitoring/health").await;
    let pins = &health["sessionAffinity"];
    assert_eq!(pins["ttlMs"], 3_600_000);
    let count = |id: &str| {
        pins["pins"].as_array().unwrap().iter().find(|p| p["connectionId"] == id).unwrap()["sessions"].clone()
    };
    assert_eq!((count(&a), count(&b)), (json!(1), json!(1)), "{pins}");
    gw.stop().await;
}

#[tokio::test]
async fn an_ineligible_pinned_connection_is_replaced_and_a_429_there_unpins() {
    let (fake, gw, clock, [a, b]) = two_connections(tempfile::tempdir().unwrap()).await;
    assert_eq!(ask(&gw, "s1").await, a);
    // a cools after a 429: b serves, and the pin moves to b.
    fake.push_rule(rule("sk-a", 429));
    assert_eq!(ask(&gw, "s1").await, b);
    assert_eq!(pinned(&gw, "header:s1"), Some(b.clone()));
    clock.advance(3_000);
    assert_eq!(ask(&gw, "s1").await, b, "moved for good");
    // A 429 on b, and a fails too: nothing serves, and b's pin is gone.
    fake.push_rule(rule("sk-b", 429));
    fake.push_rule(rule("sk-a", 500));
    let failed = gw
        .http
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-session-id", "s1")
        .json(&chat_body("openai/gpt-4o-mini", false))
        .send()
        .await
        .unwrap();
    assert!(!failed.status().is_success(), "{}", failed.status());
    assert_eq!(pinned(&gw, "header:s1"), None, "the 429 on the pinned connection evicted it");
    clock.advance(60_000);
    assert_eq!(ask(&gw, "s1").await, a, "unpinned: the priority order again");
    gw.stop().await;
}

#[tokio::test]
async fn a_pin_survives_a_restart() {
    let (fake, gw, _clock, [_a, b]) = two_connections(tempfile::tempdir().unwrap()).await;
    fake.push_rule(rule("sk-a", 429));
    assert_eq!(ask(&gw, "s1").await, b);
    let dir = gw.stop().await;
    let (gw, _clock) = Gateway::start_with_clock(dir).await;
    assert_eq!(ask(&gw, "s1").await, b, "the restored pin wins over the priority order");
    gw.stop().await;
}

#[tokio::test]
async fn without_session_ids_the_first_user_text_is_the_session_and_a_zero_ttl_disables_pins() {
    let (fake, gw, clock, [a, b]) = two_connections(tempfile::tempdir().unwrap()).await;
    let body = |text: &str| json!({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": text}]});
    fake.push_rule(rule("sk-a", 429));
    assert_eq!(turn(&gw, None, body("Fix the parser")).await, b);
    clock.advance(3_000);
    let mut next_turn = body("Fix the parser");
    next_turn["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": "Which file?"}),
        json!({"role": "user", "content": "src/parse.rs"}),
    ]);
    assert_eq!(turn(&gw, None, next_turn.clone()).await, b, "the conversation's next turn stays on b");
    assert_eq!(turn(&gw, None, body("Write a haiku")).await, a, "another conversation");
    let with_id = json!({"model": "openai/gpt-4o-mini", "metadata": {"session_id": "m-1"}, "messages": [{"role": "user", "content": "Fix the parser"}]});
    assert_eq!(turn(&gw, None, with_id).await, a, "a body session id outranks the text");

    patch(&gw, json!({"sessionAffinityTtlMs": 0})).await;
    assert_eq!(turn(&gw, None, next_turn).await, a, "TTL 0: no pin is followed");
    gw.stop().await;
}

#[tokio::test]
async fn pins_expire_after_the_ttl_from_their_last_use() {
    let (fake, gw, clock, [a, b]) = two_connections(tempfile::tempdir().unwrap()).await;
    patch(&gw, json!({"sessionAffinityTtlMs": 10_000})).await;
    fake.push_rule(rule("sk-a", 429));
    assert_eq!(ask(&gw, "s1").await, b);
    clock.advance(9_000);
    assert_eq!(ask(&gw, "s1").await, b, "used again within the TTL");
    clock.advance(9_000);
    assert_eq!(ask(&gw, "s1").await, b, "the TTL counts from the last use");
    clock.advance(10_000);
    assert_eq!(ask(&gw, "s1").await, a, "expired: the priority order");
    gw.stop().await;
}

#[tokio::test]
async fn session_keys_reach_neither_an_upstream_nor_a_log_line_nor_a_stored_row() {
    let captured = common::capture_logs();
    let (fake, gw, _clock, [_a, b]) = two_connections(tempfile::tempdir().unwrap()).await;
    fake.push_rule(rule("sk-a", 429));
    let secret = "sess-7f3a9c-secret";
    let resp = gw
        .http
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-claude-code-session-id", secret)
        .header("session-id", secret)
        .json(&json!({"model": "openai/gpt-4o-mini", "metadata": {"session_id": secret}, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    gw.state.store.state.flush().await;
    gw.state.store.logs.flush().await;
    for r in fake.requests() {
        assert!(r.headers.keys().all(|h| !h.contains("session")), "{:?}", r.headers);
    }
    let rows = server::db::affinity::load(&gw.state.db, 0, server::routing::affinity::MAX_PINS).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].connection_id, b);
    assert_eq!(rows[0].key, SessionId::of(&format!("header:{secret}")).hex(), "only the hash is stored");
    let logs = gw.logs().await;
    assert!(!serde_json::to_string(&logs).unwrap().contains("sess-7f3a9c"));
    let log = captured.text();
    assert!(log.contains("upstream attempt failed"), "the capture works: {log}");
    assert!(!log.contains("sess-7f3a9c"), "{log}");
    gw.stop().await;
}
