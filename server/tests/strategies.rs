//! Combo strategies on real sockets (SPEC §R8): round-robin and weighted
//! spread real requests over two upstream accounts, lkgp stays on what
//! served after a failover, a combo's config survives a restart, and
//! `comboTimeoutMs` ends a combo with `504 COMBO_TIMEOUT` instead of
//! trying further targets.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, chat_keys, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

/// Two providers on the fake, told apart by their keys, and a combo over them.
async fn two_targets(strategy: &str, weights: [u32; 2], config: Value) -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    let combo = json!({"name": "spread", "strategy": strategy, "config": config, "targets": [
        {"model": "openai/gpt-4o-mini", "weight": weights[0]},
        {"model": "deepseek/deepseek-chat", "weight": weights[1]},
    ]});
    let resp = gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    (fake, gw)
}

async fn send(gw: &Gateway, n: usize) {
    for _ in 0..n {
        let resp = gw.chat(chat_body("spread", false), None).await;
        assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    }
}

#[tokio::test]
async fn round_robin_alternates_between_the_targets() {
    let (fake, gw) = two_targets("round-robin", [0, 0], json!({})).await;
    send(&gw, 6).await;
    assert_eq!(chat_keys(&fake), ["sk-o", "sk-d", "sk-o", "sk-d", "sk-o", "sk-d"]);
}

#[tokio::test]
async fn weighted_sends_traffic_in_proportion() {
    let (fake, gw) = two_targets("weighted", [90, 10], json!({})).await;
    send(&gw, 200).await;
    let to_first = chat_keys(&fake).iter().filter(|k| *k == "sk-o").count();
    assert!((160..=195).contains(&to_first), "90:10 over 200 requests sent {to_first} to the first");
}

#[tokio::test]
async fn lkgp_stays_on_the_target_that_served_after_a_failover() {
    let (fake, gw) = two_targets("lkgp", [0, 0], json!({})).await;
    // Without cooldowns the failed target stays eligible: only lkgp keeps it from leading.
    gw.without_cooldowns().await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(500), times: Some(1), ..Rule::default() });
    send(&gw, 3).await;
    assert_eq!(
        chat_keys(&fake),
        ["sk-o", "sk-d", "sk-d", "sk-d"],
        "after the failover the first target is not retried"
    );
    // Under priority the same failover leads with the first target again.
    let (fake, gw) = two_targets("priority", [0, 0], json!({})).await;
    gw.without_cooldowns().await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(500), times: Some(1), ..Rule::default() });
    send(&gw, 2).await;
    assert_eq!(chat_keys(&fake), ["sk-o", "sk-d", "sk-o"]);
}

#[tokio::test]
async fn a_combo_that_runs_out_of_time_answers_combo_timeout_without_trying_further() {
    let (fake, gw) = two_targets("priority", [0, 0], json!({"comboTimeoutMs": 300})).await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), latency_ms: 500, ..Rule::default() });
    let resp = gw.chat(chat_body("spread", false), None).await;
    assert_eq!(resp.status(), 504);
    assert!(resp.headers().contains_key("retry-after"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "COMBO_TIMEOUT", "{body}");
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(body["error"]["message"], "Combo global timeout (300ms) after 1/2 targets | tried: openai (503)");
    assert_eq!(chat_keys(&fake), ["sk-o"], "the second target was not tried");
    // The config is stored with the combo.
    let dir = gw.stop().await;
    let gw = Gateway::start_in(dir).await;
    assert_eq!(gw.get_json("/api/combos/spread").await["config"], json!({"comboTimeoutMs": 300}));
}

#[tokio::test]
async fn a_target_slower_than_the_target_timeout_is_given_up_for_the_next() {
    let (fake, gw) = two_targets("priority", [0, 0], json!({"targetTimeoutMs": 1000})).await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), latency_ms: 5_000, ..Rule::default() });
    let started = tokio::time::Instant::now();
    let resp = gw.chat(chat_body("spread", false), None).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_millis(3_000), "the slow target was given up after 1 s: {took:?}");
    assert_eq!(chat_keys(&fake), ["sk-o", "sk-d"]);
    let rows = gw.logs().await;
    let slow = rows.iter().find(|r| r["provider"] == "openai").unwrap();
    assert_eq!(slow["status"], 0, "no answer arrived: {slow}");
    let refused = gw
        .api(Method::POST, "/api/combos")
        .json(&json!({"name": "f", "strategy": "fusion", "targets": [{"model": "openai/gpt-4o"}], "config": {"targetTimeoutMs": 999}}))
        .send()
        .await
        .unwrap();
    let body: Value = refused.json().await.unwrap();
    let fields: Vec<&str> =
        body["error"]["details"].as_array().unwrap().iter().map(|d| d["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["config.targetTimeoutMs", "config.targetTimeoutMs"], "not for fusion, and at least 1000 ms");
}

async fn save(gw: &Gateway, name: &str, targets: Value) -> (u16, Value) {
    let combo = json!({"name": name, "strategy": "priority", "targets": targets});
    let resp = gw.api(Method::PUT, &format!("/api/combos/{name}")).json(&combo).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_combo_may_name_a_combo_whose_targets_take_its_place() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.without_cooldowns().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    assert_eq!(save(&gw, "inner", json!([{"model": "deepseek/deepseek-chat"}])).await.0, 200);
    assert_eq!(save(&gw, "outer", json!([{"model": "openai/gpt-4o-mini"}, {"model": "inner"}])).await.0, 200);
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), times: Some(1), ..Rule::default() });
    assert_eq!(gw.chat(chat_body("outer", false), None).await.status(), 200);
    assert_eq!(chat_keys(&fake), ["sk-o", "sk-d"], "the nested combo's target served after the first failed");
    // No cycles, at most three deep, and a named combo stays while named.
    let (status, body) = save(&gw, "inner", json!([{"model": "outer"}])).await;
    assert_eq!((status, &body["error"]["details"][0]["field"]), (400, &json!("targets.0.model")), "{body}");
    assert!(body.to_string().contains("leads back"), "{body}");
    assert_eq!(save(&gw, "c3", json!([{"model": "openai/gpt-4o"}])).await.0, 200);
    assert_eq!(save(&gw, "c2", json!([{"model": "c3"}])).await.0, 200);
    assert_eq!(save(&gw, "c1", json!([{"model": "c2"}])).await.0, 200, "three deep is allowed");
    let (status, body) = save(&gw, "c0", json!([{"model": "c1"}])).await;
    assert_eq!(status, 400, "four deep is not: {body}");
    assert!(body.to_string().contains("at most 3"), "{body}");
    let (status, body) = save(&gw, "c9", json!([{"model": "no-such-combo"}])).await;
    assert_eq!(status, 400, "{body}");
    let refused = gw.api(Method::DELETE, "/api/combos/inner").send().await.unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("combo outer names this combo"));
}

#[tokio::test]
async fn the_combo_status_says_which_targets_could_run_why_not_and_what_served_last() {
    let (fake, gw) = two_targets("priority", [0, 0], json!({})).await;
    let put = json!({"name": "spread", "strategy": "priority", "targets": [
        {"model": "openai/gpt-4o-mini"}, {"model": "deepseek/deepseek-chat"}, {"model": "groq/llama-3.3-70b"},
    ]});
    assert_eq!(gw.api(Method::PUT, "/api/combos/spread").json(&put).send().await.unwrap().status(), 200);
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(429), times: Some(1), ..Rule::default() });
    let off = json!({"comboCooldownWait": {"enabled": false}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&off).send().await.unwrap().status(), 200);
    send(&gw, 1).await;
    let status = server::services::combos::status(&gw.state);
    let combo = &status.combos[0];
    let [openai, deepseek, groq] = &combo.targets[..] else { panic!("{combo:?}") };
    assert!(!openai.ready && openai.reason.as_deref() == Some("every connection is cooling down"), "{openai:?}");
    assert!(openai.retry_after_ms.is_some_and(|ms| ms > 0));
    assert!(deepseek.ready, "{deepseek:?}");
    assert_eq!((groq.ready, groq.reason.as_deref()), (false, Some("no active connection serves it")));
    assert_eq!(combo.last_served.as_deref(), Some("deepseek/deepseek-chat"));
}
