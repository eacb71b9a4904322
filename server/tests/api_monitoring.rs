//! Monitoring and cooldown management APIs over the live engine: health
//! report, breaker reset, model cooldowns, the Cooldown Manager's list and
//! clear (terminal states never cleared), per-connection states. Every
//! route needs auth; credentials never appear.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

async fn call(gw: &Gateway, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = gw.api(method, path);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    assert!(!text.contains("sk-"), "no credential in {path}: {text}");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn fail(key: &str, status: u16) -> Rule {
    Rule {
        api_key: Some(key.into()),
        status: Some(status),
        body: Some(json!({"error": {"message": "nope"}})),
        ..Default::default()
    }
}

#[tokio::test]
async fn every_route_needs_auth() {
    let gw = Gateway::start().await;
    for (method, path) in [
        (Method::GET, "/api/monitoring/health"),
        (Method::DELETE, "/api/monitoring/health"),
        (Method::POST, "/api/resilience/reset"),
        (Method::GET, "/api/resilience/model-cooldowns"),
        (Method::GET, "/api/resilience/cooldowns"),
        (Method::POST, "/api/resilience/cooldowns"),
        (Method::GET, "/api/resilience/connections"),
    ] {
        let resp = gw.http.request(method, format!("{}{path}", gw.url)).send().await.unwrap();
        assert_eq!(resp.status(), 401, "{path}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn health_reports_breakers_and_connections_and_reset_closes_them() {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, _clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    let (status, _) = call(
        &gw,
        Method::PATCH,
        "/api/resilience",
        Some(json!({"providerBreaker": {"apikey": {"failureThreshold": 1, "degradationThreshold": null}}})),
    )
    .await;
    assert_eq!(status, 200);
    fake.push_rule(fail("sk-a", 503));
    gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;

    let (status, h) = call(&gw, Method::GET, "/api/monitoring/health", None).await;
    assert_eq!(status, 200);
    // One status truth: a breaker that is not CLOSED degrades the summary,
    // and the same OPEN breaker marks its connection and its provider.
    assert_eq!(h["status"], "degraded");
    assert_eq!(h["statusReasons"], json!(["openai: breaker open, failing fast; probing again in 30s."]));
    let list = gw.get_json("/api/providers").await;
    let openai = list["connections"].as_array().unwrap().iter().find(|c| c["provider"] == "openai").unwrap();
    assert_eq!((openai["status"].as_str(), openai["statusRemainingMs"].as_u64()), (Some("breaker_open"), Some(30_000)));
    let (_, held) = call(&gw, Method::GET, "/api/resilience/cooldowns", None).await;
    assert_eq!(
        held["providers"],
        json!([{"provider": "openai", "kind": "breaker", "state": "OPEN", "remainingMs": 30_000, "failureCount": 1}])
    );
    assert_eq!(h["db"]["ok"], true);
    assert!(h["system"]["rssBytes"].as_u64().unwrap() > 0);
    assert_eq!(h["circuitBreakers"], json!({"open": 1, "halfOpen": 0, "degraded": 0, "closed": 1, "total": 2}));
    let b = &h["providerBreakers"][0];
    assert_eq!(
        (b["provider"].as_str(), b["state"].as_str(), b["failureCount"].as_u64()),
        (Some("openai"), Some("OPEN"), Some(1))
    );
    assert_eq!(b["retryAfterMs"], 30_000);
    assert!(b["lastFailure"].as_str().unwrap().starts_with("2026-01-01T00:00:00"));
    assert_eq!(
        h["connectionHealth"]["openai"],
        json!({"coolingDown": 1, "terminal": 0, "total": 1, "soonestRetryAfterMs": 3000})
    );
    assert_eq!(h["connectionHealth"]["deepseek"]["coolingDown"], 0);

    let (status, r) = call(&gw, Method::POST, "/api/resilience/reset", Some(json!({"provider": "openai"}))).await;
    assert_eq!(status, 200);
    assert_eq!(r, json!({"ok": true, "resetCount": 1, "message": "Reset 1 circuit breaker(s) and model lockouts"}));
    let (_, h) = call(&gw, Method::GET, "/api/monitoring/health", None).await;
    assert_eq!(h["circuitBreakers"]["open"], 0);
    // The breaker is closed; the connection's own 3 s cooldown still keeps
    // the provider from serving.
    assert_eq!(h["status"], "degraded");
    assert_eq!(h["statusReasons"], json!(["openai: no eligible connection (1 cooling down, 0 terminal)."]));
    let (_, held) = call(&gw, Method::GET, "/api/resilience/cooldowns", None).await;
    assert_eq!(held["providers"], json!([]));
    let list = gw.get_json("/api/providers").await;
    let openai = list["connections"].as_array().unwrap().iter().find(|c| c["provider"] == "openai").unwrap();
    assert_eq!(openai["status"], "cooling_down", "the connection's own cooldown is still there");
    let (status, r) = call(&gw, Method::POST, "/api/resilience/reset", Some(json!({"provder": "x"}))).await;
    assert_eq!((status, r["error"]["details"][0]["field"].as_str()), (400, Some("provder")));
    // No body resets everything; so does DELETE /api/monitoring/health.
    let resp = gw.api(Method::POST, "/api/resilience/reset").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let (status, r) = call(&gw, Method::DELETE, "/api/monitoring/health", None).await;
    assert_eq!((status, r["ok"].as_bool(), r["resetCount"].as_u64()), (200, Some(true), Some(0)));
    gw.stop().await;
}

#[tokio::test]
async fn the_gateway_is_down_when_no_provider_can_serve() {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, _clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let (_, h) = call(&gw, Method::GET, "/api/monitoring/health", None).await;
    assert_eq!((h["status"].as_str(), h["statusReasons"].as_array().map(Vec::len)), (Some("healthy"), Some(0)));
    fake.push_rule(fail("sk-a", 503));
    gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    gw.state.health_cache.lock().take();
    let (_, h) = call(&gw, Method::GET, "/api/monitoring/health", None).await;
    assert_eq!(h["status"], "down");
    assert_eq!(h["statusReasons"], json!(["openai: no eligible connection (1 cooling down, 0 terminal)."]));
    gw.stop().await;
}

#[tokio::test]
async fn model_cooldowns_are_listed_and_lifted() {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, _clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    call(&gw, Method::PATCH, "/api/resilience", Some(json!({"modelLockout": {"enabled": true}}))).await;
    fake.push_rule(Rule { model: Some("gpt-4o".into()), ..fail("sk-a", 404) });
    gw.chat(chat_body("openai/gpt-4o", false), None).await;
    let (_, list) = call(&gw, Method::GET, "/api/resilience/model-cooldowns", None).await;
    let item = &list["items"][0];
    assert_eq!(
        (item["provider"].as_str(), item["connectionId"].as_str(), item["model"].as_str()),
        (Some("openai"), Some(a.as_str()), Some("gpt-4o"))
    );
    assert_eq!(
        (item["reason"].as_str(), item["remainingMs"].as_u64(), item["failureCount"].as_u64()),
        (Some("not_found"), Some(120_000), Some(1))
    );

    let (status, err) =
        call(&gw, Method::DELETE, "/api/resilience/model-cooldowns", Some(json!({"provider": "openai"}))).await;
    assert_eq!((status, err["error"]["details"][0]["field"].as_str()), (400, Some("model")));
    let (status, r) = call(
        &gw,
        Method::DELETE,
        "/api/resilience/model-cooldowns",
        Some(json!({"provider": "openai", "model": "gpt-4o"})),
    )
    .await;
    assert_eq!((status, r), (200, json!({"ok": true, "removed": 1})));
    let (_, list) = call(&gw, Method::GET, "/api/resilience/model-cooldowns", None).await;
    assert_eq!(list["items"], json!([]));
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);
    let (status, r) = call(&gw, Method::DELETE, "/api/resilience/model-cooldowns", Some(json!({"all": true}))).await;
    assert_eq!((status, r["removed"].as_u64()), (200, Some(0)));
    gw.stop().await;
}

#[tokio::test]
async fn the_cooldown_manager_lists_excluded_connections_and_never_clears_terminal_ones() {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, _clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    let cooling = gw.add_connection("openai", "cooling", "sk-c", &v1(&fake), 0).await;
    let terminal = gw.add_connection("openai", "terminal", "sk-t", &v1(&fake), 1).await;
    let healthy = gw.add_connection("openai", "healthy", "sk-h", &v1(&fake), 2).await;
    fake.push_rule(Rule { times: Some(1), ..fail("sk-c", 429) });
    fake.push_rule(Rule { times: Some(1), ..fail("sk-t", 402) });
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);

    let (_, list) = call(&gw, Method::GET, "/api/resilience/cooldowns", None).await;
    let rows = list["connections"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{list}");
    let find = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    let c = find(&cooling);
    assert_eq!(
        (c["status"].as_str(), c["cooldownRemainingMs"].as_u64(), c["backoffLevel"].as_u64()),
        (Some("cooling_down"), Some(3_000), Some(1))
    );
    assert_eq!(c["lastErrorType"], "rate_limited");
    let t = find(&terminal);
    assert_eq!((t["status"].as_str(), t["terminalStatus"].as_str()), (Some("terminal"), Some("credits_exhausted")));
    let (_, other) = call(&gw, Method::GET, "/api/resilience/cooldowns?provider=deepseek", None).await;
    assert_eq!(other["connections"], json!([]));

    let body = json!({"connectionIds": [cooling, terminal, healthy]});
    let (status, r) = call(&gw, Method::POST, "/api/resilience/cooldowns", Some(body)).await;
    assert_eq!(status, 200);
    assert_eq!(r, json!({"ok": true, "cleared": 1, "unchanged": 1, "skippedTerminal": 1, "lockoutsCleared": 0}));
    let (_, list) = call(&gw, Method::GET, "/api/resilience/cooldowns", None).await;
    assert_eq!(list["connections"].as_array().unwrap().len(), 1, "only the terminal one is left");
    let (_, states) = call(&gw, Method::GET, "/api/resilience/connections", None).await;
    let statuses: Vec<&str> =
        states["connections"].as_array().unwrap().iter().map(|c| c["connectionStatus"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["healthy", "terminal", "healthy"]);
    assert_eq!(states["meta"]["totalConnections"], 3);

    for bad in
        [json!({}), json!({"connectionIds": []}), json!({"all": true, "connectionIds": ["x"]}), json!({"every": true})]
    {
        let (status, _) = call(&gw, Method::POST, "/api/resilience/cooldowns", Some(bad.clone())).await;
        assert_eq!(status, 400, "{bad}");
    }
    let (status, r) =
        call(&gw, Method::POST, "/api/resilience/cooldowns", Some(json!({"all": true, "provider": "openai"}))).await;
    assert_eq!((status, r["skippedTerminal"].as_u64()), (200, Some(1)));
    gw.stop().await;
}
