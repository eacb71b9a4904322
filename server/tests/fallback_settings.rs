//! Two routing settings on real sockets: the connection order inside a
//! target (`fallbackStrategy`) and the emergency fallback
//! (`emergencyFallback`, `OMNIROUTE_EMERGENCY_FALLBACK`), used only when
//! no target could serve a request.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use app::types::settings::read_env;
use common::{Gateway, chat_body, chat_keys, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

async fn patch(gw: &Gateway, body: Value) -> (u16, Value) {
    let resp = gw.api(Method::PATCH, "/api/resilience").json(&body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn send(gw: &Gateway, model: &str) -> reqwest::Response {
    gw.chat(chat_body(model, false), None).await
}

#[tokio::test]
async fn round_robin_connection_order_spreads_one_model_over_its_accounts() {
    let (fake, gw) = Gateway::with_fake().await;
    for key in ["sk-a", "sk-b", "sk-c"] {
        gw.add_connection("openai", key, key, &v1(&fake), 0).await;
    }
    // Off, the same conversation would stay on its pinned account.
    let (status, body) = patch(&gw, json!({"fallbackStrategy": "round-robin", "sessionAffinityTtlMs": 0})).await;
    assert_eq!(status, 200, "{body}");
    for _ in 0..6 {
        assert_eq!(send(&gw, "openai/gpt-4o-mini").await.status(), 200);
    }
    assert_eq!(chat_keys(&fake), ["sk-a", "sk-b", "sk-c", "sk-a", "sk-b", "sk-c"]);
    // The default is priority order.
    let (status, _) = patch(&gw, json!({"fallbackStrategy": "fill-first"})).await;
    assert_eq!(status, 200);
    send(&gw, "openai/gpt-4o-mini").await;
    send(&gw, "openai/gpt-4o-mini").await;
    assert_eq!(chat_keys(&fake)[6..], ["sk-a", "sk-a"]);
    let (status, body) = patch(&gw, json!({"fallbackStrategy": "cheapest"})).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["details"][0]["field"], "fallbackStrategy", "{body}");
    assert_eq!(gw.get_json("/api/resilience").await["fallbackStrategy"], "fill-first", "nothing changed");
}

/// openai answers 503 on every call; deepseek serves.
async fn failing_openai() -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), ..Rule::default() });
    (fake, gw)
}

#[tokio::test]
async fn the_emergency_fallback_serves_only_when_nothing_else_could() {
    let (fake, gw) = failing_openai().await;
    let resp = send(&gw, "openai/gpt-4o-mini").await;
    assert_eq!(resp.status(), 503, "off by default");
    let (status, body) = patch(&gw, json!({"emergencyFallback": "deepseek/deepseek-chat"})).await;
    assert_eq!(status, 200, "{body}");
    let resp = send(&gw, "openai/gpt-4o-mini").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-emergency-fallback"], "deepseek/deepseek-chat");
    assert_eq!(chat_keys(&fake)[1..], ["sk-o", "sk-d"]);
    // A request the asked-for target serves never touches it.
    fake.push_rule(Rule { api_key: Some("sk-o".into()), ..Rule::default() });
    let resp = send(&gw, "openai/gpt-4o-mini").await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("x-omniroute-emergency-fallback").is_none());
    assert_eq!(chat_keys(&fake)[3..], ["sk-o"]);
    // Bad values change nothing.
    for bad in ["deepseek", "nope/model", "deepseek/two words"] {
        let (status, body) = patch(&gw, json!({"emergencyFallback": bad})).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["error"]["details"][0]["field"], "emergencyFallback");
    }
    assert_eq!(gw.get_json("/api/resilience").await["emergencyFallback"], "deepseek/deepseek-chat");
}

#[tokio::test]
async fn the_environment_sets_the_emergency_fallback_and_a_saved_value_overrides_it_at_once() {
    let env = read_env(|k| (k == "OMNIROUTE_EMERGENCY_FALLBACK").then(|| "deepseek/deepseek-chat".to_owned())).unwrap();
    let (fake, gw) = (
        FakeUpstream::start().await.unwrap(),
        Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.resilience_env = env).await,
    );
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), ..Rule::default() });
    let sources = gw.get_json("/api/resilience/env").await;
    assert_eq!(sources["sources"][0]["variable"], "OMNIROUTE_EMERGENCY_FALLBACK");
    assert_eq!(send(&gw, "openai/gpt-4o-mini").await.status(), 200);
    // Switched off from the dashboard: no restart needed.
    let (status, _) = patch(&gw, json!({"emergencyFallback": ""})).await;
    assert_eq!(status, 200);
    assert_eq!(send(&gw, "openai/gpt-4o-mini").await.status(), 503);
    assert_eq!(chat_keys(&fake), ["sk-o", "sk-d", "sk-o"]);
}

#[tokio::test]
async fn the_flag_true_uses_the_saved_target_and_stops_the_start_when_none_is_saved() {
    let flag = || read_env(|k| (k == "OMNIROUTE_EMERGENCY_FALLBACK").then(|| "true".to_owned())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = server::config::Config::for_data_dir(dir.path().to_path_buf());
    config.resilience_env = flag();
    let refused = server::build_state(config).await.err().expect("nothing saved: the start must fail");
    let message = format!("{refused:#}");
    assert!(message.contains("OMNIROUTE_EMERGENCY_FALLBACK=true") && message.contains("none is saved"), "{message}");

    // Saved from the dashboard, then a restart with the flag: that target is on.
    let gw = Gateway::start_in(dir).await;
    assert_eq!(patch(&gw, json!({"emergencyFallback": "deepseek/deepseek-chat"})).await.0, 200);
    let gw = Gateway::start_configured(gw.stop().await, |c| c.resilience_env = flag()).await;
    assert_eq!(gw.get_json("/api/resilience").await["emergencyFallback"], "deepseek/deepseek-chat");
    gw.stop().await;
}
