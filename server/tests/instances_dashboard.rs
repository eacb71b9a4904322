//! The dashboard across two gateways on one Postgres (issue [M]): a
//! session made on one works on the other, a password flood spread over
//! both is throttled as one, a key made by a plain form post on one is
//! shown once by the other, a subscription sign-in started on one
//! completes on the other, and a token both find expiring is refreshed
//! once.
//! Compiled with `--features postgres-tests`; `cargo xtask test` starts a
//! throwaway cluster and passes `OMNIROUTE_TEST_POSTGRES_URL`.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use common::{
    Gateway,
    instances::{pair, pair_with, routes_connections, stopped_pair},
};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn a_dashboard_session_made_on_one_works_on_the_other() {
    let (a, b) = pair().await;
    let cookie = a.sign_in().await;
    let page = |gw: &Gateway| gw.http.get(format!("{}/providers", gw.url)).header("cookie", &cookie).send();
    assert_eq!(page(&b).await.unwrap().status(), 200);
    let logout = a.http.post(format!("{}/api/auth/logout", a.url)).header("cookie", &cookie).json(&json!({}));
    let out = logout.send().await.unwrap();
    assert!(out.status().is_success(), "{}", out.text().await.unwrap());
    assert_eq!(page(&b).await.unwrap().status(), 303, "signed out on A is signed out on B");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_password_flood_spread_over_both_instances_is_throttled_as_one() {
    // The wait a failure imposes (1 s) must not end while argon2 checks
    // the guesses on a busy machine.
    let (a, b, _) = stopped_pair().await;
    let guess =
        |gw: &Gateway| gw.http.post(format!("{}/api/auth/login", gw.url)).json(&json!({"password": "not it"})).send();
    let before = *b.state.store.applied.borrow();
    // One address's free failures, all spent on A…
    for _ in 0..=server::auth::login_throttle::FREE_FAILURES {
        assert_eq!(guess(&a).await.unwrap().status(), 401);
    }
    let attempts = u64::from(server::auth::login_throttle::FREE_FAILURES) + 1;
    let mut applied = b.state.store.applied.subscribe();
    applied.wait_for(|n| *n >= before + attempts).await.unwrap();
    // …so B, which has not seen this address, makes it wait.
    let refused = guess(&b).await.unwrap();
    assert_eq!(refused.status(), 429, "{}", refused.text().await.unwrap());
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_key_made_by_a_plain_form_post_on_one_is_shown_once_by_the_other() {
    let (a, b) = pair().await;
    let cookie = a.sign_in().await;
    let post = a.sfn("create_key", &cookie, "name=form-key&scopes%5Binference%5D=on").header("accept", "text/html");
    let resp = post.send().await.unwrap();
    assert!(resp.status().is_redirection(), "a plain form post is sent back to the page: {}", resp.status());
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/keys?created="), "{location}");
    let page = || b.http.get(format!("{}{location}", b.url)).header("cookie", &cookie).send();
    // The key as the database knows it: its hash.
    let listed = b.get_json("/api/keys").await;
    let id = location.trim_start_matches("/keys?created=");
    assert_eq!(listed["keys"][0]["id"], id);
    let shown = page().await.unwrap().text().await.unwrap();
    let key = shown.split(server::auth::api_keys::KEY_PREFIX).skip(1).find_map(|rest| {
        let key = format!("{}{}", server::auth::api_keys::KEY_PREFIX, rest.split(['<', '"', ' ']).next()?);
        b.state.auth.keys.lookup(&key).is_some().then_some(key)
    });
    let key = key.expect("B shows the new key");
    let again = page().await.unwrap().text().await.unwrap();
    assert!(!again.contains(&key), "shown once");
    a.stop().await;
    b.stop().await;
}

/// Two gateways whose Claude sign-ins and refreshes go to `fake`'s issuer.
async fn claude_pair(fake: &FakeUpstream) -> (Gateway, Gateway) {
    let token_url = format!("{}/v1/oauth/token", fake.url());
    pair_with(move |c| {
        c.oauth_token_urls.insert("CLAUDE".into(), token_url.clone());
    })
    .await
}

#[tokio::test]
async fn a_sign_in_started_on_one_completes_on_the_other() {
    let fake = FakeUpstream::start().await.unwrap();
    let (a, b) = claude_pair(&fake).await;
    let post = |gw: &Gateway, path: &str, body: Value| gw.api(Method::POST, path).json(&body).send();
    let started: Value = post(&a, "/api/oauth/claude/start", json!({})).await.unwrap().json().await.unwrap();
    let state = started["state"].as_str().unwrap().to_owned();
    let done = json!({"state": state, "code": format!("fake-code-1#{state}"), "name": "max"});
    let resp = post(&b, "/api/oauth/claude/complete", done.clone()).await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let resp = post(&a, "/api/oauth/claude/complete", done).await.unwrap();
    assert_eq!(resp.status(), 400, "a sign-in completes once, wherever: {}", resp.text().await.unwrap());
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_both_instances_find_expiring_is_refreshed_once() {
    let fake = FakeUpstream::start().await.unwrap();
    let (a, b) = claude_pair(&fake).await;
    let pasted = json!({"provider": "claude", "name": "max", "authType": "oauth", "accessToken": "sk-ant-oat01-old",
        "refreshToken": "sk-ant-ort01-old", "expiresAt": a.state.clock.now_ms() + 60_000, "baseUrl": fake.url()});
    assert_eq!(a.api(Method::POST, "/api/providers").json(&pasted).send().await.unwrap().status(), 201);
    routes_connections(&b, 1).await;
    // The issuer is slow: both instances ask while the first refresh runs.
    fake.push_rule(Rule { path: Some("/v1/oauth/token".into()), latency_ms: 300, ..Rule::default() });
    let ask = |gw: &Gateway| {
        let body = json!({"model": "claude/claude-sonnet-4-5", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]});
        gw.http.post(format!("{}/v1/messages", gw.url)).json(&body).send()
    };
    let (on_a, on_b) = tokio::join!(ask(&a), ask(&b));
    assert_eq!((on_a.unwrap().status().as_u16(), on_b.unwrap().status().as_u16()), (200, 200));
    assert_eq!(fake.tokens_issued(), 1, "one refresh for both instances: a rotated refresh token works once");
    a.stop().await;
    b.stop().await;
}
