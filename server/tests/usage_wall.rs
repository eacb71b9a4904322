//! The Claude subscription usage wall through the real server (SPEC
//! §R2.1): with `lowPriorityMode` the wall's 429 is answered from the
//! low-priority lane on the same account, which every later request uses
//! until the window renews, a busy slow slot is waited for, and the lane's
//! end sends the wall down the cooldown path; with `autoLimitReset` the
//! weekly reset is claimed once and the request retried at full speed.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::Gateway;
use fake_upstream::{CLAUDE_ORG, FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

const MODEL: &str = "claude/claude-sonnet-4-5";
const SLOW: &str = "anthropic-usage-limit";

async fn start(fake: &FakeUpstream) -> Gateway {
    let token_url = format!("{}/v1/oauth/token", fake.url());
    Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.oauth_token_urls.insert("CLAUDE".into(), token_url);
    })
    .await
}

/// A pasted Claude subscription with `opt_ins`; its id.
async fn subscription(gw: &Gateway, fake: &FakeUpstream, expires_in_ms: i64, opt_ins: Value) -> String {
    let mut body = json!({"provider": "claude", "name": "max", "authType": "oauth",
                          "accessToken": "sk-ant-oat01-pasted", "refreshToken": "sk-ant-ort01-pasted",
                          "expiresAt": gw.state.clock.now_ms() + expires_in_ms, "baseUrl": fake.url()});
    body.as_object_mut().unwrap().extend(opt_ins.as_object().unwrap().clone());
    let resp = gw.api(Method::POST, "/api/providers").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    resp.json::<Value>().await.unwrap()["connection"]["id"].as_str().unwrap().to_owned()
}

async fn ask(gw: &Gateway) -> reqwest::Response {
    let body = json!({"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]});
    gw.http.post(format!("{}/v1/messages", gw.url)).json(&body).send().await.unwrap()
}

/// The window's reset every answer names (epoch s): one value for the
/// whole run, so two answers never disagree by the second they were made
/// in (a later reset reads as the window having rolled over).
static WINDOW_RESET: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    use server::resilience::clock::{Clock, SystemClock};
    (SystemClock.now_ms() / 1000 + 3600).to_string()
});

/// A 429 with the unified headers: `slow_status` and `extra` beside them.
fn answer_429(extra: &[(&str, &str)]) -> Rule {
    let reset = WINDOW_RESET.as_str();
    let mut headers: std::collections::BTreeMap<String, String> =
        [("anthropic-ratelimit-unified-status", "rejected"), ("anthropic-ratelimit-unified-reset", reset)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    headers.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    Rule { path: Some("/v1/messages".into()), status: Some(429), headers, times: Some(1), ..Rule::default() }
}

fn the_wall() -> Rule {
    answer_429(&[("anthropic-ratelimit-unified-slow-offer", "treatment")])
}

/// Whether each Messages request the fake got asked for the slow lane.
fn slow_flags(fake: &FakeUpstream) -> Vec<bool> {
    let sent = fake.requests().into_iter().filter(|r| r.path == "/v1/messages");
    sent.map(|r| r.headers.get(SLOW).is_some_and(|v| v == "slow")).collect()
}

#[tokio::test]
async fn at_the_wall_the_low_priority_lane_serves_on_the_same_account_until_the_window_renews() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    let id = subscription(&gw, &fake, 3_600_000, json!({"lowPriorityMode": true})).await;
    fake.push_rule(the_wall());
    let resp = ask(&gw).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(slow_flags(&fake), [false, true], "the wall, then the same request in the lane");
    assert_eq!(gw.state.engine.health(&id), Default::default(), "the wall's 429 never reaches the cooldown path");
    assert_eq!(ask(&gw).await.status(), 200);
    assert_eq!(slow_flags(&fake), [false, true, true], "later requests go in the lane at once");
    let listed = gw.get_json("/api/providers").await;
    assert_eq!(listed["connections"][0]["providerSpecificData"], json!({"lowPriorityMode": true}));

    // A busy slow slot is waited for (5 s ±30 %), and the wait is the gateway's own.
    let busy = [
        ("anthropic-ratelimit-unified-slow-status", "slot_busy"),
        ("anthropic-ratelimit-unified-slow-retry-after", "5"),
    ];
    fake.push_rule(answer_429(&busy));
    let started = tokio::time::Instant::now();
    assert_eq!(ask(&gw).await.status(), 200);
    let waited = started.elapsed();
    assert!((Duration::from_millis(3_400)..Duration::from_secs(9)).contains(&waited), "{waited:?}");
    assert_eq!(slow_flags(&fake).len(), 5, "the busy answer, then the retry");
    let wait_ms = gw.logs().await[0]["waitMs"].as_i64().unwrap();
    assert!(wait_ms >= 3_400, "the log row shows the wait: {wait_ms}");

    // The weekly limit ends the lane: that 429 takes the cooldown path.
    fake.push_rule(answer_429(&[("anthropic-ratelimit-unified-slow-status", "weekly_limit")]));
    assert_eq!(ask(&gw).await.status(), 429);
    assert!(gw.state.engine.health(&id).rate_limited_until.is_some(), "cooling after the lane ended");
    assert!(!gw.state.engine.usage_wall.in_lane(&id, gw.state.clock.now_ms()));
    gw.stop().await;
}

#[tokio::test]
async fn without_the_opt_in_or_the_offer_the_wall_cools_the_connection() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    let plain = subscription(&gw, &fake, 3_600_000, json!({})).await;
    fake.push_rule(the_wall());
    assert_eq!(ask(&gw).await.status(), 429);
    assert_eq!(slow_flags(&fake), [false], "no lane without the opt-in");
    assert!(gw.state.engine.health(&plain).rate_limited_until.is_some());
    gw.stop().await;

    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    let opted = subscription(&gw, &fake, 3_600_000, json!({"providerSpecificData": {"lowPriorityMode": true}})).await;
    fake.push_rule(answer_429(&[]));
    assert_eq!(ask(&gw).await.status(), 429, "the account offers no lane");
    assert_eq!(slow_flags(&fake), [false]);
    assert!(gw.state.engine.health(&opted).rate_limited_until.is_some());
    gw.stop().await;
}

#[tokio::test]
async fn the_weekly_limit_reset_is_claimed_once_and_the_request_retried_at_full_speed() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    // Pasted without its organization: the profile names it.
    let id = subscription(&gw, &fake, 3_600_000, json!({"autoLimitReset": true})).await;
    fake.push_rule(the_wall());
    let resp = ask(&gw).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(slow_flags(&fake), [false, false], "retried at full speed");
    let claims: Vec<_> = fake.requests().into_iter().filter(|r| r.path.ends_with("/reset_rate_limits")).collect();
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].path, format!("/api/organizations/{CLAUDE_ORG}/reset_rate_limits"));
    assert_eq!(serde_json::from_str::<Value>(&claims[0].body).unwrap(), json!({"program": "juniper_tide"}));
    let status_reads = fake.requests().into_iter().filter(|r| r.path == "/api/oauth/usage").count();
    assert_eq!((status_reads, fake.count("/api/oauth/profile")), (1, 1));
    assert_eq!(gw.state.engine.health(&id), Default::default());
    // The reset is spent for the week: the next wall cools the connection without asking.
    fake.push_rule(the_wall());
    assert_eq!(ask(&gw).await.status(), 429);
    assert_eq!(fake.count("/api/organizations"), 1, "no second claim");
    gw.stop().await;
}

#[tokio::test]
async fn a_refreshed_token_names_its_organization_and_a_failed_claim_falls_back_to_the_lane() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    // About to expire: the first request refreshes it, and the issuer names the organization.
    let id = subscription(&gw, &fake, 60_000, json!({"autoLimitReset": true, "lowPriorityMode": true})).await;
    fake.push_rule(Rule { path: Some("/api/organizations".into()), status: Some(500), ..Rule::default() });
    fake.push_rule(the_wall());
    assert_eq!(ask(&gw).await.status(), 200);
    assert_eq!(fake.count("/api/oauth/profile"), 0, "the token exchange named the organization");
    assert_eq!(fake.count("/api/organizations"), 1, "one claim, refused");
    assert_eq!(slow_flags(&fake), [false, true], "then the lane");
    assert!(gw.state.engine.usage_wall.in_lane(&id, gw.state.clock.now_ms()));
    gw.stop().await;
}

#[tokio::test]
async fn only_a_claude_subscription_takes_the_usage_wall_opt_ins() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = start(&fake).await;
    let body = json!({"provider": "openai", "name": "o", "apiKey": "sk-o", "lowPriorityMode": true});
    let resp = gw.api(Method::POST, "/api/providers").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let answer = resp.text().await.unwrap();
    assert!(answer.contains("lowPriorityMode") && answer.contains("Claude subscription"), "{answer}");
    let bad = json!({"provider": "claude", "name": "m", "authType": "oauth", "accessToken": "sk-ant-oat01-x",
                     "providerSpecificData": {"autoLimitReset": "yes"}});
    let resp = gw.api(Method::POST, "/api/providers").json(&bad).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("providerSpecificData.autoLimitReset"));
    let listed = gw.get_json("/api/providers").await;
    assert_eq!(listed["total"], 0, "nothing was added");
    let id = subscription(&gw, &fake, 3_600_000, json!({"lowPriorityMode": true, "autoLimitReset": true})).await;
    let off = json!({"lowPriorityMode": false});
    let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&off).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let shown: Value = resp.json().await.unwrap();
    let data = &shown["connection"]["providerSpecificData"];
    assert_eq!(*data, json!({"lowPriorityMode": false, "autoLimitReset": true}), "{shown}");
    gw.stop().await;
}
