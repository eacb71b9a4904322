//! `/v1/chat/completions` end to end through real sockets: pass-through,
//! streaming, ordered failover, error envelopes, request logs.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::{Gateway, chat_body, dead_url, v1};
use fake_upstream::Rule;
use serde_json::{Value, json};

#[tokio::test]
async fn non_stream_request_reaches_the_upstream_with_headers_built_from_scratch() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = gw.add_connection("openai", "main", "sk-upstream-abc", &v1(&fake), 0).await;

    let resp = gw
        .http
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-session-id", "sess-123")
        .header("x-client-secret-header", "do-not-forward")
        .header("cookie", "a=b")
        .json(&json!({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2, "x_vendor_field": {"keep": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], id.as_str());
    assert_eq!(resp.headers()["x-request-id"].len(), 32);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], fake_upstream::DEFAULT_CONTENT);

    let seen = &fake.requests()[0];
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.headers["authorization"], "Bearer sk-upstream-abc");
    for h in ["x-session-id", "x-client-secret-header", "cookie"] {
        assert!(!seen.headers.contains_key(h), "{h} must not reach the upstream");
    }
    let sent: Value = serde_json::from_str(&seen.body).unwrap();
    assert_eq!(sent["model"], "gpt-4o-mini", "provider prefix stripped");
    assert_eq!(sent["x_vendor_field"]["keep"], true, "unknown fields pass through");
    assert_eq!(sent["temperature"], 0.2);

    let logs = gw.logs().await;
    assert_eq!(logs.len(), 1);
    let row = &logs[0];
    assert_eq!(
        (row["status"].as_i64(), row["provider"].as_str(), row["model"].as_str()),
        (Some(200), Some("openai"), Some("gpt-4o-mini"))
    );
    assert!(row["promptTokens"].as_i64().unwrap() > 0);
    gw.stop().await;
}

#[tokio::test]
async fn stream_is_passed_through_byte_for_byte() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "main", "sk-s", &v1(&fake), 0).await;
    let body =
        json!({"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "stream please"}]});

    let direct = reqwest::Client::new()
        .post(format!("{}/chat/completions", v1(&fake)))
        .json(&body)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let resp =
        gw.chat(json!({"model": "openai/gpt-4o-mini", "stream": true, "messages": body["messages"]}), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let via_gateway = resp.bytes().await.unwrap();
    assert_eq!(via_gateway, direct);
    assert!(via_gateway.ends_with(b"data: [DONE]\n\n"));

    let logs = gw.logs().await;
    assert_eq!(logs[0]["stream"], true);
    assert!(logs[0]["ttfbMs"].is_i64());
    assert!(logs[0]["errorKind"].is_null(), "{}", logs[0]);
    assert!(logs[0]["completionTokens"].as_i64().unwrap() > 0);
    gw.stop().await;
}

#[tokio::test]
async fn bare_model_ids_resolve_when_one_provider_serves_them() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("deepseek", "ds", "sk-ds", &v1(&fake), 0).await;
    assert_eq!(gw.chat(chat_body("deepseek-chat", false), None).await.status(), 200);
    let unknown = gw.chat(chat_body("no-such-model", false), None).await;
    assert_eq!(unknown.status(), 404);
    let err: Value = unknown.json().await.unwrap();
    assert_eq!(
        (err["error"]["code"].as_str(), err["error"]["param"].as_str()),
        (Some("model_not_found"), Some("model"))
    );
    gw.stop().await;
}

#[tokio::test]
async fn fails_over_to_the_next_connection_on_503_drop_and_refused() {
    let (fake, gw) = Gateway::with_fake().await;
    // Plain failover: no connection cools and no session is pinned
    // (§R2.2), so every request walks the list.
    gw.without_cooldowns().await;
    let no_pins = json!({"sessionAffinityTtlMs": 0});
    let resp = gw.api(reqwest::Method::PATCH, "/api/resilience").json(&no_pins).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let refused = gw.add_connection("openai", "refused", "sk-refused", &dead_url().await, 0).await;
    let flaky = gw.add_connection("openai", "flaky", "sk-flaky", &v1(&fake), 1).await;
    let good = gw.add_connection("openai", "good", "sk-good", &v1(&fake), 2).await;
    fake.push_rule(Rule { api_key: Some("sk-flaky".into()), status: Some(503), times: Some(1), ..Default::default() });
    fake.push_rule(Rule {
        api_key: Some("sk-flaky".into()),
        drop_after_chunks: Some(1),
        times: Some(1),
        ..Default::default()
    });

    // 1st request: refused → dropped mid-body → good.
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], good.as_str());
    // 2nd request: refused → 503 → good.
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", true), None).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], good.as_str());
    assert!(resp.bytes().await.unwrap().ends_with(b"data: [DONE]\n\n"));
    // 3rd: the flaky connection has recovered and serves (priority order).
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], flaky.as_str());

    let logs = gw.logs().await;
    let trail: Vec<(String, i64, Option<String>)> = logs
        .iter()
        .rev()
        .map(|r| {
            (
                r["connectionId"].as_str().unwrap().to_owned(),
                r["status"].as_i64().unwrap(),
                r["errorKind"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let expected = vec![
        (refused.clone(), 0, Some("connect_error".to_owned())),
        (flaky.clone(), 0, Some("network_error".to_owned())),
        (good.clone(), 200, None),
        (refused.clone(), 0, Some("connect_error".to_owned())),
        (flaky.clone(), 503, Some("server_error".to_owned())),
        (good.clone(), 200, None),
        (refused, 0, Some("connect_error".to_owned())),
        (flaky, 200, None),
    ];
    assert_eq!(trail, expected);
    gw.stop().await;
}

#[tokio::test]
async fn when_every_connection_fails_the_last_error_is_answered_with_retry_after() {
    let (fake, gw) = Gateway::with_fake().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(Rule { api_key: Some("sk-a".into()), status: Some(500), ..Default::default() });
    fake.push_rule(Rule {
        api_key: Some("sk-b".into()),
        status: Some(429),
        headers: [("retry-after".to_owned(), "42".to_owned())].into(),
        ..Default::default()
    });

    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "42");
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["type"], "rate_limit_error");
    assert!(err["error"]["message"].as_str().unwrap().contains("All 2 connections of provider openai failed"));

    // Both connections now cool (a: 500 → 3 s ladder, b: the 42 s hint).
    // Without waiting for cooldowns, the next request is answered at once,
    // without an upstream call, with the earliest lapse as Retry-After.
    let no_wait = json!({"waitForCooldown": {"enabled": false}});
    let resp = gw.api(reqwest::Method::PATCH, "/api/resilience").json(&no_wait).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let before = fake.count("/v1/chat");
    fake.clear_rules();
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "3");
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "connection_cooldown");
    assert!(err["error"]["message"].as_str().unwrap().ends_with("(reset after 3s)"), "{err}");
    assert_eq!(fake.count("/v1/chat"), before);
    let _ = a;
    gw.stop().await;
}

#[tokio::test]
async fn client_errors_are_not_retried_and_pass_through() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(Rule {
        status: Some(400),
        body: Some(json!({"error": {"message": "bad temperature", "type": "invalid_request_error"}})),
        ..Default::default()
    });
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["message"], "bad temperature");
    assert_eq!(fake.count("/v1/chat"), 1, "a client error is not retried on another connection");
    gw.stop().await;
}

#[tokio::test]
async fn bad_requests_are_400_in_the_openai_envelope_and_reach_no_upstream() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let send = |body: &'static str| {
        gw.http
            .post(format!("{}/v1/chat/completions", gw.url))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (body, param) in [
        (r#"{"messages":[{"role":"user","content":"x"}]}"#, Some("model")),
        (r#"{"model":"openai/gpt-4o","messages":"hi"}"#, Some("messages")),
        ("{broken", None),
    ] {
        let resp = send(body).await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        assert!(resp.headers().contains_key("x-request-id"));
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["type"], "invalid_request_error");
        assert_eq!(err["error"]["param"].as_str(), param);
    }
    let no_creds = gw.chat(chat_body("groq/llama-3.3-70b-versatile", false), None).await;
    assert_eq!(no_creds.status(), 404);
    let err: Value = no_creds.json().await.unwrap();
    assert_eq!(err["error"]["message"], "No active credentials for provider: groq");
    assert_eq!(fake.requests().len(), 0);
    gw.stop().await;
}

#[tokio::test]
async fn models_list_and_root_probe() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("deepseek", "ds", "sk-ds", &v1(&fake), 0).await;
    let models: Value = gw.http.get(format!("{}/v1/models", gw.url)).send().await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["deepseek/deepseek-chat", "deepseek/deepseek-reasoner"]);
    let head = gw.http.head(format!("{}/", gw.url)).send().await.unwrap();
    assert_eq!(head.status(), 200);
    gw.stop().await;
}

#[tokio::test]
async fn key_allow_list_limits_the_connections_it_may_use() {
    let (fake, gw) = Gateway::with_fake().await;
    let first = gw.add_connection("openai", "first", "sk-1", &v1(&fake), 0).await;
    let second = gw.add_connection("openai", "second", "sk-2", &v1(&fake), 1).await;
    let created = gw.create_key(json!({"name": "pinned", "allowedConnections": [second]})).await;
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), created["key"].as_str()).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], second.as_str());
    assert_ne!(first, second);
    gw.stop().await;
}
