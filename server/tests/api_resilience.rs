//! `GET`/`PATCH /api/resilience`: full effective settings, strict partial
//! updates with field-level 400s that change nothing, persistence across a
//! restart, env precedence, and the live handle the engine reads.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use app::types::settings::{ResilienceSettings, read_env};
use common::Gateway;
use reqwest::Method;
use serde_json::{Value, json};

async fn patch(gw: &Gateway, body: Value) -> (u16, Value) {
    let resp = gw.api(Method::PATCH, "/api/resilience").json(&body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn stored_row(gw: &Gateway) -> Option<String> {
    server::db::settings::get(&gw.state.db, server::services::resilience::KEY).await.unwrap()
}

/// A gateway whose environment holds `pairs`.
async fn start_with_env(dir: tempfile::TempDir, pairs: &[(&str, &str)]) -> Gateway {
    let env = read_env(|k| pairs.iter().find(|(var, _)| *var == k).map(|(_, v)| (*v).to_owned())).unwrap();
    Gateway::start_configured(dir, |c| c.resilience_env = env).await
}

#[tokio::test]
async fn get_returns_the_full_defaults_and_needs_auth() {
    // Without any environment (the harness turns auto-enable off).
    let gw = start_with_env(tempfile::tempdir().unwrap(), &[]).await;
    let resp = gw.http.get(format!("{}/api/resilience", gw.url)).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let body = gw.get_json("/api/resilience").await;
    assert_eq!(body, serde_json::to_value(ResilienceSettings::default()).unwrap());
    assert_eq!(body["requestQueue"]["maxWaitMs"], 30_000);
    assert_eq!(body["modelLockout"]["errorCodes"], json!([403, 404, 429, 502, 503, 504]));
    let resp = gw.http.patch(format!("{}/api/resilience", gw.url)).json(&json!({})).send().await.unwrap();
    assert_eq!(resp.status(), 401);
}

#[tokio::test]
async fn patch_changes_one_section_and_the_engine_sees_it_at_once() {
    let gw = Gateway::start().await;
    let before = gw.state.resilience.current();
    let (status, body) =
        patch(&gw, json!({"requestQueue": {"maxQueueDepth": 25}, "modelLockout": {"enabled": true}})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["requestQueue"]["maxQueueDepth"], 25);
    assert_eq!(body["requestQueue"]["maxWaitMs"], 30_000, "untouched fields keep their values");
    assert_eq!(body["modelLockout"]["enabled"], true);
    // The next request's snapshot carries the new values; no restart.
    let now = gw.state.resilience.current();
    assert_eq!((before.request_queue.max_queue_depth, now.request_queue.max_queue_depth), (0, 25));
    assert!(now.model_lockout.enabled);
    assert_eq!(gw.get_json("/api/resilience").await, body);
    // Only what was changed is stored.
    let stored: Value = serde_json::from_str(&stored_row(&gw).await.unwrap()).unwrap();
    assert_eq!(stored, json!({"requestQueue": {"maxQueueDepth": 25}, "modelLockout": {"enabled": true}}));
}

#[tokio::test]
async fn every_invalid_patch_is_a_field_level_400_that_changes_nothing() {
    let gw = Gateway::start().await;
    let (status, _) = patch(&gw, json!({"comboCooldownWait": {"maxAttempts": 3}})).await;
    assert_eq!(status, 200);
    let before = gw.get_json("/api/resilience").await;
    let row_before = stored_row(&gw).await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({"nope": 1}), "nope"),
        (json!({"requestQueue": {"maxWaitMS": 1}}), "requestQueue.maxWaitMS"),
        (json!({"requestQueue": {"maxWaitMs": "30s"}}), "requestQueue.maxWaitMs"),
        (json!({"requestQueue": {"maxWaitMs": -5}}), "requestQueue.maxWaitMs"),
        (json!({"requestQueue": {"maxQueueDepth": 100_001}}), "requestQueue.maxQueueDepth"),
        (
            json!({"providerBreaker": {"apikey": {"degradationThreshold": 12}}}),
            "providerBreaker.apikey.degradationThreshold",
        ),
        (json!({"modelLockout": {"baseCooldownMs": 60_000, "maxCooldownMs": 30_000}}), "modelLockout.maxCooldownMs"),
        (json!({"modelLockout": {"errorCodes": [429, 700]}}), "modelLockout.errorCodes.1"),
        (json!({"comboCooldownWait": {"maxWaitMs": 200_000, "budgetMs": 100_000}}), "comboCooldownWait.budgetMs"),
        (json!({"waitForCooldown": {"maxRetryWaitSec": 301}}), "waitForCooldown.maxRetryWaitSec"),
        (
            json!({"providerCooldown": {"minRetryCooldownMs": 60_000, "maxRetryCooldownMs": 1_000}}),
            "providerCooldown.maxRetryCooldownMs",
        ),
        (
            json!({"providerErrorRules": [{"provider": "glm", "status": 400, "match": "x", "scope": "everywhere"}]}),
            "providerErrorRules.0.scope",
        ),
        (
            json!({"providerErrorRules": [{"provider": "glm", "status": 400, "match": ""}]}),
            "providerErrorRules.0.scope",
        ),
        (json!({"sessionAffinityTtlMs": 86_400_001}), "sessionAffinityTtlMs"),
        (json!({}), "body"),
        (json!([]), "body"),
    ];
    for (body, field) in cases {
        let (status, answer) = patch(&gw, body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert_eq!(answer["error"]["message"], "Invalid request");
        let fields: Vec<&str> =
            answer["error"]["details"].as_array().unwrap().iter().map(|d| d["field"].as_str().unwrap()).collect();
        assert!(fields.contains(&field), "{body}: expected {field}, got {fields:?}");
    }
    let resp = gw
        .api(Method::PATCH, "/api/resilience")
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = gw.api(Method::PATCH, "/api/resilience").body("maxWaitMs=1").send().await.unwrap();
    assert_eq!(resp.status(), 415);
    assert_eq!(gw.get_json("/api/resilience").await, before, "no refused PATCH changed anything");
    assert_eq!(stored_row(&gw).await, row_before);
}

#[tokio::test]
async fn settings_survive_a_restart() {
    let gw = Gateway::start().await;
    let rule = json!({"provider": "glm", "status": 400, "match": "model is unavailable", "scope": "model", "reason": "server_error", "cooldownMs": 60_000});
    let (status, saved) =
        patch(&gw, json!({"providerErrorRules": [rule], "streamStallCooldown": {"enabled": true}})).await;
    assert_eq!(status, 200, "{saved}");
    let dir = gw.stop().await;
    let gw = Gateway::start_in(dir).await;
    let after = gw.get_json("/api/resilience").await;
    assert_eq!(after, saved);
    assert_eq!(after["providerErrorRules"][0]["match"], "model is unavailable");
    assert!(gw.state.resilience.current().stream_stall_cooldown.enabled);
}

#[tokio::test]
async fn env_sets_defaults_persisted_values_beat_it_and_auto_enable_env_wins() {
    let env = [("RATE_LIMIT_MAX_WAIT_MS", "15000"), ("RATE_LIMIT_AUTO_ENABLE", "false")];
    let gw = start_with_env(tempfile::tempdir().unwrap(), &env).await;
    let body = gw.get_json("/api/resilience").await;
    assert_eq!(body["requestQueue"]["maxWaitMs"], 15_000);
    assert_eq!(body["requestQueue"]["autoEnableApiKeyProviders"], false);
    let sources = gw.get_json("/api/resilience/env").await;
    let vars: Vec<(&str, bool)> = sources["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["variable"].as_str().unwrap(), s["wins"].as_bool().unwrap()))
        .collect();
    assert_eq!(vars, [("RATE_LIMIT_MAX_WAIT_MS", false), ("RATE_LIMIT_AUTO_ENABLE", true)]);
    // The pinned field cannot be changed here…
    let (status, answer) = patch(&gw, json!({"requestQueue": {"autoEnableApiKeyProviders": true}})).await;
    assert_eq!(status, 400);
    assert!(answer["error"]["details"][0]["message"].as_str().unwrap().contains("RATE_LIMIT_AUTO_ENABLE"));
    // …but a persisted value beats an env default, also after a restart.
    let (status, _) = patch(&gw, json!({"requestQueue": {"maxWaitMs": 20_000}})).await;
    assert_eq!(status, 200);
    let dir = gw.stop().await;
    let gw = start_with_env(dir, &env).await;
    assert_eq!(gw.get_json("/api/resilience").await["requestQueue"]["maxWaitMs"], 20_000);
    // The stored document keeps autoEnable untouched, so the env keeps winning.
    assert!(!gw.state.resilience.current().request_queue.auto_enable_api_key_providers);
    let dir = gw.stop().await;
    let gw = start_with_env(dir, &[]).await;
    let body = gw.get_json("/api/resilience").await;
    assert_eq!(body["requestQueue"]["autoEnableApiKeyProviders"], true, "without the env the default is back");
    assert_eq!(body["requestQueue"]["maxWaitMs"], 20_000);
}
