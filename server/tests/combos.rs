//! Combos: CRUD through /api/combos, cross-provider failover in priority
//! order, and the answers when no target can even be tried (SPEC §R8).
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

async fn start() -> (FakeUpstream, Gateway) {
    let (fake, gw, _clock) = start_with_clock().await;
    (fake, gw)
}

/// A gateway on a manual clock with the combo cooldown wait off: these
/// tests are about the answers when nothing can run (the wait itself is
/// tested in `combo_wait.rs`).
async fn start_with_clock() -> (FakeUpstream, Gateway, std::sync::Arc<server::resilience::clock::ManualClock>) {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    let off = json!({"comboCooldownWait": {"enabled": false}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&off).send().await.unwrap().status(), 200);
    (fake, gw, clock)
}

async fn create(gw: &Gateway, combo: Value) -> (u16, Value) {
    let resp = gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

fn coding() -> Value {
    json!({"name": "coding", "strategy": "priority", "targets": [{"model": "openai/gpt-4o-mini"}, {"model": "deepseek/deepseek-chat"}]})
}

#[tokio::test]
async fn combos_are_managed_through_the_api_with_field_level_errors() {
    let gw = Gateway::start().await;
    let (status, body) = create(&gw, coding()).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(create(&gw, coding()).await.0, 409);
    let list = gw.get_json("/api/combos").await;
    assert_eq!(list["combos"][0]["name"], "coding");
    let bad = [
        (json!({"name": "x", "strategy": "fastest", "targets": [{"model": "openai/a"}]}), "strategy"),
        (
            json!({"name": "x", "strategy": "weighted", "targets": [{"model": "openai/a", "weight": 101}]}),
            "targets.0.weight",
        ),
        (
            json!({"name": "x", "strategy": "priority", "targets": [{"model": "openai/a"}], "config": {"comboTimeoutMs": 3_600_001}}),
            "config.comboTimeoutMs",
        ),
        (json!({"name": "x", "strategy": "priority", "targets": [{"model": "gpt-4o"}]}), "targets.0.model"),
        (json!({"name": "x", "strategy": "priority", "targets": [{"model": "nope/gpt-4o"}]}), "targets.0.model"),
        (json!({"name": "x", "strategy": "priority", "targets": []}), "targets"),
        (
            json!({"name": "x", "strategy": "priority", "targets": [{"model": "openai/a", "wieght": 1}]}),
            "targets.0.wieght",
        ),
    ];
    for (combo, field) in bad {
        let (status, body) = create(&gw, combo.clone()).await;
        assert_eq!(status, 400, "{combo}");
        assert_eq!(body["error"]["details"][0]["field"], field, "{body}");
    }
    let mut changed = coding();
    changed["targets"] = json!([{"model": "deepseek/deepseek-chat"}]);
    let resp = gw.api(Method::PUT, "/api/combos/coding").json(&changed).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(gw.get_json("/api/combos/coding").await["targets"], json!([{"model": "deepseek/deepseek-chat"}]));
    assert_eq!(gw.api(Method::DELETE, "/api/combos/coding").send().await.unwrap().status(), 204);
    assert_eq!(gw.api(Method::GET, "/api/combos/coding").send().await.unwrap().status(), 404);
    gw.stop().await;
}

#[tokio::test]
async fn a_failing_provider_fails_over_to_the_next_target() {
    let (fake, gw) = start().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let d = gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    create(&gw, coding()).await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), ..Default::default() });
    let resp = gw.chat(chat_body("coding", false), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], d.as_str());
    let sent: Vec<Value> = fake
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/chat"))
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    let models: Vec<&str> = sent.iter().map(|b| b["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["gpt-4o-mini", "deepseek-chat"], "each target gets its own model id");
    let ids: Vec<String> = gw.get_json("/v1/models").await["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.contains(&"coding".to_owned()));
    gw.stop().await;
}

/// Cools both targets' connections with a 429 carrying `retry-after`
/// (60 s and 120 s), or `body` when given.
async fn cool_both(fake: &FakeUpstream, gw: &Gateway, body: Option<Value>) {
    for (key, secs) in [("sk-o", "60"), ("sk-d", "120")] {
        fake.push_rule(Rule {
            api_key: Some(key.into()),
            status: Some(429),
            times: Some(1),
            body: body.clone(),
            headers: [("retry-after".to_owned(), secs.to_owned())].into(),
            ..Default::default()
        });
    }
    assert_eq!(gw.chat(chat_body("coding", false), None).await.status(), 429, "both tried, both limited");
}

#[tokio::test]
async fn when_every_target_is_rate_limited_the_answer_is_429_with_diagnostics_and_reset_at() {
    let (fake, gw) = start().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    create(&gw, coding()).await;
    cool_both(&fake, &gw, None).await;
    let calls = fake.count("/v1/chat");
    let resp = gw.chat(chat_body("coding", false), None).await;
    assert_eq!(resp.status(), 429, "transient locks, no wait (SPEC §R4)");
    assert_eq!(fake.count("/v1/chat"), calls, "no upstream call");
    let h = resp.headers();
    assert_eq!(h["retry-after"], "60");
    assert_eq!(
        (&h["x-omniroute-combo-pool-size"], &h["x-omniroute-combo-attempted"]),
        (&"2".parse().unwrap(), &"0".parse().unwrap())
    );
    assert_eq!(
        h["x-omniroute-combo-excluded"],
        "openai/gpt-4o-mini:connection_cooldown,deepseek/deepseek-chat:connection_cooldown",
        "the excluded targets, each with its reason"
    );
    assert_eq!(h["x-omniroute-combo-terminal-reason"], "all_targets_cooling_down");
    let body: Value = resp.json().await.unwrap();
    let e = &body["error"];
    assert_eq!((e["type"].as_str(), e["code"].as_str()), (Some("rate_limit_error"), Some("all_targets_cooling_down")));
    assert_eq!(e["retry_after"], 60);
    let reset_at = chrono::DateTime::parse_from_rfc3339(e["reset_at"].as_str().unwrap()).unwrap();
    assert_eq!(reset_at.timestamp_millis(), gw.state.engine.now() + 60_000, "the earliest lock's end, on the clock");
    assert_eq!(
        e["diagnostics"]["excluded"],
        json!([
            {"provider": "openai", "model": "gpt-4o-mini", "reason": "connection_cooldown", "retryAfterSeconds": 60},
            {"provider": "deepseek", "model": "deepseek-chat", "reason": "connection_cooldown", "retryAfterSeconds": 120},
        ])
    );
    assert_eq!(
        (e["recovery_hint"]["action"].as_str(), e["recovery_hint"]["retry_after_seconds"].as_u64()),
        (Some("wait"), Some(60))
    );
    gw.stop().await;
}

#[tokio::test]
async fn when_every_target_is_out_of_quota_the_answer_stays_503() {
    let (fake, gw) = start().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    create(&gw, coding()).await;
    let daily = json!({"error": {"message": "You have used up today's quota; try again tomorrow.", "type": "rate_limit_error"}});
    cool_both(&fake, &gw, Some(daily)).await;
    let resp = gw.chat(chat_body("coding", false), None).await;
    assert_eq!(resp.status(), 503, "a quota lock is no short rate limit");
    assert!(resp.headers().contains_key("retry-after"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        (body["error"]["type"].as_str(), body["error"]["code"].as_str()),
        (Some("server_error"), Some("all_targets_cooling_down"))
    );
    assert!(body["error"].get("reset_at").is_none());
    gw.stop().await;
}

#[tokio::test]
async fn an_open_breaker_is_skipped_and_without_timers_the_answer_is_404() {
    let (fake, gw) = start().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    let resp = gw
        .api(Method::PATCH, "/api/resilience")
        .json(&json!({"providerBreaker": {"apikey": {"failureThreshold": 1, "degradationThreshold": null}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    create(&gw, json!({"name": "solo", "strategy": "priority", "targets": [{"model": "openai/gpt-4o-mini"}, {"model": "groq/llama-3.3-70b"}]})).await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), times: Some(1), ..Default::default() });
    assert_eq!(gw.chat(chat_body("solo", false), None).await.status(), 503);
    let resp = gw.chat(chat_body("solo", false), None).await;
    assert_eq!(resp.status(), 503, "openai is open (a timer), groq has no connection");
    let body: Value = resp.json().await.unwrap();
    let reasons: Vec<&str> = body["error"]["diagnostics"]["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["circuit_open", "unavailable"]);

    create(&gw, json!({"name": "nowhere", "strategy": "priority", "targets": [{"model": "groq/llama-3.3-70b"}]})).await;
    let resp = gw.chat(chat_body("nowhere", false), None).await;
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "no_executable_targets");
    assert_eq!(body["error"]["recovery_hint"]["action"], "switch-combo");
    gw.stop().await;
}

#[tokio::test]
async fn the_provider_cooldown_window_gate_skips_a_provider_that_keeps_failing() {
    let (fake, gw, clock) = start_with_clock().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let d = gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    let gate = json!({"providerCooldown": {"enabled": true, "apikey": {
        "providerFailureThreshold": 2, "providerFailureWindowMs": 60_000, "providerCooldownMs": 30_000}}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&gate).send().await.unwrap().status(), 200);
    create(&gw, coding()).await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), ..Default::default() });
    let openai_calls = || fake.requests().iter().filter(|r| r.body.contains("gpt-4o-mini")).count();
    for _ in 0..3 {
        let resp = gw.chat(chat_body("coding", false), None).await;
        assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], d.as_str());
    }
    assert_eq!(openai_calls(), 2, "after 2 failures in the window, openai is skipped without a call");

    gw.api(Method::DELETE, &format!("/api/providers/{d}")).send().await.unwrap();
    let resp = gw.chat(chat_body("coding", false), None).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "30");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["diagnostics"]["excluded"][0]["reason"], "provider_cooldown");

    clock.advance(30_000);
    gw.chat(chat_body("coding", false), None).await;
    assert_eq!(openai_calls(), 3, "tried again once its cooldown ran out");
    gw.stop().await;
}

#[tokio::test]
async fn terminal_accounts_answer_all_accounts_inactive_and_a_mix_all_targets_skipped() {
    let (fake, gw) = start().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    create(&gw, coding()).await;
    for key in ["sk-o", "sk-d"] {
        let broke = json!({"error": {"message": "Your credit balance is too low"}});
        fake.push_rule(Rule { api_key: Some(key.into()), status: Some(400), body: Some(broke), ..Default::default() });
    }
    assert_eq!(gw.chat(chat_body("coding", false), None).await.status(), 400, "both tried; both out of credits");
    let calls = fake.count("/v1/chat");
    let resp = gw.chat(chat_body("coding", false), None).await;
    assert_eq!((resp.status().as_u16(), fake.count("/v1/chat")), (503, calls), "no upstream call");
    assert_eq!(resp.headers()["x-omniroute-combo-terminal-reason"], "ALL_ACCOUNTS_INACTIVE");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        (body["error"]["code"].as_str(), body["error"]["type"].as_str()),
        (Some("ALL_ACCOUNTS_INACTIVE"), Some("service_unavailable"))
    );
    assert_eq!(body["error"]["recovery_hint"]["action"], "switch-combo");

    // One target inactive, one without any connection: skipped for mixed reasons.
    create(&gw, json!({"name": "mixed", "strategy": "priority", "targets": [{"model": "openai/gpt-4o-mini"}, {"model": "groq/llama-3.3-70b"}]})).await;
    let resp = gw.chat(chat_body("mixed", false), None).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "ALL_TARGETS_SKIPPED");
    gw.stop().await;
}
