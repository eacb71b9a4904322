//! Gemini CLI (Google) accounts against the fake issuer and Code Assist
//! backend (issue [L]): sign-in with the code Google's page shows (a form
//! exchange carrying the client's secret), the account's Code Assist
//! project found once on the first request and kept across a restart,
//! every client protocol stream or not through the envelope, the import
//! of `~/.gemini/oauth_creds.json` with a refresh that keeps the refresh
//! token, and the connection test.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{self, CLIENTS},
};
use fake_upstream::{CODE_ASSIST_PROJECT, DEFAULT_CONTENT, FakeUpstream};
use serde_json::{Value, json};

const MODEL: &str = "gemini-cli/gemini-2.5-pro";

async fn start(fake: &FakeUpstream, dir: tempfile::TempDir) -> Gateway {
    // The fake issues at any path ending in /oauth/token.
    let token_url = format!("{}/google/oauth/token", fake.url());
    Gateway::start_configured(dir, |c| {
        c.oauth_token_urls.insert("GEMINI_CLI".into(), token_url);
    })
    .await
}

async fn post_json(gw: &Gateway, path: &str, body: &Value) -> (u16, Value) {
    let resp = gw.api(reqwest::Method::POST, path).json(body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// The Code Assist calls the fake got: each method's name.
fn code_assist_calls(fake: &FakeUpstream) -> Vec<String> {
    let calls = fake.requests().into_iter().filter_map(|r| r.path.strip_prefix("/v1internal:").map(str::to_owned));
    calls.collect()
}

#[tokio::test]
async fn signing_in_with_google_finds_the_project_once_and_serves_every_client_protocol() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    let (status, started) = post_json(&gw, "/api/oauth/gemini-cli/start", &json!({})).await;
    assert_eq!(status, 200, "{started}");
    let (url, state) = (started["authorizeUrl"].as_str().unwrap(), started["state"].as_str().unwrap());
    assert!(url.starts_with("https://accounts.google.com/o/oauth2/v2/auth?client_id=681255809395-"), "{url}");
    assert!(url.contains("redirect_uri=https%3A%2F%2Fcodeassist.google.com%2Fauthcode"), "{url}");
    assert!(url.contains("access_type=offline") && url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform%20"), "{url}");
    let (status, created) =
        post_json(&gw, "/api/oauth/gemini-cli/complete", &json!({"state": state, "code": "fake-code-google"})).await;
    assert_eq!(status, 201, "{created}");
    let exchange = fake.requests().into_iter().find(|r| r.path == "/google/oauth/token").unwrap();
    assert_eq!(exchange.headers["content-type"], "application/x-www-form-urlencoded");
    assert!(exchange.body.contains("client_secret=GOCSPX-") && exchange.body.contains("code_verifier="));
    let id = created["connection"]["id"].as_str().unwrap().to_owned();
    let put = json!({"baseUrl": fake.url()});
    let resp = gw.api(reqwest::Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    assert_eq!(resp.status(), 200);

    for client in CLIENTS {
        for stream in [false, true] {
            let resp = clients::post(&gw, client, MODEL, stream, &clients::ask(client, MODEL, stream)).await;
            assert_eq!(resp.status(), 200, "{client:?} stream={stream}: {:?}", gw.logs().await.first());
            assert_eq!(clients::text(client, stream, resp).await, DEFAULT_CONTENT, "{client:?} stream={stream}");
        }
    }
    let calls = code_assist_calls(&fake);
    assert_eq!(calls[..2], ["loadCodeAssist", "onboardUser"], "the account is set up once: {calls:?}");
    assert_eq!(calls.len(), 10, "then eight generate calls: {calls:?}");
    let sent = fake.requests().into_iter().rfind(|r| r.path.starts_with("/v1internal:stream")).unwrap();
    assert_eq!(sent.query.as_deref(), Some("alt=sse"));
    assert_eq!(sent.headers["authorization"], "Bearer ya29.fake-1");
    let envelope: Value = serde_json::from_str(&sent.body).unwrap();
    assert_eq!(
        (envelope["model"].as_str(), envelope["project"].as_str()),
        (Some("gemini-2.5-pro"), Some(CODE_ASSIST_PROJECT))
    );
    assert!(envelope["request"]["contents"].is_array() && envelope["request"].get("model").is_none(), "{envelope}");
    let row = &gw.logs().await[0];
    assert!(row["promptTokens"].as_u64().unwrap() > 0, "tokens read through the envelope: {row}");

    // The project is stored with the tokens: a restart does not look for it again.
    let dir = gw.stop().await;
    let gw = start(&fake, dir).await;
    let resp =
        clients::post(&gw, clients::Client::Gemini, MODEL, false, &clients::ask(clients::Client::Gemini, MODEL, false))
            .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(code_assist_calls(&fake).iter().filter(|c| c.contains("CodeAssist")).count(), 1);
    let tested = gw.api(reqwest::Method::POST, &format!("/api/providers/{id}/test")).send().await.unwrap();
    let tested: Value = tested.json().await.unwrap();
    assert_eq!(tested["ok"], true, "{tested}");
    assert!(tested["models"].as_array().unwrap().contains(&json!("gemini-2.5-flash")), "{tested}");
    gw.stop().await;
}

#[tokio::test]
async fn an_imported_oauth_creds_json_is_refreshed_without_losing_its_refresh_token() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake, tempfile::tempdir().unwrap()).await;
    for (credentials, named) in [
        (json!({"token": "x"}), "credentials.access_token"),
        (json!({"access_token": "ya29.a", "expiry_date": "tomorrow"}), "credentials.expiry_date"),
    ] {
        let body = json!({"format": "gemini-cli", "name": "laptop", "credentials": credentials});
        let (status, answer) = post_json(&gw, "/api/providers/import", &body).await;
        assert_eq!((status, answer["error"]["details"][0]["field"].as_str()), (400, Some(named)), "{answer}");
    }
    // As the Gemini CLI writes it, an hour after its token expired.
    let creds = json!({"access_token": "ya29.stale", "refresh_token": "1//kept", "token_type": "Bearer",
                       "scope": "https://www.googleapis.com/auth/cloud-platform", "id_token": "x.y.z",
                       "expiry_date": gw.state.clock.now_ms() - 3_600_000});
    let body = json!({"format": "gemini-cli", "name": "laptop", "credentials": creds});
    let (status, created) = post_json(&gw, "/api/providers/import", &body).await;
    assert_eq!(status, 201, "{created}");
    let id = created["connection"]["id"].as_str().unwrap().to_owned();
    let put = json!({"baseUrl": fake.url()});
    assert_eq!(
        gw.api(reqwest::Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap().status(),
        200
    );
    let ask = clients::ask(clients::Client::Chat, MODEL, true);
    let resp = clients::post(&gw, clients::Client::Chat, MODEL, true, &ask).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(clients::text(clients::Client::Chat, true, resp).await, DEFAULT_CONTENT);
    let refresh = fake.requests().into_iter().find(|r| r.path == "/google/oauth/token").unwrap();
    assert!(
        refresh.body.contains("grant_type=refresh_token") && refresh.body.contains("refresh_token=1%2F%2Fkept"),
        "{}",
        refresh.body
    );
    assert!(refresh.body.contains("client_secret="), "Google wants the installed app's secret: {}", refresh.body);
    // Google does not rotate it: the next refresh still has it.
    let stored = gw.state.routing.connections.snapshot().connection(&id).unwrap().expires_at.unwrap();
    assert!(stored > gw.state.clock.now_ms() + 3_000_000, "the refreshed token's expiry");
    let resp = gw.api(reqwest::Method::POST, &format!("/api/providers/{id}/test")).send().await.unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap()["ok"], true);
    // Its daily quota per model, from Code Assist.
    let quotas = gw.get_json("/api/quotas?refresh=true").await;
    let account = &quotas["connections"][0];
    assert_eq!(
        (account["provider"].as_str(), account["source"].as_str()),
        (Some("gemini-cli"), Some("usage-endpoint")),
        "{quotas}"
    );
    let windows: Vec<(&str, f64)> = account["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["window"].as_str().unwrap(), w["usedPercent"].as_f64().unwrap()))
        .collect();
    assert_eq!(windows, [("gemini-2.5-pro", 20.0), ("gemini-2.5-flash", 0.0)], "{quotas}");
    gw.stop().await;
}
