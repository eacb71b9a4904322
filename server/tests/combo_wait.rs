//! The combo cooldown wait on real sockets and real time (SPEC §R4): a
//! combo held back by a short rate-limit cooldown waits for it and is
//! served, before any attempt as well as after one; a quota exclusion is
//! never waited for; a client that goes away while waiting is logged 499.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// One OpenAI connection whose rate-limit cooldown is `cooldown_ms`, and
/// a combo over it.
async fn start(cooldown_ms: u64) -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let patch = json!({"connectionCooldown": {"apikey": {"baseCooldownMs": cooldown_ms}}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&patch).send().await.unwrap().status(), 200);
    let combo = json!({"name": "solo", "strategy": "priority", "targets": [{"model": "openai/gpt-4o-mini"}]});
    assert_eq!(gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap().status(), 201);
    (fake, gw)
}

fn rate_limited_once() -> Rule {
    Rule { status: Some(429), times: Some(1), ..Rule::default() }
}

#[tokio::test]
async fn a_combo_waits_out_a_short_rate_limit_cooldown_and_is_served() {
    let (fake, gw) = start(1_500).await;
    fake.push_rule(rate_limited_once());
    let started = Instant::now();
    let resp = gw.chat(chat_body("solo", false), None).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert!(started.elapsed() >= Duration::from_millis(1_400), "waited for the cooldown: {:?}", started.elapsed());
    assert_eq!(fake.count("/v1/chat/completions"), 2, "tried, waited, tried again");
    // The second attempt's row says how long the gateway held the request.
    let rows = gw.logs().await;
    let waits: Vec<i64> = rows.iter().map(|r| r["waitMs"].as_i64().unwrap()).collect();
    assert_eq!(waits[1], 0, "the first attempt went at once: {waits:?}");
    assert!((1_400..3_000).contains(&waits[0]), "the served one waited out the cooldown: {waits:?}");
}

#[tokio::test]
async fn health_counts_a_request_while_it_waits_for_a_cooldown() {
    let (fake, gw) = start(3_000).await;
    fake.push_rule(rate_limited_once());
    let waiting = |report: &Value| report["waitingForCooldown"].as_u64().unwrap();
    assert_eq!(waiting(&gw.get_json("/api/monitoring/health").await), 0);
    let request = gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&chat_body("solo", false)).send();
    // The health report is cached for a second: within the 3 s wait it shows the request.
    let shown = async {
        let deadline = Instant::now() + Duration::from_millis(2_500);
        while waiting(&gw.get_json("/api/monitoring/health").await) != 1 {
            assert!(Instant::now() < deadline, "the waiting request never showed on Health");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let (answer, ()) = tokio::join!(request, shown);
    assert_eq!(answer.unwrap().status(), 200);
    assert_eq!(
        gw.state.admission.waiting_for_cooldown.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "counted until it ended"
    );
}

#[tokio::test]
async fn a_combo_skipped_before_any_attempt_waits_too() {
    let (fake, gw) = start(1_500).await;
    fake.push_rule(rate_limited_once());
    // A direct request cools the connection…
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);
    // …so the combo's only target is skipped, and the combo waits for it.
    let started = Instant::now();
    assert_eq!(gw.chat(chat_body("solo", false), None).await.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(1_000), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_quota_exclusion_is_never_waited_for_and_off_means_off() {
    let (fake, gw) = start(1_500).await;
    let quota = json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota"}});
    fake.push_rule(Rule { status: Some(429), body: Some(quota), times: Some(1), ..Rule::default() });
    let started = Instant::now();
    let resp = gw.chat(chat_body("solo", false), None).await;
    assert_ne!(resp.status(), 200);
    assert!(started.elapsed() < Duration::from_millis(1_000), "no wait on a quota: {:?}", started.elapsed());
    // Switched off, a rate limit is not waited for either.
    let (fake, gw) = start(1_500).await;
    let off = json!({"comboCooldownWait": {"enabled": false}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&off).send().await.unwrap().status(), 200);
    fake.push_rule(rate_limited_once());
    let started = Instant::now();
    assert_eq!(gw.chat(chat_body("solo", false), None).await.status(), 429);
    assert!(started.elapsed() < Duration::from_millis(1_000), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_client_that_leaves_during_the_wait_is_logged_499() {
    let (fake, gw) = start(5_000).await;
    fake.push_rule(rate_limited_once());
    let req = gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&chat_body("solo", false));
    assert!(req.timeout(Duration::from_millis(800)).send().await.is_err(), "the client gave up");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = gw.logs().await;
        if let Some(row) = rows.iter().find(|r| r["status"] == 499 && r["errorKind"] == "client_disconnected") {
            assert!(row["waitMs"].as_i64().unwrap() >= 700, "held until the client left: {row}");
            break;
        }
        assert!(Instant::now() < deadline, "no 499 row: {}", Value::from(rows));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A connection the key may not use is not waited for: the combo's only
/// usable connection is out of quota, another one of the provider is
/// held by a short rate-limit cooldown, and a request with a key limited
/// to the first fails at once instead of waiting for the second.
#[tokio::test]
async fn a_combo_does_not_wait_for_a_connection_its_key_may_not_use() {
    let (fake, gw) = start(1_500).await;
    let other = gw.add_connection("openai", "other", "sk-other", &v1(&fake), 1).await;
    let connections = gw.get_json("/api/providers").await;
    let own = connections["connections"].as_array().unwrap().iter().find(|c| c["name"] == "o").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let quota = json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota"}});
    let quota_once = Rule { status: Some(429), body: Some(quota), times: Some(1), ..Rule::default() };
    // Before any key exists requests need none: the first cools `o` for
    // its quota (not worth waiting for) and `other` serves it, the second
    // cools `other` for 1.5 s.
    fake.push_rule(Rule { api_key: Some("sk-o".into()), ..quota_once });
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);
    fake.push_rule(Rule { api_key: Some("sk-other".into()), ..rate_limited_once() });
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);
    let key = gw.create_key(json!({"name": "own-only", "allowedConnections": [own]})).await;
    let calls = fake.count("/v1/chat/completions");
    let started = Instant::now();
    let resp = gw.chat(chat_body("solo", false), key["key"].as_str()).await;
    assert_ne!(resp.status(), 200);
    assert!(started.elapsed() < Duration::from_millis(1_000), "waited for {other}: {:?}", started.elapsed());
    assert_eq!(fake.count("/v1/chat/completions"), calls, "nothing to try");
}
