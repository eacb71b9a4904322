//! Subscription plan windows (issue [L] item 5): read from Claude's and
//! Codex's usage endpoints and from the headers of every answer, served as
//! `GET /api/quotas`, kept across a restart, and read by the
//! account-ranking strategies — on two
//! Claude subscriptions `reset-aware` drains the one about to renew and
//! `headroom` leads with the one furthest from its limit.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::Gateway;
use fake_upstream::{CODEX_ACCOUNT, FakeUpstream, Rule, jwt};
use reqwest::Method;
use serde_json::{Value, json};

const HOUR_MS: i64 = 3_600_000;

/// A subscription of `provider` with `token`, on the fake; its id.
async fn subscription(gw: &Gateway, fake: &FakeUpstream, provider: &str, name: &str, token: &str) -> String {
    let body = json!({"provider": provider, "name": name, "authType": "oauth", "accessToken": token,
                      "expiresAt": gw.state.clock.now_ms() + 8 * HOUR_MS, "baseUrl": fake.url()});
    let resp = gw.api(Method::POST, "/api/providers").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    resp.json::<Value>().await.unwrap()["connection"]["id"].as_str().unwrap().to_owned()
}

/// The windows `/api/quotas` lists for connection `id`: `(window, used %)`.
fn windows(list: &Value, id: &str) -> Vec<(String, f64)> {
    let c = list["connections"].as_array().unwrap().iter().find(|c| c["connectionId"] == id).unwrap();
    let w = c["windows"].as_array().unwrap();
    w.iter().map(|w| (w["window"].as_str().unwrap().to_owned(), w["usedPercent"].as_f64().unwrap())).collect()
}

fn entry<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["connections"].as_array().unwrap().iter().find(|c| c["connectionId"] == id).unwrap()
}

#[tokio::test]
async fn plan_windows_come_from_the_usage_endpoints_and_from_every_answer() {
    let (fake, gw) = Gateway::with_fake().await;
    let claude = subscription(&gw, &fake, "claude", "max", "sk-ant-oat01-quota").await;
    let access = jwt(&json!({"https://api.openai.com/auth": {"chatgpt_account_id": CODEX_ACCOUNT}}));
    let codex = subscription(&gw, &fake, "codex", "pro", &access).await;
    gw.add_connection("openai", "key", "sk-1", &format!("{}/v1", fake.url()), 0).await;

    let before: Value = gw.get_json("/api/quotas").await;
    assert_eq!(before["connections"].as_array().unwrap().len(), 2, "the subscriptions only: {before}");
    assert_eq!((entry(&before, &claude)["source"].clone(), windows(&before, &claude)), (Value::Null, vec![]));

    let fetched: Value = gw.get_json("/api/quotas?refresh=true").await;
    assert_eq!(windows(&fetched, &claude), [("5h".to_owned(), 12.0), ("7d".to_owned(), 34.0)], "{fetched}");
    assert_eq!(windows(&fetched, &codex), [("5h".to_owned(), 25.0), ("7d".to_owned(), 50.0)], "{fetched}");
    let c = entry(&fetched, &codex);
    assert_eq!(
        (c["plan"].as_str(), c["source"].as_str(), c["name"].as_str()),
        (Some("pro"), Some("usage-endpoint"), Some("pro"))
    );
    assert!(c["windows"][1]["resetsAt"].as_i64().unwrap() > gw.state.clock.now_ms() + 95 * HOUR_MS);
    let sent = fake.requests();
    let usage = sent.iter().find(|r| r.path == "/api/oauth/usage").unwrap();
    assert_eq!(
        (usage.headers["authorization"].as_str(), usage.headers["anthropic-beta"].as_str()),
        ("Bearer sk-ant-oat01-quota", "oauth-2025-04-20")
    );
    let usage = sent.iter().find(|r| r.path == "/wham/usage").unwrap();
    assert_eq!(usage.headers["chatgpt-account-id"], CODEX_ACCOUNT);

    // An answer's unified headers move the bars at once.
    let reset = (gw.state.clock.now_ms() / 1000 + 600).to_string();
    let headers = [
        ("anthropic-ratelimit-unified-5h-utilization", "0.5"),
        ("anthropic-ratelimit-unified-5h-reset", reset.as_str()),
        ("anthropic-ratelimit-unified-7d-utilization", "0.4"),
    ];
    let headers = headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    fake.push_rule(Rule { path: Some("/v1/messages".into()), headers, ..Rule::default() });
    let body =
        json!({"model": "claude/claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]});
    let resp = gw.http.post(format!("{}/v1/messages", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let after: Value = gw.get_json("/api/quotas").await;
    assert_eq!(windows(&after, &claude), [("5h".to_owned(), 50.0), ("7d".to_owned(), 40.0)]);
    assert_eq!(entry(&after, &claude)["source"], "headers");
    assert_eq!(entry(&after, &claude)["windows"][0]["resetsAt"].as_i64(), Some(reset.parse::<i64>().unwrap() * 1000));

    // Stored at shutdown, back after a restart.
    let gw = Gateway::start_configured(gw.stop().await, |_| {}).await;
    let restarted: Value = gw.get_json("/api/quotas").await;
    assert_eq!(windows(&restarted, &claude), [("5h".to_owned(), 50.0), ("7d".to_owned(), 40.0)], "{restarted}");
    assert_eq!(
        (entry(&restarted, &codex)["plan"].as_str(), entry(&restarted, &claude)["source"].as_str()),
        (Some("pro"), Some("headers"))
    );

    // A refused token is reported, and the last windows stay.
    fake.push_rule(Rule { path: Some("/api/oauth/usage".into()), status: Some(401), ..Rule::default() });
    let refused: Value = gw.get_json("/api/quotas?refresh=true").await;
    assert!(entry(&refused, &claude)["error"].as_str().unwrap().contains("401"), "{refused}");
    assert_eq!(windows(&refused, &claude)[0].1, 50.0);
    let resp = gw.api(Method::GET, "/api/quotas?refresh=maybe").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    gw.stop().await;
}

/// Two Claude subscriptions under a combo of `strategy`: A nearly used up
/// but renewing within the hour, B little used with most of its week to
/// run. The account the combo's first request went to.
async fn lead_of(strategy: &str) -> &'static str {
    let (fake, gw) = Gateway::with_fake().await;
    subscription(&gw, &fake, "claude", "a", "sk-ant-oat01-a").await;
    subscription(&gw, &fake, "claude", "b", "sk-ant-oat01-b").await;
    let now_s = gw.state.clock.now_ms() / 1000;
    let window = |used: f64, in_s: i64| json!({"utilization": used, "resets_at": rfc3339(now_s + in_s)});
    for (token, usage) in [
        ("sk-ant-oat01-a", json!({"five_hour": window(85.0, 60), "seven_day": window(85.0, 3600)})),
        ("sk-ant-oat01-b", json!({"five_hour": window(10.0, 4 * 3600), "seven_day": window(10.0, 6 * 86_400)})),
    ] {
        fake.push_rule(Rule {
            path: Some("/api/oauth/usage".into()),
            api_key: Some(token.into()),
            body: Some(usage),
            ..Rule::default()
        });
    }
    gw.get_json("/api/quotas?refresh=true").await;
    let combo = json!({"name": "subs", "strategy": strategy, "targets": [{"model": "claude/claude-sonnet-4-5"}]});
    assert_eq!(gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap().status(), 201);
    let body = json!({"model": "subs", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]});
    let resp = gw.http.post(format!("{}/v1/messages", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sent = fake.requests().into_iter().find(|r| r.path == "/v1/messages").unwrap();
    let lead = if sent.headers["authorization"].ends_with("-a") { "a" } else { "b" };
    gw.stop().await;
    lead
}

fn rfc3339(epoch_s: i64) -> String {
    chrono::DateTime::from_timestamp(epoch_s, 0).unwrap().to_rfc3339()
}

#[tokio::test]
async fn on_subscriptions_reset_aware_drains_the_account_about_to_renew_and_headroom_spares_it() {
    assert_eq!(lead_of("reset-aware").await, "a");
    assert_eq!(lead_of("headroom").await, "b");
    assert_eq!(lead_of("reset-window").await, "a");
}
