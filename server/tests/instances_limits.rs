//! Limits and gates hold for several gateways on one Postgres together
//! (issue [M]): `maxConcurrent` is counted in shared slots, the slots of
//! an instance that fell silent (killed) come back and those of one that
//! stops cleanly are given back at once, the request queue's
//! pace is split between the live instances, and the provider window gate
//! counts the failures every instance saw.
//! Compiled with `--features postgres-tests`; `cargo xtask test` starts a
//! throwaway cluster and passes `OMNIROUTE_TEST_POSTGRES_URL`.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]
#![expect(clippy::disallowed_methods, reason = "the tests play concurrent clients as tasks")]

mod common;

use app::types::monitoring::SILENT_AFTER_MS;
use common::{
    Gateway, chat_body,
    instances::{pair, stopped_pair, within_staleness},
    v1,
};
use fake_upstream::{FakeUpstream, Rule};
use futures_util::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};
use std::{sync::atomic::Ordering, time::Duration};
use tokio::time::Instant;

/// A connection made on A, its request queue on or off (`protected`) and
/// then changed by `put`, once B serves it so (`pointer` into B's listing
/// of it reads `expected`; the changes reach B in the order made).
async fn limited_on_both(
    a: &Gateway,
    b: &Gateway,
    fake: &FakeUpstream,
    protected: bool,
    put: Value,
    seen: (&str, Value),
) {
    let (pointer, expected) = seen;
    let id = a.add_connection("openai", "limited", "sk-limited-000000", &v1(fake), 0).await;
    let protection = json!({"connectionId": id, "enabled": protected});
    let resp = a.api(Method::POST, "/api/rate-limits").json(&protection).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let resp = a.api(Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    within_staleness("the limits set on A", || async {
        b.get_json("/api/providers").await["connections"][0].pointer(pointer) == Some(&expected)
            && same_limits(a, b, &id)
    })
    .await;
}

/// Whether `b`'s routing view (rebuilt from the feed, a moment after the
/// database listing shows the change) holds `a`'s limits for connection `id`.
fn same_limits(a: &Gateway, b: &Gateway, id: &str) -> bool {
    let limits =
        |gw: &Gateway| gw.state.routing.connections.snapshot().connection(id).map(|c| format!("{:?}", c.limits));
    limits(a).is_some() && limits(a) == limits(b)
}

/// A chat request to `gw`, sent from a task of its own.
fn ask(gw: &Gateway) -> tokio::task::JoinHandle<reqwest::Response> {
    let (http, url) = (gw.http.clone(), format!("{}/v1/chat/completions", gw.url));
    tokio::spawn(async move { http.post(url).json(&chat_body("openai/gpt-4o-mini", false)).send().await.unwrap() })
}

/// Waits until `check` holds, failing after 10 s.
async fn until(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrent_holds_for_both_instances_together() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    // The request queue off: only the concurrency cap orders the requests.
    limited_on_both(&a, &b, &fake, false, json!({"maxConcurrent": 1}), ("/maxConcurrent", json!(1))).await;
    fake.push_rule(Rule { latency_ms: 100, ..Rule::default() });
    let asked: Vec<_> = (0..8).map(|i| ask(if i % 2 == 0 { &a } else { &b })).collect();
    for answer in join_all(asked).await {
        assert_eq!(answer.unwrap().status(), 200);
    }
    assert_eq!(fake.in_flight("*").peak, 1, "the upstream never saw two at once, whichever instance asked");

    // What counting across instances adds per request: the same requests
    // with the cap, then without it.
    fake.clear_rules();
    let capped = mean_request(&b, 100).await;
    let id = a.get_json("/api/providers").await["connections"][0]["id"].as_str().unwrap().to_owned();
    let uncap = a.api(Method::PUT, &format!("/api/providers/{id}")).json(&json!({"maxConcurrent": null}));
    assert_eq!(uncap.send().await.unwrap().status(), 200);
    within_staleness("the cap lifted on A", || async {
        b.get_json("/api/providers").await["connections"][0]["maxConcurrent"].is_null() && same_limits(&a, &b, &id)
    })
    .await;
    let free = mean_request(&b, 100).await;
    println!("a request: {capped:?} with a cap counted across instances, {free:?} without");
    a.stop().await;
    b.stop().await;
}

/// The mean time of `n` requests to `gw`, one after another.
async fn mean_request(gw: &Gateway, n: u32) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);
    }
    started.elapsed() / n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_slot_of_an_instance_that_fell_silent_comes_back() {
    let (a, b, [_, clock_b]) = stopped_pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    limited_on_both(&a, &b, &fake, false, json!({"maxConcurrent": 1}), ("/maxConcurrent", json!(1))).await;
    // A's request holds the only slot for as long as the test runs.
    fake.push_rule(Rule { latency_ms: 60_000, times: Some(1), ..Rule::default() });
    let held = ask(&a);
    until("A's request reached the upstream", || fake.in_flight("*").now == 1).await;
    let waiting = ask(&b);
    let queued = || b.state.admission.concurrency.snapshot().iter().any(|(_, c)| c.queued == 1);
    until("B's request waits for the slot A holds", queued).await;
    assert!(!waiting.is_finished());
    // A falls silent as a killed instance does: B's clock passes A's last
    // heartbeat by more than SILENT_AFTER_MS, and B takes the slot.
    clock_b.advance(i64::try_from(SILENT_AFTER_MS).unwrap() + 1_000);
    let answer = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("served once A fell silent");
    assert_eq!(answer.unwrap().status(), 200);
    assert_eq!(fake.in_flight("*").now, 1, "A's request still runs: B went ahead on the slot A no longer holds");
    held.abort();
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_queue_paces_both_instances_together() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    let overrides = json!({"rpm": 4, "minTimeBetweenRequestsMs": 0, "maxWaitMs": 300});
    let put = json!({"rateLimitOverrides": overrides});
    limited_on_both(&a, &b, &fake, true, put, ("/rateLimitOverrides/rpm", json!(4))).await;
    for gw in [&a, &b] {
        until("each instance counts both", || gw.state.store.live_instances.load(Ordering::Relaxed) == 2).await;
    }
    // Four starts a minute for the two together: two each.
    let mut served = 0;
    for gw in [&a, &b] {
        for _ in 0..3 {
            let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
            match resp.status().as_u16() {
                200 => served += 1,
                status => {
                    let err = resp.json::<Value>().await.unwrap()["error"].clone();
                    assert_eq!((status, err["code"].as_str()), (503, Some("RATE_LIMIT_QUEUE_TIMEOUT")), "{err}");
                }
            }
        }
    }
    assert_eq!(served, 4, "the minute's four starts, shared");
    assert_eq!(fake.count("/v1/chat/completions"), 4);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_provider_the_window_gate_holds_on_one_instance_is_held_on_the_other() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    a.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    let d = a.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    let combo = json!({"name": "coding", "strategy": "priority",
        "targets": [{"model": "openai/gpt-4o-mini"}, {"model": "deepseek/deepseek-chat"}]});
    assert_eq!(a.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap().status(), 201);
    // Only the window gate keeps openai out: no connection cooldown, no combo wait.
    let settings = json!({"comboCooldownWait": {"enabled": false},
        "connectionCooldown": {"apikey": {"baseCooldownMs": 0}},
        "providerCooldown": {"enabled": true, "apikey": {
            "providerFailureThreshold": 2, "providerFailureWindowMs": 60_000, "providerCooldownMs": 30_000}}});
    assert_eq!(a.api(Method::PATCH, "/api/resilience").json(&settings).send().await.unwrap().status(), 200);
    within_staleness("the settings saved on A", || async {
        b.get_json("/api/resilience").await["providerCooldown"]["enabled"] == true
    })
    .await;
    fake.push_rule(Rule { api_key: Some("sk-o".into()), status: Some(503), ..Rule::default() });
    let openai_calls = || fake.requests().iter().filter(|r| r.body.contains("gpt-4o-mini")).count();
    for _ in 0..2 {
        let resp = a.chat(chat_body("coding", false), None).await;
        assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], d.as_str());
    }
    assert_eq!(openai_calls(), 2);
    let s = b.state.resilience.current().provider_cooldown.clone();
    let category = app::types::Category::Apikey;
    within_staleness("the failures A saw", || async {
        b.state.engine.target_cooldown_ms("openai", category, None, &s) > 0
    })
    .await;
    let resp = b.chat(chat_body("coding", false), None).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], d.as_str());
    assert_eq!(openai_calls(), 2, "B skips openai without a call");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_instance_stopping_cleanly_gives_back_its_own_slots_and_no_others() {
    use server::db::{entities::gateway_instance, instances, slots};
    let url = common::fresh_postgres_database().await;
    let gw = Gateway::start_with(tempfile::tempdir().unwrap(), Some(url)).await;
    let db = gw.state.db.clone();
    // The gateway's now, or its own heartbeat would forget these instances.
    let now = gw.state.clock.now_ms();
    for id in ["a", "b", "c"] {
        let heard = gateway_instance::Model {
            id: id.into(),
            version: "test".into(),
            started_at: now,
            last_seen_at: now,
            caught_up: true,
        };
        instances::beat(&db, heard, 0).await.unwrap();
    }
    let take = |instance: &'static str| slots::take(&db, "gate", 3, instance, now, now - 1);
    slots::provide(&db, "gate", 3).await.unwrap();
    assert_eq!((take("a").await.unwrap(), take("a").await.unwrap()), (Some(0), Some(1)));
    assert_eq!(take("b").await.unwrap(), Some(2));
    assert_eq!(take("c").await.unwrap(), None, "every slot held by a live instance");
    slots::give_back_all(&db, "a").await.unwrap();
    assert_eq!((take("c").await.unwrap(), take("c").await.unwrap()), (Some(0), Some(1)), "a's two came back");
    assert_eq!(take("c").await.unwrap(), None, "b's slot is still b's");
    gw.stop().await;
}
