//! Subscription (OAuth) accounts against the fake issuer and backend
//! (issue [L]): a pasted token set goes out as a bearer token with the
//! OAuth beta, is refreshed before it expires — once for any number of
//! parallel requests, the rotated set stored across a restart — and after
//! a 401; a refused refresh token makes the connection `expired` without
//! a retry storm.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::Gateway;
use fake_upstream::{FakeUpstream, Rule};
use serde_json::{Value, json};

const MODEL: &str = "claude/claude-sonnet-4-5";
const HOUR_MS: i64 = 3_600_000;

async fn start(fake: &FakeUpstream, dir: tempfile::TempDir) -> Gateway {
    let token_url = format!("{}/v1/oauth/token", fake.url());
    Gateway::start_configured(dir, |c| {
        c.oauth_token_urls.insert("CLAUDE".into(), token_url);
    })
    .await
}

/// A `claude` connection from pasted tokens; its id.
async fn paste(gw: &Gateway, fake: &FakeUpstream, access: &str, refresh: &str, expires_in_ms: i64) -> String {
    let body = json!({"provider": "claude", "name": "max", "authType": "oauth", "accessToken": access,
                      "refreshToken": refresh, "expiresAt": gw.state.clock.now_ms() + expires_in_ms,
                      "baseUrl": fake.url()});
    let resp = gw.api(reqwest::Method::POST, "/api/providers").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let body: Value = resp.json().await.unwrap();
    body["connection"]["id"].as_str().unwrap().to_owned()
}

/// A Messages request, as Claude Code sends it (with a beta of its own).
async fn ask(gw: &Gateway) -> reqwest::Response {
    let body = json!({"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]});
    let req =
        gw.http.post(format!("{}/v1/messages", gw.url)).header("anthropic-beta", "interleaved-thinking-2025-05-14");
    req.json(&body).send().await.unwrap()
}

/// The bearer tokens of the requests the fake backend got, in order.
fn bearers(fake: &FakeUpstream) -> Vec<String> {
    let sent = fake.requests().into_iter().filter(|r| r.path == "/v1/messages");
    sent.filter_map(|r| r.headers.get("authorization")?.strip_prefix("Bearer ").map(str::to_owned)).collect()
}

#[tokio::test]
async fn a_subscription_token_goes_as_a_bearer_token_with_the_oauth_beta_and_is_never_shown() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    paste(&gw, &fake, "sk-ant-oat01-pasted-abcd", "sk-ant-ort01-pasted", HOUR_MS).await;
    let resp = ask(&gw).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let sent = fake.requests().into_iter().find(|r| r.path == "/v1/messages").unwrap();
    assert_eq!(sent.headers["authorization"], "Bearer sk-ant-oat01-pasted-abcd");
    assert!(!sent.headers.contains_key("x-api-key"), "never x-api-key: {:?}", sent.headers);
    assert_eq!(sent.headers["anthropic-beta"], "oauth-2025-04-20,interleaved-thinking-2025-05-14");
    let listed = gw.api(reqwest::Method::GET, "/api/providers").send().await.unwrap().text().await.unwrap();
    assert!(listed.contains("…abcd") && !listed.contains("pasted-abcd") && !listed.contains("ort01"), "{listed}");
    assert_eq!(fake.tokens_issued(), 0, "a token an hour from expiry is not refreshed");
    gw.stop().await;
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_once_for_parallel_requests_and_the_rotated_set_survives_a_restart() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    paste(&gw, &fake, "sk-ant-oat01-old", "sk-ant-ort01-old", 60_000).await;
    // The issuer is slow: every request arrives while the refresh runs.
    fake.push_rule(Rule { path: Some("/v1/oauth/token".into()), latency_ms: 300, ..Rule::default() });
    let answers = futures_util::future::join_all((0..8).map(|_| ask(&gw))).await;
    assert!(answers.iter().all(|a| a.status() == 200), "{:?}", answers.iter().map(|a| a.status()).collect::<Vec<_>>());
    assert_eq!(fake.tokens_issued(), 1, "one refresh for all eight");
    assert!(bearers(&fake).iter().all(|t| t == "sk-ant-oat01-fake-1"), "{:?}", bearers(&fake));
    let dir = gw.stop().await;
    let gw = start(&fake, dir).await;
    assert_eq!(ask(&gw).await.status(), 200);
    assert_eq!(bearers(&fake).last().unwrap(), "sk-ant-oat01-fake-1", "the refreshed token was stored");
    assert_eq!(fake.tokens_issued(), 1, "it is 8 hours from expiry now");
    gw.stop().await;
}

#[tokio::test]
async fn a_401_refreshes_the_token_and_tries_once_more_without_marking_the_connection() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    let id = paste(&gw, &fake, "expired-by-the-backend", "sk-ant-ort01-one", HOUR_MS).await;
    let resp = ask(&gw).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(bearers(&fake), ["expired-by-the-backend", "sk-ant-oat01-fake-1"]);
    let kinds: Vec<Value> = gw.logs().await.iter().map(|r| r["errorKind"].clone()).collect();
    assert_eq!(kinds, [Value::Null, json!("auth_refreshed")], "newest first");
    assert_eq!(gw.state.engine.health(&id), Default::default(), "the refreshed 401 counts for nothing");
    gw.stop().await;
}

#[tokio::test]
async fn a_refused_refresh_token_makes_the_connection_expired_without_a_retry_storm() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    paste(&gw, &fake, "expired-for-good", "revoked-by-the-user", HOUR_MS).await;
    let first = ask(&gw).await;
    assert_eq!(first.status(), 401);
    let again = ask(&gw).await;
    assert_eq!(again.status(), 401);
    let body: Value = again.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("reconnect"), "{body}");
    assert_eq!(fake.count("/v1/oauth/token"), 1, "one refused refresh, no more");
    assert_eq!(bearers(&fake).len(), 1, "the expired connection is not called again");
    let listed: Value = gw.get_json("/api/providers").await;
    assert_eq!(listed["connections"][0]["terminalStatus"], "expired", "{listed}");
    gw.stop().await;
}

#[tokio::test]
async fn token_fields_are_checked_field_by_field() {
    let gw = Gateway::start().await;
    let now = gw.state.clock.now_ms();
    for (body, field) in [
        (json!({"provider": "openai", "name": "k", "apiKey": "sk-1", "refreshToken": "rt"}), "refreshToken"),
        (json!({"provider": "claude", "name": "s", "accessToken": "at", "expiresAt": now / 1000}), "expiresAt"),
        (json!({"provider": "claude", "name": "s", "refreshToken": "rt"}), "accessToken"),
        (json!({"provider": "claude", "name": "s", "accessToken": "at", "refreshToken": " "}), "refreshToken"),
    ] {
        let resp = gw.api(reqwest::Method::POST, "/api/providers").json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let answer: Value = resp.json().await.unwrap();
        assert!(answer.to_string().contains(field), "{body} → {answer}");
    }
    assert_eq!(gw.get_json("/api/providers").await["total"], 0, "nothing was saved");
    gw.stop().await;
}
