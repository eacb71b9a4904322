//! ChatGPT (Codex) subscriptions against the fake issuer and Codex
//! backend (issue [L]): the three ways in (sign-in with the pasted
//! redirect URL, Codex's `auth.json`, pasted tokens), the backend's wire
//! (bearer token, account header, `/codex/responses` with `stream: true`
//! and `store: false`, refused parameters dropped), every client protocol
//! stream or not — a non-stream answer gathered from the stream — and a
//! refresh that keeps the account.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{self, CLIENTS},
};
use fake_upstream::{CODEX_ACCOUNT, DEFAULT_CONTENT, FakeUpstream, jwt};
use serde_json::{Value, json};

const MODEL: &str = "codex/gpt-5-codex";

async fn start(fake: &FakeUpstream) -> Gateway {
    let token_url = format!("{}/oauth/token", fake.url());
    Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.oauth_token_urls.insert("CODEX".into(), token_url);
    })
    .await
}

async fn post_json(gw: &Gateway, path: &str, body: &Value) -> (u16, Value) {
    let resp = gw.api(reqwest::Method::POST, path).json(body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// An access token as ChatGPT's issuer makes them, naming the account.
fn access_token(label: &str) -> String {
    jwt(&json!({"label": label, "https://api.openai.com/auth": {"chatgpt_account_id": CODEX_ACCOUNT}}))
}

/// Points connection `id` at the fake backend.
async fn to_fake(gw: &Gateway, fake: &FakeUpstream, id: &str) {
    let path = format!("/api/providers/{id}");
    let resp = gw.api(reqwest::Method::PUT, &path).json(&json!({"baseUrl": fake.url()})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
}

/// The requests the fake Codex backend got.
fn backend_calls(fake: &FakeUpstream) -> Vec<fake_upstream::RecordedRequest> {
    fake.requests().into_iter().filter(|r| r.path == "/codex/responses").collect()
}

#[tokio::test]
async fn signing_in_with_the_pasted_redirect_url_adds_a_codex_subscription_that_serves_a_chat_client() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    let (status, started) = post_json(&gw, "/api/oauth/codex/start", &json!({})).await;
    assert_eq!(status, 200, "{started}");
    let (url, state) = (started["authorizeUrl"].as_str().unwrap(), started["state"].as_str().unwrap());
    assert!(
        url.starts_with("https://auth.openai.com/oauth/authorize?client_id=app_EMoamEEZ73f0CkXaXp7hrann&"),
        "{url}"
    );
    assert!(url.contains("redirect_uri=http%3A%2F%2Flocalhost%3A1455%2Fauth%2Fcallback"), "{url}");
    assert!(url.contains("scope=openid%20profile%20email%20offline_access") && url.contains("originator=codex_cli_rs"));
    // What the browser's address bar shows after the sign-in, pasted back.
    let pasted = format!("http://localhost:1455/auth/callback?code=fake-code-codex&scope=openid&state={state}");
    let (status, created) = post_json(&gw, "/api/oauth/codex/complete", &json!({"state": state, "code": pasted})).await;
    assert_eq!(status, 201, "{created}");
    let exchange = fake.requests().into_iter().find(|r| r.path == "/oauth/token").unwrap();
    assert_eq!(exchange.headers["content-type"], "application/x-www-form-urlencoded", "OpenAI's exchange is a form");
    assert!(
        exchange.body.contains("code=fake-code-codex") && exchange.body.contains("code_verifier="),
        "{}",
        exchange.body
    );
    let id = created["connection"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["connection"]["provider"], "codex");
    to_fake(&gw, &fake, &id).await;

    let body = json!({"model": MODEL, "max_tokens": 64, "temperature": 0.3, "user": "u-1",
                      "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]});
    let resp = gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], DEFAULT_CONTENT, "gathered from the stream: {answer}");
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > 0, "{answer}");
    let sent = backend_calls(&fake).pop().unwrap();
    let token = sent.headers["authorization"].strip_prefix("Bearer ").unwrap();
    assert_eq!(token.split('.').count(), 3, "the issued JWT: {token}");
    assert_eq!(sent.headers["chatgpt-account-id"], CODEX_ACCOUNT, "the account named in the issued tokens");
    assert_eq!(sent.headers["originator"], "codex_cli_rs");
    assert_eq!(sent.headers["accept"], "text/event-stream", "the backend only streams");
    let sent: Value = serde_json::from_str(&sent.body).unwrap();
    assert_eq!((&sent["stream"], &sent["store"]), (&json!(true), &json!(false)));
    assert_eq!(sent["instructions"], "Be brief.");
    for refused in ["max_output_tokens", "temperature", "user"] {
        assert!(sent.get(refused).is_none(), "{refused} is refused by the backend: {sent}");
    }
    let row = &gw.logs().await[0];
    assert_eq!((row["status"].as_u64(), row["stream"].as_bool()), (Some(200), Some(false)), "{row}");
    assert!(row["promptTokens"].as_u64().unwrap() > 0, "tokens counted: {row}");

    let tested = gw.api(reqwest::Method::POST, &format!("/api/providers/{id}/test")).send().await.unwrap();
    let tested: Value = tested.json().await.unwrap();
    assert_eq!(tested["ok"], true, "{tested}");
    assert!(tested["models"].as_array().unwrap().contains(&json!("fake-model")), "the backend's slugs: {tested}");
    gw.stop().await;
}

#[tokio::test]
async fn an_imported_codex_auth_json_serves_every_client_protocol_streamed_or_not() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    for (credentials, named) in [
        (json!({"OPENAI_API_KEY": "sk-1", "tokens": null}), "credentials.tokens"),
        (json!({"tokens": {"access_token": "opaque", "refresh_token": "rt"}}), "credentials.tokens.account_id"),
        (json!({"tokens": {"access_token": 7}}), "credentials.tokens.access_token"),
    ] {
        let body = json!({"format": "codex", "name": "laptop", "credentials": credentials});
        let (status, answer) = post_json(&gw, "/api/providers/import", &body).await;
        assert_eq!((status, answer["error"]["details"][0]["field"].as_str()), (400, Some(named)), "{answer}");
    }
    let auth_json = json!({"OPENAI_API_KEY": null, "last_refresh": "2026-12-01T10:00:00Z", "tokens": {
        "id_token": jwt(&json!({"email": "me@example.test"})), "access_token": access_token("imported"),
        "refresh_token": "rt-imported", "account_id": CODEX_ACCOUNT}});
    let body = json!({"format": "codex", "name": "laptop", "credentials": auth_json});
    let (status, created) = post_json(&gw, "/api/providers/import", &body).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(gw.get_json("/api/providers").await["total"], 1, "the refused files added nothing");
    to_fake(&gw, &fake, created["connection"]["id"].as_str().unwrap()).await;

    for client in CLIENTS {
        for stream in [false, true] {
            let resp = clients::post(&gw, client, MODEL, stream, &clients::ask(client, MODEL, stream)).await;
            assert_eq!(resp.status(), 200, "{client:?} stream={stream}");
            let text = clients::text(client, stream, resp).await;
            assert_eq!(text, DEFAULT_CONTENT, "{client:?} stream={stream}");
        }
    }
    let calls = backend_calls(&fake);
    assert_eq!(calls.len(), 8);
    assert!(calls.iter().all(|c| c.headers["authorization"] == format!("Bearer {}", access_token("imported"))));
    assert_eq!(fake.tokens_issued(), 0, "a token without an expiry is used until refused");
    gw.stop().await;
}

#[tokio::test]
async fn a_codex_token_about_to_expire_is_refreshed_with_its_scope_and_keeps_its_account() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    let body = json!({"provider": "codex", "name": "pro", "accessToken": access_token("pasted"),
                      "refreshToken": "rt-pasted", "expiresAt": gw.state.clock.now_ms() + 60_000,
                      "baseUrl": fake.url()});
    let (status, created) = post_json(&gw, "/api/providers", &body).await;
    assert_eq!(status, 201, "{created}");
    let ask = clients::ask(clients::Client::Responses, MODEL, true);
    let resp = clients::post(&gw, clients::Client::Responses, MODEL, true, &ask).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(clients::text(clients::Client::Responses, true, resp).await, DEFAULT_CONTENT);
    let refresh = fake.requests().into_iter().find(|r| r.path == "/oauth/token").unwrap();
    let refresh: Value = serde_json::from_str(&refresh.body).unwrap();
    assert_eq!(
        (refresh["refresh_token"].as_str(), refresh["scope"].as_str()),
        (Some("rt-pasted"), Some("openid profile email"))
    );
    let sent = backend_calls(&fake).pop().unwrap();
    assert_ne!(sent.headers["authorization"], format!("Bearer {}", access_token("pasted")), "the refreshed token");
    assert_eq!(sent.headers["chatgpt-account-id"], CODEX_ACCOUNT);
    // The refreshed token is 8 hours from expiry: no second refresh.
    let resp = clients::post(&gw, clients::Client::Responses, MODEL, true, &ask).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(fake.tokens_issued(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn a_chatgpt_sign_in_from_this_machine_completes_at_the_gateways_own_redirect_listener() {
    let fake = FakeUpstream::start().await.unwrap();
    // A free port stands for the Codex CLI's 1455.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let token_url = format!("{}/oauth/token", fake.url());
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.oauth_token_urls.insert("CODEX".into(), token_url);
        c.oauth_callback_port = port;
        c.trust_proxy = true;
    })
    .await;
    let start = |forwarded_for: Option<&str>| {
        let mut req = gw.api(reqwest::Method::POST, "/api/oauth/codex/start").header("origin", gw.url.clone());
        if let Some(client) = forwarded_for {
            req = req.header("x-forwarded-for", client);
        }
        async move { req.json(&json!({})).send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let remote = start(Some("203.0.113.9")).await;
    assert_eq!(remote["listening"], false, "a browser elsewhere pastes the address: {remote}");
    let started = start(None).await;
    assert_eq!(started["listening"], true, "{started}");
    let sign_in_state = started["state"].as_str().unwrap();

    // ChatGPT sends the browser to the redirect address.
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let callback =
        format!("http://127.0.0.1:{port}/auth/callback?code=fake-code-codex&scope=openid&state={sign_in_state}");
    let back = browser.get(&callback).send().await.unwrap();
    assert_eq!(back.status(), 303, "{}", back.text().await.unwrap());
    assert_eq!(back.headers()["location"], format!("{}/providers", gw.url), "back to the dashboard");
    let listed = gw.get_json("/api/providers").await;
    assert_eq!((listed["total"].as_u64(), listed["connections"][0]["provider"].as_str()), (Some(1), Some("codex")));
    let again = browser.get(&callback).send().await.unwrap();
    assert_eq!(again.status(), 400, "a sign-in completes once");
    assert!(again.text().await.unwrap().contains("No sign-in is waiting"));
    let refused =
        browser.get(format!("http://127.0.0.1:{port}/auth/callback?error=access_denied")).send().await.unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("access_denied"));
    // The remote sign-in still completes by pasting the address.
    let pasted = format!(
        "http://localhost:1455/auth/callback?code=fake-code-codex-2&state={}",
        remote["state"].as_str().unwrap()
    );
    let (status, created) =
        post_json(&gw, "/api/oauth/codex/complete", &json!({"state": remote["state"], "code": pasted})).await;
    assert_eq!(status, 201, "{created}");
    gw.stop().await;
}
