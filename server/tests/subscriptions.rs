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
    let body: Value = serde_json::from_str(&sent.body).unwrap();
    let identity = "You are Claude Code, Anthropic's official CLI for Claude.";
    assert_eq!(body["system"][0]["text"], identity, "the subscription's identity opens the system prompt");
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

/// Points connection `id` at the fake backend.
async fn to_fake(gw: &Gateway, fake: &FakeUpstream, id: &str) {
    let path = format!("/api/providers/{id}");
    let resp = gw.api(reqwest::Method::PUT, &path).json(&json!({"baseUrl": fake.url()})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
}

async fn post_json(gw: &Gateway, path: &str, body: &Value) -> (u16, Value) {
    let resp = gw.api(reqwest::Method::POST, path).json(body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// The field a 400 names first.
fn field(answer: &Value) -> &str {
    answer["error"]["details"][0]["field"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn signing_in_with_the_code_the_page_shows_adds_the_subscription_and_bad_codes_change_nothing() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    let (status, started) = post_json(&gw, "/api/oauth/claude/start", &json!({})).await;
    assert_eq!(status, 200, "{started}");
    let (url, state) = (started["authorizeUrl"].as_str().unwrap(), started["state"].as_str().unwrap());
    assert!(url.starts_with("https://claude.ai/oauth/authorize?client_id=9d1c250a-"), "{url}");
    assert!(url.contains("code_challenge_method=S256") && url.ends_with(&format!("&state={state}&code=true")), "{url}");
    let challenge = url.split("code_challenge=").nth(1).unwrap().split('&').next().unwrap();

    // A code of another sign-in, then one the issuer does not know: refused, the sign-in still waits.
    let other = json!({"state": state, "code": "fake-code-1#another-state"});
    let (status, answer) = post_json(&gw, "/api/oauth/claude/complete", &other).await;
    assert_eq!((status, field(&answer)), (400, "code"), "{answer}");
    let done = json!({"state": state, "code": format!("fake-code-1#{state}"), "name": "max"});
    let (status, created) = post_json(&gw, "/api/oauth/claude/complete", &done).await;
    assert_eq!(status, 201, "{created}");
    let verifier = fake.requests().iter().rev().find(|r| r.path == "/v1/oauth/token").map(|r| r.body.clone()).unwrap();
    let verifier: Value = serde_json::from_str(&verifier).unwrap();
    let verifier = verifier["code_verifier"].as_str().unwrap();
    assert_eq!(server::upstream::oauth::challenge_of(verifier), challenge, "PKCE S256");
    let conn = &created["connection"];
    assert_eq!((conn["provider"].as_str(), conn["authType"].as_str()), (Some("claude"), Some("oauth")));
    assert_eq!(conn["apiKeyMasked"], "…ke-1");

    // The same sign-in twice, an unknown state, a spent code, a provider without sign-in.
    let (status, answer) = post_json(&gw, "/api/oauth/claude/complete", &done).await;
    assert_eq!((status, field(&answer)), (400, "state"), "{answer}");
    let (_, again) = post_json(&gw, "/api/oauth/claude/start", &json!({})).await;
    let spent = json!({"state": again["state"], "code": "fake-code-1"});
    let (status, answer) = post_json(&gw, "/api/oauth/claude/complete", &spent).await;
    assert_eq!((status, field(&answer)), (400, "code"), "{answer}");
    assert!(answer.to_string().contains("start again"), "{answer}");
    let (status, answer) = post_json(&gw, "/api/oauth/openai/start", &json!({})).await;
    assert_eq!((status, field(&answer)), (400, "provider"), "{answer}");
    assert_eq!(gw.get_json("/api/providers").await["total"], 1, "only the one sign-in that completed");

    to_fake(&gw, &fake, conn["id"].as_str().unwrap()).await;
    assert_eq!(ask(&gw).await.status(), 200);
    assert_eq!(bearers(&fake), ["sk-ant-oat01-fake-1"]);
    gw.stop().await;
}

#[tokio::test]
async fn importing_claude_codes_credentials_file_adds_the_subscription_and_a_malformed_one_is_refused() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    let file =
        |oauth: Value| json!({"format": "claude-code", "name": "laptop", "credentials": {"claudeAiOauth": oauth}});
    let expires_at = gw.state.clock.now_ms() + HOUR_MS;
    for (body, named) in [
        (
            json!({"format": "claude-code", "name": "laptop", "credentials": {}}),
            "credentials.claudeAiOauth.accessToken",
        ),
        (file(json!({"accessToken": "at", "expiresAt": "soon"})), "credentials.claudeAiOauth.expiresAt"),
        (file(json!({"accessToken": "at", "expiresAt": 1_767_225_600})), "expiresAt"),
        (json!({"format": "gemini-cli", "name": "x", "credentials": {}}), "credentials.access_token"),
    ] {
        let (status, answer) = post_json(&gw, "/api/providers/import", &body).await;
        assert_eq!((status, field(&answer)), (400, named), "{body} → {answer}");
    }
    let good = file(json!({"accessToken": "sk-ant-oat01-imported", "refreshToken": "sk-ant-ort01-imported",
                           "expiresAt": expires_at, "scopes": ["user:inference"], "subscriptionType": "max"}));
    let (status, created) = post_json(&gw, "/api/providers/import", &good).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(gw.get_json("/api/providers").await["total"], 1, "the refused files added nothing");
    to_fake(&gw, &fake, created["connection"]["id"].as_str().unwrap()).await;
    assert_eq!(ask(&gw).await.status(), 200);
    assert_eq!(bearers(&fake), ["sk-ant-oat01-imported"]);
    gw.stop().await;
}

#[tokio::test]
async fn new_tokens_put_on_a_subscription_replace_its_token_set() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    let id = paste(&gw, &fake, "sk-ant-oat01-first", "revoked-old-refresh", HOUR_MS).await;
    // New tokens, about to expire: the next request renews them with the new refresh token.
    let expires_at = gw.state.clock.now_ms() + 60_000;
    let tokens =
        json!({"accessToken": "sk-ant-oat01-second", "refreshToken": "sk-ant-ort01-second", "expiresAt": expires_at});
    let resp = gw.api(reqwest::Method::PUT, &format!("/api/providers/{id}")).json(&tokens).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(ask(&gw).await.status(), 200);
    assert_eq!(
        bearers(&fake),
        ["sk-ant-oat01-fake-1"],
        "renewed with the refresh token that came with the new access token"
    );
    let key = gw.add_connection("openai", "k", "sk-1", &fake.url(), 0).await;
    let refresh = json!({"apiKey": "sk-2", "refreshToken": "rt"});
    let resp = gw.api(reqwest::Method::PUT, &format!("/api/providers/{key}")).json(&refresh).send().await.unwrap();
    assert_eq!(resp.status(), 400, "an API-key connection takes no refresh token");
    gw.stop().await;
}

/// A turn of client session `session` on `/v1/messages`; the answer.
async fn ask_in(gw: &Gateway, session: &str, stream: bool) -> reqwest::Response {
    let body = json!({"model": MODEL, "max_tokens": 64, "stream": stream,
                      "messages": [{"role": "user", "content": format!("hi from {session}")}]});
    let req = gw.http.post(format!("{}/v1/messages", gw.url)).header("x-session-id", session);
    req.json(&body).send().await.unwrap()
}

fn served_by(resp: &reqwest::Response) -> String {
    resp.headers()["x-omniroute-selected-connection-id"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn concurrent_sessions_spread_over_subscription_accounts_and_a_session_keeps_its_account() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    let a = paste(&gw, &fake, "sk-ant-oat01-first", "sk-ant-ort01-first", HOUR_MS).await;
    let b = paste(&gw, &fake, "sk-ant-oat01-second", "sk-ant-ort01-second", HOUR_MS).await;
    // The first account's answers stall after a few events: its stream stays open.
    let stall = Rule { api_key: Some("sk-ant-oat01-first".into()), stall_after_chunks: Some(3), ..Rule::default() };
    fake.push_rule(stall);
    let held = ask_in(&gw, "one", true).await;
    assert_eq!(
        (held.status().as_u16(), served_by(&held)),
        (200, a.clone()),
        "the first session takes the first account"
    );
    let second = ask_in(&gw, "two", false).await;
    assert_eq!(served_by(&second), b, "while session one is live there, session two goes to the other account");
    let again = ask_in(&gw, "one", false).await;
    assert_eq!(served_by(&again), a, "its own live session does not push a session away");
    drop(held);
    gw.stop().await;
}

#[tokio::test]
async fn a_browser_on_the_gateways_machine_imports_the_clis_files_from_their_default_paths() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let file = json!({"claudeAiOauth": {"accessToken": "sk-ant-oat01-on-disk-5150", "refreshToken": "sk-ant-ort01-disk",
                                        "expiresAt": 4_102_444_800_000_i64}});
    std::fs::write(home.path().join(".claude/.credentials.json"), file.to_string()).unwrap();
    let home_dir = home.path().to_path_buf();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), move |c| {
        c.home_dir = Some(home_dir);
        c.trust_proxy = true;
    })
    .await;
    let elsewhere = "203.0.113.9";
    let local = gw.get_json("/api/providers/import/local").await;
    let found: Vec<(&str, bool)> =
        local["files"].as_array().unwrap().iter().map(|f| (f["path"].as_str().unwrap(), f["found"] == true)).collect();
    assert_eq!(local["local"], true);
    assert_eq!(
        found,
        [("~/.claude/.credentials.json", true), ("~/.codex/auth.json", false), ("~/.gemini/oauth_creds.json", false)]
    );
    let remote = gw.api(reqwest::Method::GET, "/api/providers/import/local").header("x-forwarded-for", elsewhere);
    let remote: Value = remote.send().await.unwrap().json().await.unwrap();
    assert_eq!(remote, json!({"local": false, "files": []}), "a browser elsewhere is told nothing");

    let import = |body: Value, client: Option<&'static str>| {
        let mut req = gw.api(reqwest::Method::POST, "/api/providers/import").json(&body);
        if let Some(c) = client {
            req = req.header("x-forwarded-for", c);
        }
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    let from_disk = |format: &str| json!({"format": format, "name": "desk", "fromThisMachine": true});
    for (body, client, named, says) in [
        (from_disk("claude-code"), Some(elsewhere), "fromThisMachine", "only a browser on the gateway's own machine"),
        (from_disk("codex"), None, "fromThisMachine", "~/.codex/auth.json was not found"),
        (
            json!({"format": "claude-code", "name": "x", "fromThisMachine": true, "credentials": file}),
            None,
            "credentials",
            "not both",
        ),
    ] {
        let (status, answer) = import(body, client).await;
        assert_eq!((status, field(&answer)), (400, named), "{answer}");
        assert!(answer.to_string().contains(says), "{answer}");
    }
    let (status, created) = import(from_disk("claude-code"), None).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["connection"]["apiKeyMasked"], "…5150", "the file's token");
    assert_eq!(gw.get_json("/api/providers").await["total"], 1);
    gw.stop().await;
}
