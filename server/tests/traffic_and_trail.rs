//! What the dashboard learns from the request log: one request's attempt
//! trail, rows for requests the gateway refused itself (breaker open, bad
//! key, unknown model), and Health's traffic rollup with the breaker band —
//! all from real requests through the gateway.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::Rule;
use reqwest::Method;
use serde_json::{Value, json};

fn fail(key: &str) -> Rule {
    Rule {
        api_key: Some(key.into()),
        status: Some(503),
        body: Some(json!({"error": {"message": "overloaded"}})),
        ..Default::default()
    }
}

/// The rows of one request, oldest first.
async fn trail(gw: &Gateway, request_id: &str) -> Vec<Value> {
    gw.state.store.logs.flush().await;
    let body = gw.get_json(&format!("/api/logs?requestId={request_id}")).await;
    body["logs"].as_array().unwrap().clone()
}

async fn chat_id(gw: &Gateway, body: Value, key: Option<&str>) -> (u16, String) {
    let resp = gw.chat(body, key).await;
    (resp.status().as_u16(), resp.headers()["x-request-id"].to_str().unwrap().to_owned())
}

fn summary(rows: &[Value]) -> Vec<(Option<&str>, i64, Option<&str>, bool)> {
    rows.iter()
        .map(|r| {
            (r["connectionName"].as_str(), r["status"].as_i64().unwrap(), r["errorKind"].as_str(), r["refused"] == true)
        })
        .collect()
}

#[tokio::test]
async fn trails_refusals_and_traffic_come_from_real_requests() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(fail("sk-a"));

    // A failover: the trail names both attempts, oldest first.
    let (status, id) = chat_id(&gw, chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(status, 200);
    let rows = trail(&gw, &id).await;
    assert_eq!(summary(&rows), [(Some("a"), 503, Some("server_error"), false), (Some("b"), 200, None, false)]);
    assert!(rows.iter().all(|r| r["requestId"] == id.as_str()));
    let spent = (rows[1]["promptTokens"].as_u64().unwrap(), rows[1]["completionTokens"].as_u64().unwrap());
    assert!(spent.0 > 0 && spent.1 > 0, "{rows:?}");

    // Both fail with a breaker that opens at once; the next request is refused before any call.
    let patch = json!({"providerBreaker": {"apikey": {"failureThreshold": 1, "degradationThreshold": null}}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&patch).send().await.unwrap().status(), 200);
    fake.push_rule(fail("sk-b"));
    let (status, _) = chat_id(&gw, chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(status, 503);
    let calls = fake.requests().len();
    let (status, id) = chat_id(&gw, chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!((status, fake.requests().len()), (503, calls), "refused without an upstream call");
    let rows = trail(&gw, &id).await;
    assert_eq!(summary(&rows), [(None, 503, Some("provider_circuit_open"), true)]);
    assert_eq!((rows[0]["provider"].as_str(), rows[0]["model"].as_str()), (Some("openai"), Some("gpt-4o-mini")));

    // A model that names nothing is a refusal too.
    let (status, id) = chat_id(&gw, chat_body("no-such-model", false), None).await;
    assert_eq!(status, 404);
    let rows = trail(&gw, &id).await;
    assert_eq!(summary(&rows), [(None, 404, Some("model_not_found"), true)]);
    assert_eq!(rows[0]["model"], "no-such-model");

    // Traffic: every upstream attempt and the breaker's refusal (the 503
    // the client got), by outcome; per connection the attempts only; the breaker band.
    let t = gw.get_json("/api/monitoring/traffic?window=1h").await;
    assert_eq!(t["window"], "1h");
    let openai = t["providers"].as_array().unwrap().iter().find(|p| p["provider"] == "openai").unwrap();
    let total = &openai["series"]["total"];
    assert_eq!((total["ok"].as_u64(), total["serverErrors"].as_u64()), (Some(1), Some(3)), "{total}");
    assert!(total["p95Ms"].as_u64().is_some());
    assert_eq!(openai["series"]["points"].as_array().unwrap().len(), 60);
    let names: Vec<_> = openai["connections"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let per_connection: u64 = openai["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["series"]["total"]["serverErrors"].as_u64().unwrap())
        .sum();
    assert_eq!(per_connection, 2, "the refusal is no connection's");
    let band: Vec<_> = openai["breaker"].as_array().unwrap().iter().map(|s| s["state"].as_str().unwrap()).collect();
    assert_eq!(band.last(), Some(&"OPEN"), "{band:?}");
    assert_eq!(t["lastHour"]["ok"], 1);
    let tokens = |p: &Value| (p["inputTokens"].as_u64().unwrap(), p["outputTokens"].as_u64().unwrap());
    assert_eq!(tokens(total), spent, "the served attempt's tokens, and nothing for the failures");
    assert_eq!(tokens(&t["lastHour"]), spent);
    let day = gw.get_json("/api/monitoring/traffic?window=24h").await;
    assert_eq!(day["providers"][0]["series"]["points"].as_array().unwrap().len(), 48);

    let bad = gw.api(Method::GET, "/api/monitoring/traffic?window=2h").send().await.unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["field"], "window", "{body}");
    let anonymous = gw.http.get(format!("{}/api/monitoring/traffic", gw.url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);

    // Once a key exists, a wrong one is a refusal with its own row.
    gw.create_key(json!({"name": "agent"})).await;
    let (status, id) = chat_id(&gw, chat_body("openai/gpt-4o-mini", false), Some("sk-wrong")).await;
    assert_eq!(status, 401);
    assert_eq!(summary(&trail(&gw, &id).await), [(None, 401, Some("invalid_api_key"), true)]);
    gw.stop().await;
}
