//! Concurrency limits on real sockets (SPEC §R4): `maxConcurrent` and
//! `modelConcurrency` hold the upstream to their caps (the fake records the
//! most requests it answered at once), a full queue answers
//! `SEMAPHORE_QUEUE_FULL` without calling the upstream, a saturated
//! connection is passed over for a sibling and never cooled, streams hold
//! their slot to the last byte, and every slot comes back whatever the
//! client does.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]
#![expect(clippy::disallowed_methods, reason = "the tests play concurrent clients as tasks")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use futures_util::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// A connection to the fake with `limits` (a `PUT /api/providers/{id}` body).
async fn limited(gw: &Gateway, fake: &FakeUpstream, name: &str, priority: i32, limits: Value) -> String {
    let id = gw.add_connection("openai", name, &format!("sk-{name}-0000000000"), &v1(fake), priority).await;
    let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&limits).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    id
}

fn slow(ms: u64) -> Rule {
    Rule { latency_ms: ms, ..Rule::default() }
}

/// Waits (on the gateway's own counters, not on time) until `check` holds
/// for the gates of the gateway, failing after 10 s.
async fn until_gates(gw: &Gateway, what: &str, check: impl Fn(&[(String, u32, u32)]) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let gates: Vec<(String, u32, u32)> = gw
            .state
            .admission
            .concurrency
            .snapshot()
            .into_iter()
            .map(|(k, c)| (k.to_string(), c.running, c.queued))
            .collect();
        if check(&gates) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {gates:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn max_concurrent_one_serializes_ten_parallel_requests() {
    let (fake, gw) = Gateway::with_fake().await;
    limited(&gw, &fake, "one", 1, json!({"maxConcurrent": 1})).await;
    fake.push_rule(slow(50));
    let answers = join_all((0..10).map(|_| gw.chat(chat_body("openai/gpt-4o-mini", false), None))).await;
    for a in answers {
        assert_eq!(a.status(), 200);
    }
    assert_eq!(fake.in_flight("*").peak, 1, "the upstream never saw two at once");
    assert_eq!(fake.count("/v1/chat/completions"), 10);
}

#[tokio::test]
async fn health_lists_a_limit_nobody_has_hit_yet() {
    let (fake, gw) = Gateway::with_fake().await;
    let limits = json!({"maxConcurrent": 2, "rateLimitOverrides": {"modelConcurrency": {"gpt-4o-mini": 1}}});
    let id = limited(&gw, &fake, "fresh", 1, limits).await;
    // As after a restart: no request has made the gates yet.
    let queues = &gw.get_json("/api/monitoring/health").await["queues"];
    let account = &queues[format!("qsconn:{id}")];
    assert_eq!(
        (&account["running"], &account["queued"], &account["limit"]),
        (&json!(0), &json!(0), &json!(2)),
        "{queues}"
    );
    assert_eq!(account["connection"], "fresh");
    let model = &queues[format!("qsconn:{id}:model:gpt-4o-mini")];
    assert_eq!((&model["model"], &model["limit"]), (&json!("gpt-4o-mini"), &json!(1)), "{queues}");
}

#[tokio::test]
async fn model_concurrency_caps_one_model_and_leaves_the_others() {
    let (fake, gw) = Gateway::with_fake().await;
    limited(&gw, &fake, "m", 1, json!({"rateLimitOverrides": {"modelConcurrency": {"gpt-4o-mini": 1}}})).await;
    fake.push_rule(slow(100));
    let capped = (0..4).map(|_| gw.chat(chat_body("openai/gpt-4o-mini", false), None));
    let free = (0..4).map(|_| gw.chat(chat_body("openai/gpt-4o", false), None));
    let (a, b) = tokio::join!(join_all(capped), join_all(free));
    assert!(a.iter().chain(&b).all(|r| r.status() == 200));
    assert_eq!(fake.in_flight("gpt-4o-mini").peak, 1);
    assert!(fake.in_flight("gpt-4o").peak > 1, "the other model is not capped: {:?}", fake.in_flight("gpt-4o"));
}

#[tokio::test]
async fn a_full_queue_refuses_at_once_and_cools_nothing() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = limited(&gw, &fake, "one", 1, json!({"maxConcurrent": 1})).await;
    fake.push_rule(slow(60_000));
    let body = chat_body("openai/gpt-4o-mini", false);
    let held: Vec<_> = (0..21)
        .map(|_| {
            tokio::spawn({
                let req = gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&body);
                async move { req.send().await }
            })
        })
        .collect();
    until_gates(&gw, "one running, twenty waiting", |g| {
        g.iter().any(|(_, running, queued)| *running == 1 && *queued == 20)
    })
    .await;
    let queue = &gw.get_json("/api/monitoring/health").await["queues"][format!("qsconn:{id}")];
    assert_eq!((&queue["queued"], &queue["running"], &queue["limit"]), (&json!(20), &json!(1), &json!(1)), "{queue}");
    let calls = fake.count("/v1/chat/completions");
    let resp = gw.chat(body.clone(), None).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "SEMAPHORE_QUEUE_FULL", "{err}");
    assert_eq!(err["error"]["type"], "rate_limit_error");
    assert_eq!(err["error"]["message"], format!("Semaphore queue full (20) for qsconn:{id}"));
    assert_eq!(fake.count("/v1/chat/completions"), calls, "nothing reached the upstream");
    // The clients give up: every slot and place comes back.
    for h in &held {
        h.abort();
    }
    until_gates(&gw, "all given back", |g| g.iter().all(|(_, running, queued)| *running == 0 && *queued == 0)).await;
    let health = gw.get_json("/api/resilience/cooldowns").await;
    assert_eq!(health["connections"], json!([]), "a saturated limit cools nothing: {health}");
    let lockouts = gw.get_json("/api/resilience/model-cooldowns").await;
    assert_eq!(lockouts["items"], json!([]));
    let breakers = gw.get_json("/api/monitoring/health").await;
    assert_eq!(breakers["circuitBreakers"]["open"], 0);
    let log = gw.logs().await;
    assert!(log.iter().any(|r| r["errorKind"] == "SEMAPHORE_QUEUE_FULL" && r["status"] == 429), "refusals are logged");
}

#[tokio::test]
async fn a_saturated_connection_is_passed_over_for_a_free_sibling() {
    let (fake, gw) = Gateway::with_fake().await;
    let first = limited(&gw, &fake, "first", 1, json!({"maxConcurrent": 1})).await;
    let second = gw.add_connection("openai", "second", "sk-second-0000000000", &v1(&fake), 2).await;
    fake.push_rule(Rule { api_key: Some("sk-first-0000000000".into()), ..slow(60_000) });
    let body = chat_body("openai/gpt-4o-mini", false);
    let busy = tokio::spawn(gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&body).send());
    until_gates(&gw, "the first connection busy", |g| {
        g.iter().any(|(k, running, _)| k.ends_with(&first) && *running == 1)
    })
    .await;
    let resp = gw.chat(body, None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], second.as_str(), "served by the sibling at once");
    busy.abort();
}

#[tokio::test]
async fn a_stream_holds_its_slot_to_the_last_byte() {
    let (fake, gw) = Gateway::with_fake().await;
    limited(&gw, &fake, "one", 1, json!({"maxConcurrent": 1})).await;
    fake.push_rule(Rule { trickle_ms: 30, ..Rule::default() });
    let stream = gw.chat(chat_body("openai/gpt-4o-mini", true), None).await;
    assert_eq!(stream.status(), 200);
    // The stream is committed and still running; a second request waits for it.
    let second = tokio::spawn(
        gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&chat_body("openai/gpt-4o-mini", false)).send(),
    );
    until_gates(&gw, "the second request waiting", |g| g.iter().any(|(_, r, q)| *r == 1 && *q == 1)).await;
    let text = stream.text().await.unwrap();
    assert!(text.contains("[DONE]"));
    assert_eq!(second.await.unwrap().unwrap().status(), 200);
    assert_eq!(fake.in_flight("*").peak, 1, "the second was sent only after the stream's end");
}

#[tokio::test]
async fn slots_come_back_after_random_client_disconnects() {
    let (fake, gw) = Gateway::with_fake().await;
    limited(&gw, &fake, "two", 1, json!({"maxConcurrent": 2})).await;
    fake.push_rule(Rule { trickle_ms: 5, ..slow(5) });
    let tasks: Vec<_> = (0..200u64)
        .map(|i| {
            let stream = i % 2 == 0;
            let req =
                gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(&chat_body("openai/gpt-4o-mini", stream));
            let task = tokio::spawn(async move {
                let resp = req.send().await?;
                let status = resp.status().as_u16();
                let body = resp.text().await?;
                Ok::<_, reqwest::Error>((status, body))
            });
            (i, task)
        })
        .collect();
    let mut outcomes = Vec::new();
    for (i, task) in tasks {
        // A pseudo-random third of the clients go away mid-flight.
        if (i * 7919) % 3 == 0 {
            tokio::time::sleep(Duration::from_millis(i % 7)).await;
            task.abort();
        } else {
            outcomes.push(task);
        }
    }
    for task in outcomes {
        let (status, body) = task.await.unwrap().unwrap();
        assert!(status == 200 || (status == 429 && body.contains("SEMAPHORE_")), "{status}: {body}");
    }
    until_gates(&gw, "every slot back", |g| g.iter().all(|(_, running, queued)| *running == 0 && *queued == 0)).await;
    assert!(fake.in_flight("*").peak <= 2, "{:?}", fake.in_flight("*"));
}

#[tokio::test]
async fn quota_share_serializes_combo_requests_and_its_switch_turns_that_off() {
    let (fake, gw) = Gateway::with_fake().await;
    limited(&gw, &fake, "shared", 1, json!({"maxConcurrent": 1})).await;
    let combo = json!({"name": "shared", "strategy": "priority", "targets": [{"model": "openai/gpt-4o-mini"}]});
    assert_eq!(gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap().status(), 201);
    fake.push_rule(slow(50));
    let burst = || join_all((0..4).map(|_| gw.chat(chat_body("shared", false), None)));
    assert!(burst().await.iter().all(|r| r.status() == 200));
    assert_eq!(fake.in_flight("*").peak, 1, "combo requests wait their turn on the shared account");
    let off = json!({"quotaShareConcurrencyLimit": {"enabled": false}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&off).send().await.unwrap().status(), 200);
    fake.reset_peaks();
    assert!(burst().await.iter().all(|r| r.status() == 200));
    assert!(fake.in_flight("*").peak > 1, "switched off, combo requests are not serialized");
}

#[tokio::test]
async fn a_global_limit_holds_every_connection_together() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "a", "sk-a-0000000000", &v1(&fake), 1).await;
    gw.add_connection("deepseek", "b", "sk-b-0000000000", &v1(&fake), 1).await;
    let patch = json!({"requestQueue": {"globalConcurrentRequests": 1}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&patch).send().await.unwrap().status(), 200);
    fake.push_rule(slow(50));
    let to_a = (0..4).map(|_| gw.chat(chat_body("openai/gpt-4o-mini", false), None));
    let to_b = (0..4).map(|_| gw.chat(chat_body("deepseek/deepseek-chat", false), None));
    let (a, b) = tokio::join!(join_all(to_a), join_all(to_b));
    assert!(a.iter().chain(&b).all(|r| r.status() == 200));
    assert_eq!(fake.in_flight("*").peak, 1, "one request at a time across both connections");
    let queue = &gw.get_json("/api/monitoring/health").await["queues"]["qsglobal"];
    assert_eq!((&queue["connection"], &queue["limit"]), (&json!("all connections"), &json!(1)), "{queue}");
    // Off again (0): both connections run at once.
    let patch = json!({"requestQueue": {"globalConcurrentRequests": 0}});
    assert_eq!(gw.api(Method::PATCH, "/api/resilience").json(&patch).send().await.unwrap().status(), 200);
    fake.reset_peaks();
    let both = [
        gw.chat(chat_body("openai/gpt-4o-mini", false), None),
        gw.chat(chat_body("deepseek/deepseek-chat", false), None),
    ];
    assert!(join_all(both).await.iter().all(|r| r.status() == 200));
    assert_eq!(fake.in_flight("*").peak, 2);
}
