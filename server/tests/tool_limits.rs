//! Dynamic tool-limit detection (SPEC §R8) on real sockets: an upstream
//! that refuses a request for its count of tools is failed over in a
//! combo, not asked on its other accounts, and skipped by later requests
//! with as many tools; fewer tools reach it again, a single model gets the
//! upstream's own refusal, and a combo whose every target refuses answers
//! `400 tool_limit_exceeded`.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_keys, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

const REFUSAL: &str =
    "Invalid 'tools': array too long. Expected an array with maximum length 2, but got an array with length 3 instead.";

fn with_tools(model: &str, n: usize) -> Value {
    let tools: Vec<Value> = (0..n)
        .map(|i| json!({"type": "function", "function": {"name": format!("tool_{i}"), "parameters": {"type": "object"}}}))
        .collect();
    json!({"model": model, "messages": [{"role": "user", "content": "Use a tool"}], "tools": tools})
}

async fn combo(gw: &Gateway, name: &str, models: &[&str]) {
    let targets: Vec<_> = models.iter().map(|m| json!({"model": m})).collect();
    let resp = gw
        .api(Method::POST, "/api/combos")
        .json(&json!({"name": name, "strategy": "priority", "targets": targets}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
}

async fn setup() -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o1", "sk-o1", &v1(&fake), 0).await;
    gw.add_connection("openai", "o2", "sk-o2", &v1(&fake), 1).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    let body = json!({"error": {"message": REFUSAL, "type": "invalid_request_error", "param": "tools", "code": "array_above_max_length"}});
    for key in ["sk-o1", "sk-o2"] {
        fake.push_rule(Rule {
            api_key: Some(key.into()),
            status: Some(400),
            body: Some(body.clone()),
            ..Rule::default()
        });
    }
    combo(&gw, "agents", &["openai/gpt-4o", "deepseek/deepseek-chat"]).await;
    (fake, gw)
}

#[tokio::test]
async fn a_target_that_refused_the_tool_count_is_failed_over_then_skipped() {
    let (fake, gw) = setup().await;
    let resp = gw.chat(with_tools("agents", 3), None).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(chat_keys(&fake), ["sk-o1", "sk-d"], "the refusal fails over, and not to openai's other account");
    let resp = gw.chat(with_tools("agents", 5), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(chat_keys(&fake)[2..], ["sk-d"], "as many tools or more: openai is skipped");
    // Within the limit it stated (2), openai is asked again.
    fake.push_rule(Rule { api_key: Some("sk-o1".into()), ..Rule::default() });
    let resp = gw.chat(with_tools("agents", 2), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(chat_keys(&fake)[3..], ["sk-o1"]);
}

#[tokio::test]
async fn a_single_model_gets_the_refusal_and_a_combo_of_refusing_targets_says_why() {
    let (fake, gw) = setup().await;
    let resp = gw.chat(with_tools("openai/gpt-4o", 3), None).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("array too long"), "{body}");
    assert_eq!(chat_keys(&fake), ["sk-o1"]);
    // Learned from that refusal: a combo with only openai cannot run the request.
    combo(&gw, "only-openai", &["openai/gpt-4o"]).await;
    let resp = gw.chat(with_tools("only-openai", 3), None).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "tool_limit_exceeded", "{body}");
    assert_eq!(body["error"]["diagnostics"]["excluded"][0]["reason"], "tool_limit");
    assert_eq!(chat_keys(&fake).len(), 1, "openai was not asked again");
}
