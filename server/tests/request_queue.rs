//! The request queue on real sockets (SPEC §R5): a protected connection's
//! requests start at its pace, a full queue refuses with
//! `RATE_LIMIT_QUEUE_FULL` before anything reaches the upstream, waits and
//! executions end in their own codes with the value of the right
//! precedence rung, the upstream's rate headers and body-stated waits pace
//! it, and nothing of it ever cools, locks or trips a breaker. The
//! protection switch is three-state and has its own write path.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]
#![expect(clippy::disallowed_methods, reason = "the tests play concurrent clients as tasks")]

mod common;

use app::types::settings::read_env;
use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// A connection to the fake whose requests go through its queue, with
/// `overrides` as its `rateLimitOverrides`.
async fn protected(gw: &Gateway, fake: &FakeUpstream, name: &str, overrides: Value) -> String {
    let id = gw.add_connection("openai", name, &format!("sk-{name}-0000000000"), &v1(fake), 1).await;
    let put = json!({"rateLimitOverrides": overrides});
    let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let (status, body) = set_protection(gw, json!({"connectionId": id, "enabled": true})).await;
    assert_eq!((status, &body["protected"]), (200, &json!(true)), "{body}");
    id
}

async fn set_protection(gw: &Gateway, body: Value) -> (u16, Value) {
    let resp = gw.api(Method::POST, "/api/rate-limits").json(&body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn patch_queue(gw: &Gateway, queue: Value) {
    let resp = gw.api(Method::PATCH, "/api/resilience").json(&json!({"requestQueue": queue})).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

/// The queues as (id, queued, running), polled on the gateway's own
/// counters until `check` holds (at most 10 s).
async fn until_queues(gw: &Gateway, what: &str, check: impl Fn(&[(String, u32, u32)]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let queues: Vec<_> = gw
            .state
            .admission
            .queues
            .snapshot()
            .into_iter()
            .map(|(q, c)| (q.id.clone(), c.queued, c.running))
            .collect();
        if check(&queues) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {queues:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn slow(ms: u64) -> Rule {
    Rule { latency_ms: ms, ..Rule::default() }
}

fn send(gw: &Gateway, body: &Value) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
    tokio::spawn(gw.http.post(format!("{}/v1/chat/completions", gw.url)).json(body).send())
}

async fn error_of(resp: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = resp.status().as_u16();
    let retry_after = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry_after, resp.json::<Value>().await.unwrap()["error"].clone())
}

/// Nothing the queue refused cooled, locked or tripped anything.
async fn nothing_cooled(gw: &Gateway) {
    let cooldowns = gw.get_json("/api/resilience/cooldowns").await;
    assert_eq!(cooldowns["connections"], json!([]), "{cooldowns}");
    assert_eq!(gw.get_json("/api/resilience/model-cooldowns").await["items"], json!([]));
    assert_eq!(gw.get_json("/api/monitoring/health").await["circuitBreakers"]["open"], 0);
}

#[tokio::test]
async fn starts_are_spaced_by_the_min_time_and_all_are_served() {
    let (fake, gw) = Gateway::with_fake().await;
    protected(&gw, &fake, "paced", json!({"minTimeBetweenRequestsMs": 150})).await;
    let body = chat_body("openai/gpt-4o-mini", false);
    let started = Instant::now();
    let answers = futures_util::future::join_all((0..5).map(|_| gw.chat(body.clone(), None))).await;
    assert!(answers.iter().all(|a| a.status() == 200));
    assert!(started.elapsed() >= Duration::from_millis(4 * 150), "five starts need four gaps: {:?}", started.elapsed());
    // Each row says how long the queue held its request ([N] item 2).
    let mut waits: Vec<i64> = gw.logs().await.iter().map(|r| r["waitMs"].as_i64().unwrap()).collect();
    waits.sort_unstable();
    assert_eq!(waits.len(), 5);
    for (i, wait) in waits.iter().enumerate() {
        assert!(*wait >= i as i64 * 150 - 50, "the k-th start waited about k × 150 ms: {waits:?}");
    }
    // An unprotected connection is not paced at all.
    let (fake, gw) = Gateway::with_fake().await;
    let id = gw.add_connection("openai", "free", "sk-free-0000000000", &v1(&fake), 1).await;
    let put = json!({"rateLimitOverrides": {"minTimeBetweenRequestsMs": 60_000}});
    gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    let started = Instant::now();
    let answers = futures_util::future::join_all((0..5).map(|_| gw.chat(body.clone(), None))).await;
    assert!(answers.iter().all(|a| a.status() == 200));
    assert!(started.elapsed() < Duration::from_secs(30), "not paced");
    assert!(gw.state.admission.queues.snapshot().is_empty(), "no queue was even made");
}

#[tokio::test]
async fn a_full_queue_refuses_with_the_exact_body_before_anything_reaches_the_upstream() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = protected(&gw, &fake, "one", json!({"maxConcurrent": 1})).await;
    patch_queue(&gw, json!({"maxQueueDepth": 1, "minTimeBetweenRequestsMs": 0})).await;
    fake.push_rule(slow(1_500));
    let body = chat_body("openai/gpt-4o-mini", false);
    let first = send(&gw, &body);
    until_queues(&gw, "the first started", |q| q.iter().any(|(_, _, running)| *running == 1)).await;
    let second = send(&gw, &body);
    until_queues(&gw, "the second queued", |q| q.iter().any(|(_, queued, _)| *queued == 1)).await;
    let calls = fake.count("/v1/chat/completions");
    let (status, retry_after, err) = error_of(gw.chat(body.clone(), None).await).await;
    assert_eq!((status, retry_after.as_deref()), (429, Some("1")));
    assert_eq!(err["code"], "RATE_LIMIT_QUEUE_FULL", "{err}");
    assert_eq!(err["type"], "rate_limit_error");
    assert_eq!(
        err["message"],
        format!(
            "Request rejected: the local rate-limit queue for openai:{id} already holds 1 queued request(s), at or \
             above the configured admission cap maxQueueDepth (1); retry shortly or raise maxQueueDepth"
        )
    );
    assert_eq!(fake.count("/v1/chat/completions"), calls, "nothing reached the upstream");
    let health = gw.get_json("/api/monitoring/health").await;
    let queue = &health["queues"][format!("openai:{id}")];
    assert_eq!((&queue["kind"], &queue["queued"], &queue["running"]), (&json!("rate_limit"), &json!(1), &json!(1)));
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(second.await.unwrap().unwrap().status(), 200, "the queued request is served");
    nothing_cooled(&gw).await;
    assert!(gw.logs().await.iter().any(|r| r["errorKind"] == "RATE_LIMIT_QUEUE_FULL" && r["status"] == 429));
}

/// How long a request may wait queued, as the refusal states it, with
/// the env value `env`, the persisted `persisted` and the connection's
/// own `own`.
async fn queue_wait_named(env: Option<&str>, persisted: Option<u64>, own: Option<u64>) -> String {
    let pairs: Vec<(&str, &str)> = env.map(|v| ("RATE_LIMIT_MAX_WAIT_MS", v)).into_iter().collect();
    let env = read_env(|k| pairs.iter().find(|(var, _)| *var == k).map(|(_, v)| (*v).to_owned())).unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.resilience_env = env).await;
    let fake = FakeUpstream::start().await.unwrap();
    let overrides = match own {
        Some(ms) => json!({"maxConcurrent": 1, "maxWaitMs": ms}),
        None => json!({"maxConcurrent": 1}),
    };
    protected(&gw, &fake, "one", overrides).await;
    if let Some(ms) = persisted {
        patch_queue(&gw, json!({"maxWaitMs": ms})).await;
    }
    fake.push_rule(slow(3_000));
    let body = chat_body("openai/gpt-4o-mini", false);
    let held = send(&gw, &body);
    until_queues(&gw, "the first started", |q| q.iter().any(|(_, _, running)| *running == 1)).await;
    let (status, retry_after, err) = error_of(gw.chat(body, None).await).await;
    assert_eq!((status, err["code"].as_str()), (503, Some("RATE_LIMIT_QUEUE_TIMEOUT")), "{err}");
    assert!(retry_after.is_some(), "a 503 says when to retry");
    nothing_cooled(&gw).await;
    held.abort();
    err["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_queue_wait_comes_from_env_then_settings_then_the_connection() {
    let rung = |ms: u64| format!("maxWaitMs ({ms}ms)");
    assert!(queue_wait_named(Some("300"), None, None).await.contains(&rung(300)), "env gives the default");
    assert!(queue_wait_named(Some("300"), Some(500), None).await.contains(&rung(500)), "the setting beats env");
    let own = queue_wait_named(Some("300"), Some(500), Some(200)).await;
    assert!(own.contains(&rung(200)), "the connection's own value beats both: {own}");
}

#[tokio::test]
async fn a_slow_answer_ends_at_the_execution_limit_which_never_undercuts_the_fetch_timeout() {
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.fetch_timeout = Duration::from_millis(2_000);
    })
    .await;
    let fake = FakeUpstream::start().await.unwrap();
    let id = protected(&gw, &fake, "slow", json!({"executionMaxWaitMs": 2_500})).await;
    // Headers after 1.5 s and the body's second half 1.5 s later: each
    // within the fetch timeout, together past the execution limit.
    fake.push_rule(Rule { trickle_ms: 1_500, times: Some(1), ..slow(1_500) });
    let started = Instant::now();
    let (status, _, err) = error_of(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await).await;
    assert_eq!(
        (status, err["code"].as_str(), err["type"].as_str()),
        (504, Some("RATE_LIMIT_EXECUTION_TIMEOUT"), Some("server_error"))
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(&format!("executionMaxWaitMs (2500ms) of the local rate-limit queue for openai:{id}")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_millis(2_900), "cut at the limit: {:?}", started.elapsed());
    nothing_cooled(&gw).await;
    // A limit below the fetch timeout is raised to it: a 1.5 s answer is not cut at 100 ms.
    let put = json!({"rateLimitOverrides": {"executionMaxWaitMs": 100}});
    gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    fake.push_rule(slow(1_500));
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);
}

#[tokio::test]
async fn upstream_rate_headers_pause_the_queue_until_their_reset() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = protected(&gw, &fake, "hdr", json!({"minTimeBetweenRequestsMs": 0})).await;
    let mut headers = std::collections::BTreeMap::new();
    headers.insert("x-ratelimit-remaining-requests".to_owned(), "0".to_owned());
    headers.insert("x-ratelimit-reset-requests".to_owned(), "1.5s".to_owned());
    fake.push_rule(Rule { headers, times: Some(1), ..Rule::default() });
    let body = chat_body("openai/gpt-4o-mini", false);
    assert_eq!(gw.chat(body.clone(), None).await.status(), 200);
    let health = gw.get_json("/api/monitoring/health").await;
    assert!(health["queues"][format!("openai:{id}")]["pausedUntil"].is_i64(), "{health}");
    let started = Instant::now();
    assert_eq!(gw.chat(body, None).await.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(1_300), "waited for the reset: {:?}", started.elapsed());
}

fn retry_info(delay: &str) -> Value {
    json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Resource has been exhausted",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}})
}

#[tokio::test]
async fn a_body_stated_wait_within_the_queue_wait_paces_the_connection() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = protected(&gw, &fake, "paced", json!({"minTimeBetweenRequestsMs": 0})).await;
    // The connection opts out of cooling, so only the queue holds the next request.
    let put = json!({"disableCooling": true});
    gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    fake.push_rule(Rule { status: Some(429), body: Some(retry_info("2s")), times: Some(1), ..Rule::default() });
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);
    let started = Instant::now();
    let other_model = gw.chat(chat_body("openai/gpt-4o", false), None).await;
    assert_eq!(other_model.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(1_700), "paced by the 2 s wait: {:?}", started.elapsed());
}

/// A Gemini connection (per-model quotas: one queue per model) to the fake.
async fn gemini(gw: &Gateway, fake: &FakeUpstream) -> String {
    let id = gw.add_connection("gemini", "g", "gm-key-0000000000", &fake.url(), 1).await;
    let (status, body) = set_protection(gw, json!({"connectionId": id, "enabled": true})).await;
    assert_eq!(status, 200, "{body}");
    id
}

#[tokio::test]
async fn a_long_typed_retry_info_locks_the_model_instead_of_pausing_its_queue() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = gemini(&gw, &fake).await;
    // Asked for by an alias: the name the client sent is locked too.
    let alias = json!({"alias": "flash", "model": "gemini/gemini-2.5-flash"});
    assert_eq!(gw.api(Method::PUT, "/api/aliases").json(&alias).send().await.unwrap().status(), 200);
    fake.push_rule(Rule { status: Some(429), body: Some(retry_info("120s")), times: Some(1), ..Rule::default() });
    let resp = gw.chat(chat_body("flash", false), None).await;
    assert_eq!(resp.status(), 429);
    let queue_id = format!("gemini:{id}:gemini-2.5-flash");
    let health = gw.get_json("/api/monitoring/health").await;
    assert_eq!(health["queues"][&queue_id]["pausedUntil"], Value::Null, "the queue keeps running: {health}");
    let locks = gw.state.engine.lockouts();
    let lock = locks.iter().find(|l| l.model == "gemini-2.5-flash" && l.connection_id == id).expect("locked");
    assert!(lock.until - gw.state.engine.now() > 110_000, "locked for the stated 120 s");
    assert!(locks.iter().any(|l| l.model == "flash" && l.connection_id == id), "the alias is locked exactly too");
}

#[tokio::test]
async fn a_short_typed_retry_info_pauses_only_that_models_queue() {
    let (fake, gw) = Gateway::with_fake().await;
    let id = gemini(&gw, &fake).await;
    fake.push_rule(Rule { status: Some(429), body: Some(retry_info("20s")), times: Some(1), ..Rule::default() });
    assert_eq!(gw.chat(chat_body("gemini/gemini-2.5-flash", false), None).await.status(), 429);
    let health = gw.get_json("/api/monitoring/health").await;
    assert!(health["queues"][format!("gemini:{id}:gemini-2.5-flash")]["pausedUntil"].is_i64(), "{health}");
    let other = gw.chat(chat_body("gemini/gemini-2.5-pro", false), None).await;
    assert_eq!(other.status(), 200, "another model's queue is not paused");
}

#[tokio::test]
async fn queue_slots_come_back_after_random_client_disconnects() {
    let (fake, gw) = Gateway::with_fake().await;
    protected(&gw, &fake, "two", json!({"maxConcurrent": 2, "minTimeBetweenRequestsMs": 0, "rpm": 100_000})).await;
    fake.push_rule(Rule { trickle_ms: 5, ..slow(5) });
    let tasks: Vec<_> = (0..200u64)
        .map(|i| {
            let req = gw
                .http
                .post(format!("{}/v1/chat/completions", gw.url))
                .json(&chat_body("openai/gpt-4o-mini", i % 2 == 0));
            (i, tokio::spawn(async move { req.send().await?.text().await }))
        })
        .collect();
    let mut kept = Vec::new();
    for (i, task) in tasks {
        if (i * 7919) % 3 == 0 {
            tokio::time::sleep(Duration::from_millis(i % 7)).await;
            task.abort();
        } else {
            kept.push(task);
        }
    }
    for task in kept {
        let _ = task.await;
    }
    until_queues(&gw, "every place and start back", |q| {
        q.iter().all(|(_, queued, running)| *queued == 0 && *running == 0)
    })
    .await;
}

#[tokio::test]
async fn the_protection_switch_is_three_state_and_only_post_changes_it() {
    // No environment: auto-enable is on.
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.resilience_env.clear()).await;
    let fake = FakeUpstream::start().await.unwrap();
    let id = gw.add_connection("openai", "k", "sk-k-0000000000", &v1(&fake), 1).await;
    let enabled = |list: &Value| list["connections"][0]["enabled"].clone();
    let list = gw.get_json("/api/rate-limits").await;
    assert_eq!((enabled(&list), &list["connections"][0]["rateLimitProtection"]), (json!(true), &Value::Null));
    let (status, body) = set_protection(&gw, json!({"connectionId": id, "enabled": false})).await;
    assert_eq!((status, &body["protected"]), (200, &json!(false)), "false opts out under auto-enable");
    assert_eq!(enabled(&gw.get_json("/api/rate-limits").await), json!(false));
    assert_eq!(gw.get_json("/api/rate-limits").await["connections"][0]["pacing"], Value::Null, "no pace when off");
    gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert!(gw.state.admission.queues.snapshot().is_empty(), "an opted-out connection has no queue");
    let (_, body) = set_protection(&gw, json!({"connectionId": id, "enabled": null})).await;
    assert_eq!((&body["enabled"], &body["protected"]), (&Value::Null, &json!(true)), "null follows auto-enable again");
    // Protected: the pace its queue keeps, the connection's overrides applied.
    let pace = |list: Value| list["connections"][0]["pacing"].clone();
    let defaults = pace(gw.get_json("/api/rate-limits").await);
    assert_eq!((&defaults["requestsPerMinute"], &defaults["minTimeBetweenRequestsMs"]), (&json!(60), &json!(350)));
    let overrides = json!({"rateLimitOverrides": {"rpm": 20, "minTimeBetweenRequestsMs": 3000}});
    let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&overrides).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let own = pace(gw.get_json("/api/rate-limits").await);
    assert_eq!((&own["requestsPerMinute"], &own["minTimeBetweenRequestsMs"]), (&json!(20), &json!(3000)));
    // Bad input changes nothing.
    for (bad, field) in [
        (json!({"connectionId": "nope", "enabled": true}), "connectionId"),
        (json!({"connectionId": id}), "enabled"),
        (json!({"connectionId": id, "enabled": "yes"}), "enabled"),
    ] {
        let (status, body) = set_protection(&gw, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.to_string().contains(field), "{bad}: {body}");
    }
    let put = json!({"rateLimitProtection": false});
    let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&put).send().await.unwrap();
    assert_eq!(resp.status(), 400, "PUT cannot change it");
    let list = gw.get_json("/api/rate-limits").await;
    assert_eq!((enabled(&list), &list["connections"][0]["rateLimitProtection"]), (json!(true), &Value::Null));
    let anonymous = gw.http.get(format!("{}/api/rate-limits", gw.url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
}
