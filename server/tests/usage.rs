//! `GET /api/usage` (issue [N] item 1): requests and tokens from the
//! request log, per client key, model, connection and day — a request
//! that failed over counts once, its tokens where they were spent — and
//! bad queries refused by field.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::Rule;
use reqwest::Method;
use serde_json::{Value, json};

async fn key(gw: &Gateway, name: &str) -> (String, String) {
    let created: Value =
        gw.api(Method::POST, "/api/keys").json(&json!({"name": name})).send().await.unwrap().json().await.unwrap();
    (created["id"].as_str().unwrap().to_owned(), created["key"].as_str().unwrap().to_owned())
}

/// `(group, name, requests, input tokens)` of each group.
async fn usage(gw: &Gateway, query: &str) -> Vec<(Value, Value, i64, i64)> {
    let report: Value = gw.get_json(&format!("/api/usage?{query}")).await;
    let groups = report["groups"].as_array().unwrap();
    groups
        .iter()
        .map(|g| {
            let n = |f: &str| g[f].as_i64().unwrap();
            (g["group"].clone(), g["name"].clone(), n("requests"), n("inputTokens"))
        })
        .collect()
}

#[tokio::test]
async fn usage_adds_up_requests_and_tokens_per_key_model_connection_and_day() {
    let (fake, gw) = Gateway::with_fake().await;
    let flaky = gw.add_connection("openai", "flaky", "sk-flaky", &v1(&fake), 0).await;
    let good = gw.add_connection("openai", "good", "sk-good", &v1(&fake), 1).await;
    let (alice_id, alice) = key(&gw, "alice").await;
    let (bob_id, bob) = key(&gw, "bob").await;
    // Alice's first request fails on the flaky connection and is served by the good one.
    fake.push_rule(Rule { api_key: Some("sk-flaky".into()), status: Some(503), times: Some(1), ..Rule::default() });
    for (body, who) in [
        (chat_body("openai/gpt-4o-mini", false), &alice),
        (chat_body("openai/gpt-4o-mini", false), &alice),
        (chat_body("openai/gpt-4o", true), &bob),
    ] {
        let resp = gw.chat(body, Some(who)).await;
        assert_eq!(resp.status(), 200);
        resp.bytes().await.unwrap();
    }
    let rows = gw.logs().await;
    assert_eq!(rows.len(), 4, "three requests, one of them tried twice");
    let tokens = |model: &str| -> i64 {
        rows.iter().filter(|r| r["model"] == model).filter_map(|r| r["promptTokens"].as_i64()).sum()
    };
    assert!(tokens("gpt-4o-mini") > 0 && tokens("gpt-4o") > 0, "the fake reports usage: {rows:?}");

    let by_key = usage(&gw, "groupBy=key").await;
    assert_eq!(
        by_key,
        [
            (json!(alice_id), json!("alice"), 2, tokens("gpt-4o-mini")),
            (json!(bob_id), json!("bob"), 1, tokens("gpt-4o"))
        ]
    );
    let by_model = usage(&gw, "groupBy=model").await;
    assert_eq!(by_model[0].0, "openai/gpt-4o-mini");
    assert_eq!((by_model[0].2, by_model[1].0.clone(), by_model[1].2), (2, json!("openai/gpt-4o"), 1));
    let by_connection = usage(&gw, "groupBy=connection").await;
    assert_eq!(
        by_connection.iter().map(|g| (g.0.clone(), g.1.clone(), g.2)).collect::<Vec<_>>(),
        [(json!(good), json!("good"), 3), (json!(flaky), json!("flaky"), 1)],
        "the failed attempt is the flaky connection's, without tokens"
    );
    assert_eq!(by_connection[1].3, 0);
    let today =
        chrono::DateTime::from_timestamp_millis(gw.state.clock.now_ms()).unwrap().format("%Y-%m-%d").to_string();
    assert_eq!(
        usage(&gw, "groupBy=day").await,
        [(json!(today), Value::Null, 3, tokens("gpt-4o-mini") + tokens("gpt-4o"))]
    );
    // A window before any of it is empty.
    assert_eq!(usage(&gw, "groupBy=day&since=0&until=1000").await, []);

    for (query, field) in [("groupBy=week", "groupBy"), ("since=5&until=5", "since"), ("group=key", "query")] {
        let resp = gw.api(Method::GET, &format!("/api/usage?{query}")).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{query}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["details"][0]["field"], field, "{query}: {body}");
    }
    gw.stop().await;
}
