//! Behind a reverse proxy on the same host ([P] items 5 and 6): every TCP
//! peer is loopback and `Host` names 127.0.0.1, so only the forwarding
//! headers tell who is asking. With `OMNIROUTE_TRUST_PROXY=true` the
//! client is the address the proxy forwarded for — for anonymous use and
//! for the sign-in throttle; without it, a forwarded request is never
//! taken for a local one.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{ADMIN_PASSWORD, Gateway, chat_body, v1};
use fake_upstream::FakeUpstream;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// An anonymous chat request as nginx hands it on for `client`.
async fn forwarded_chat(gw: &Gateway, client: &str) -> reqwest::Response {
    let url = format!("{}/v1/chat/completions", gw.url);
    let req = gw.http.post(url).header("host", "127.0.0.1:20128").header("x-forwarded-for", client);
    req.json(&chat_body("openai/gpt-4o-mini", false)).send().await.unwrap()
}

#[tokio::test]
async fn anonymous_use_through_a_same_host_proxy_is_served_only_to_a_local_client() {
    let fake = FakeUpstream::start().await.unwrap();
    for trust_proxy in [true, false] {
        let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.trust_proxy = trust_proxy).await;
        gw.add_connection("openai", "main", "sk-upstream-1", &v1(&fake), 0).await;
        let outside = forwarded_chat(&gw, "203.0.113.7").await;
        assert_eq!(outside.status(), StatusCode::UNAUTHORIZED, "trust_proxy={trust_proxy}: an Internet client");
        let body: Value = outside.json().await.unwrap();
        assert_eq!(body["error"]["code"], "missing_api_key");
        let local = forwarded_chat(&gw, "127.0.0.1").await.status();
        let expected = if trust_proxy { StatusCode::OK } else { StatusCode::UNAUTHORIZED };
        assert_eq!(local, expected, "trust_proxy={trust_proxy}: a client on this machine through the proxy");
        gw.stop().await;
    }
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_client_has_its_own_sign_in_throttle() {
    use server::auth::login_throttle::FREE_FAILURES;
    let (gw, _clock) =
        Gateway::start_with_clock_configured(tempfile::tempdir().unwrap(), |c| c.trust_proxy = true).await;
    let login = |client: String, password: &'static str| {
        let url = format!("{}/api/auth/login", gw.url);
        gw.http.post(url).header("x-forwarded-for", client).json(&json!({"password": password})).send()
    };
    // More wrong guesses than one address may send, each from another client.
    for i in 0..=FREE_FAILURES + 1 {
        let status = login(format!("198.51.100.{}", i + 1), "wrong").await.unwrap().status();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "guess {i}: one client's failures are its own");
    }
    assert_eq!(login("203.0.113.50".into(), ADMIN_PASSWORD).await.unwrap().status(), StatusCode::OK, "the admin");
    // One client's own guesses still wait.
    for _ in 0..=FREE_FAILURES {
        login("192.0.2.9".into(), "wrong").await.unwrap();
    }
    assert_eq!(login("192.0.2.9".into(), ADMIN_PASSWORD).await.unwrap().status(), StatusCode::TOO_MANY_REQUESTS);
    gw.stop().await;
}
