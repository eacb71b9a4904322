//! Two gateways on one Postgres act as one (issue [M]): what one is told or
//! learns reaches the other within a second, without a restart.
//! Compiled with `--features postgres-tests`; `cargo xtask test` starts a
//! throwaway cluster and passes `OMNIROUTE_TEST_POSTGRES_URL`.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use common::{
    Gateway, chat_body, chat_keys,
    instances::{pair, routes_connections, within_staleness},
    v1,
};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use sea_orm::ConnectionTrait;
use serde_json::json;
use server::routing::affinity::{PinKey, SessionId};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};
use tokio::time::Instant;

#[tokio::test]
async fn connections_keys_and_settings_made_on_one_serve_on_the_other() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    let conn = a.add_connection("openai", "shared", "sk-shared", &v1(&fake), 0).await;
    let key = a.create_key(json!({"name": "shared"})).await["key"].as_str().unwrap().to_owned();
    let served = within_staleness("a connection and key added on A", || async {
        b.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await.status() == 200
    })
    .await;
    println!("staleness: connection + key {served:?}");
    let resp = b.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], conn.as_str());

    // A setting saved on A is in force on B.
    let patch = json!({"connectionCooldown": {"apikey": {"baseCooldownMs": 4321}}});
    assert_eq!(a.api(Method::PATCH, "/api/resilience").json(&patch).send().await.unwrap().status(), 200);
    within_staleness("a setting saved on A", || async {
        b.get_json("/api/resilience").await["connectionCooldown"]["apikey"]["baseCooldownMs"] == 4321
    })
    .await;

    // A key revoked on A is refused by B (another key stays, so keys are
    // still required).
    let id = a.get_json("/api/keys").await["keys"][0]["id"].as_str().unwrap().to_owned();
    let other = a.create_key(json!({"name": "stays"})).await["key"].as_str().unwrap().to_owned();
    assert!(a.api(Method::DELETE, &format!("/api/keys/{id}")).send().await.unwrap().status().is_success());
    within_staleness("a key revoked on A", || async {
        b.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await.status() == 401
    })
    .await;

    // A connection switched off on A no longer serves on B.
    let off = a.api(Method::PUT, &format!("/api/providers/{conn}")).json(&json!({"isActive": false})).send().await;
    assert_eq!(off.unwrap().status(), 200);
    within_staleness("a connection switched off on A", || async {
        b.chat(chat_body("openai/gpt-4o-mini", false), Some(&other)).await.status() != 200
    })
    .await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_saved_at_the_same_moment_on_both_instances_both_hold() {
    let (a, b) = pair().await;
    for round in 0..10 {
        let on_a = json!({"connectionCooldown": {"apikey": {"baseCooldownMs": 1000 + round}}});
        let on_b = json!({"connectionCooldown": {"oauth": {"baseCooldownMs": 2000 + round}}});
        let (saved_a, saved_b) = tokio::join!(
            a.api(Method::PATCH, "/api/resilience").json(&on_a).send(),
            b.api(Method::PATCH, "/api/resilience").json(&on_b).send()
        );
        assert_eq!((saved_a.unwrap().status().as_u16(), saved_b.unwrap().status().as_u16()), (200, 200));
        let doc = server::db::settings::get(&a.state.db, server::services::resilience::KEY).await.unwrap().unwrap();
        let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
        let cooldown = &doc["connectionCooldown"];
        assert_eq!(
            (&cooldown["apikey"]["baseCooldownMs"], &cooldown["oauth"]["baseCooldownMs"]),
            (&json!(1000 + round), &json!(2000 + round)),
            "round {round}: {doc}"
        );
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_account_cooling_on_one_instance_cools_on_the_other() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    a.add_connection("openai", "first", "sk-first", &v1(&fake), 0).await;
    let second = a.add_connection("openai", "second", "sk-second", &v1(&fake), 1).await;
    routes_connections(&b, 2).await;
    fake.push_rule(Rule {
        api_key: Some("sk-first".into()),
        status: Some(429),
        headers: [("retry-after".to_owned(), "600".to_owned())].into(),
        times: Some(1),
        ..Default::default()
    });
    let resp = a.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], second.as_str());
    let cooled = within_staleness("the cooldown A saw", || async {
        b.get_json("/api/providers").await["connections"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "first" && c["rateLimitedUntil"].is_i64())
    })
    .await;
    println!("staleness: cooldown {cooled:?}");
    let before = chat_keys(&fake).len();
    for _ in 0..3 {
        let resp = b.chat(chat_body("openai/gpt-4o-mini", false), None).await;
        assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], second.as_str());
    }
    assert_eq!(chat_keys(&fake)[before..], ["sk-second"; 3], "B never asks the cooling account");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_listener_that_lost_its_connection_catches_up() {
    let (a, b) = pair().await;
    // A change whose notification nobody gets: written behind the feed's back.
    let doc = json!({"connectionCooldown": {"apikey": {"baseCooldownMs": 777}}}).to_string();
    server::db::settings::put(&a.state.db, server::services::resilience::KEY, &doc, 0).await.unwrap();
    let cooldown =
        || async { b.get_json("/api/resilience").await["connectionCooldown"]["apikey"]["baseCooldownMs"].clone() };
    assert_ne!(cooldown().await, 777);
    // Every listener's connection is cut; each reconnects and reads everything again.
    let cut = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
               WHERE datname = current_database() AND query LIKE 'LISTEN%'";
    let cut = a.state.db.query_all_raw(sea_orm::Statement::from_string(a.state.db.get_database_backend(), cut));
    assert_eq!(cut.await.unwrap().len(), 2, "one listener per instance");
    let caught_up =
        within_staleness("a change made while B's listener was away", || async { cooldown().await == 777 }).await;
    println!("staleness: catch-up after a lost connection {caught_up:?}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_reach_the_other_instance_within_a_second_under_load() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    a.add_connection("openai", "busy", "sk-busy", &v1(&fake), 0).await;
    routes_connections(&b, 1).await;
    // Both instances serve a steady stream of requests meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = [&a, &b]
        .into_iter()
        .flat_map(|gw| std::iter::repeat_n(gw, 8))
        .map(|gw| {
            let (http, url, stop) = (gw.http.clone(), gw.url.clone(), stop.clone());
            #[expect(clippy::disallowed_methods, reason = "the load runs beside the changes")]
            tokio::spawn(async move {
                let mut served = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let body = chat_body("openai/gpt-4o-mini", false);
                    let resp = http.post(format!("{url}/v1/chat/completions")).json(&body).send().await.unwrap();
                    served += u32::from(resp.status() == 200);
                }
                served
            })
        })
        .collect();
    let mut seen = Vec::new();
    for i in 0..20 {
        let alias = json!({"alias": format!("a{i}"), "model": "openai/gpt-4o-mini"});
        assert_eq!(a.api(Method::PUT, "/api/aliases").json(&alias).send().await.unwrap().status(), 200);
        let took = within_staleness("an alias", || async {
            b.get_json("/api/aliases").await["aliases"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["alias"] == format!("a{i}"))
        })
        .await;
        seen.push(took);
    }
    stop.store(true, Ordering::Relaxed);
    let mut served = 0;
    for task in load {
        served += task.await.unwrap();
    }
    seen.sort();
    println!("staleness under load ({served} requests served meanwhile): p50 {:?}, max {:?}", seen[10], seen[19]);
    assert!(served > 100, "the load ran: {served}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_lease_taken_through_one_holds_on_the_other() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    let first = a.add_connection("openai", "first", "sk-first", &v1(&fake), 0).await;
    let second = a.add_connection("openai", "second", "sk-second", &v1(&fake), 1).await;
    let body =
        json!({"name": "lease", "scopes": ["inference", "lease:exclusive"], "allowedConnections": [first, second]});
    let key = a.create_key(body).await["key"].as_str().unwrap().to_owned();
    let owner = format!("vlo_{}", "x".repeat(43));
    let acquire = |gw: &Gateway| {
        as_owner(gw, "/api/v1/session-leases", &key, &owner)
            .json(&json!({"action": "acquire", "model": "openai/gpt-4o-mini"}))
            .send()
    };
    routes_connections(&b, 2).await;
    within_staleness("the key", || async { b.state.auth.keys.lookup(&key).is_some() }).await;
    let taken: serde_json::Value = acquire(&a).await.unwrap().json().await.unwrap();
    assert_eq!(taken["generation"], 1);
    // Other requests through B leave the leased account alone.
    within_staleness("the lease taken through A", || async {
        let resp = b.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await;
        resp.headers()["x-omniroute-selected-connection-id"] == second.as_str()
    })
    .await;
    // The owner asking B again gets the same lease, not a conflict.
    let again = acquire(&b).await.unwrap();
    assert_eq!(again.status(), 200);
    let again: serde_json::Value = again.json().await.unwrap();
    assert_eq!(again["generation"], 1, "{again}");
    a.stop().await;
    b.stop().await;
}

/// A POST to `path` of `gw` with `key`, as lease owner `owner`.
fn as_owner(gw: &Gateway, path: &str, key: &str, owner: &str) -> reqwest::RequestBuilder {
    gw.http.post(format!("{}{path}", gw.url)).bearer_auth(key).header("x-omniroute-lease-owner", owner)
}

#[tokio::test]
async fn the_lease_fence_reads_the_shared_row() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    let conn = a.add_connection("openai", "only", "sk-only", &v1(&fake), 0).await;
    let body = json!({"name": "lease", "scopes": ["inference", "lease:exclusive"], "allowedConnections": [conn]});
    let key = a.create_key(body).await["key"].as_str().unwrap().to_owned();
    let owner = format!("vlo_{}", "y".repeat(43));
    let fenced = |gw: &Gateway| {
        as_owner(gw, "/v1/chat/completions", &key, &owner)
            .header("x-omniroute-lease-generation", "1")
            .json(&chat_body("openai/gpt-4o-mini", false))
            .send()
    };
    routes_connections(&b, 1).await;
    within_staleness("the key", || async { b.state.auth.keys.lookup(&key).is_some() }).await;
    let acquire = as_owner(&a, "/api/v1/session-leases", &key, &owner)
        .json(&json!({"action": "acquire", "model": "openai/gpt-4o-mini"}));
    assert_eq!(acquire.send().await.unwrap().status(), 200);
    assert_eq!(fenced(&b).await.unwrap().status(), 200, "B serves the lease A took");
    // The lease ends behind the feed's back (no notification): B's memory
    // still holds it, the shared row does not.
    let end = "UPDATE session_leases SET state = 'RELEASED', active_owner = NULL, active_connection = NULL";
    a.state.db.execute_unprepared(end).await.unwrap();
    let refused = fenced(&b).await.unwrap();
    assert_eq!(refused.status(), 409, "the row decides: {}", refused.text().await.unwrap());
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_session_keeps_its_account_whichever_instance_it_reaches() {
    let (a, b) = pair().await;
    a.without_cooldowns().await;
    let fake = FakeUpstream::start().await.unwrap();
    a.add_connection("openai", "first", "sk-first", &v1(&fake), 0).await;
    let second = a.add_connection("openai", "second", "sk-second", &v1(&fake), 1).await;
    let turn = |gw: &Gateway, session: &'static str| {
        let req = gw.http.post(format!("{}/v1/chat/completions", gw.url)).header("x-session-id", session);
        req.json(&chat_body("openai/gpt-4o-mini", false)).send()
    };
    routes_connections(&b, 2).await;
    // A 429 (no cooldown) moves the session to the second account on A.
    fake.push_rule(Rule { api_key: Some("sk-first".into()), status: Some(429), times: Some(1), ..Default::default() });
    let served = turn(&a, "s1").await.unwrap();
    assert_eq!(served.headers()["x-omniroute-selected-connection-id"], second.as_str());
    // B, where the first account is as healthy, keeps the session there too.
    let key = PinKey { session: SessionId::of("header:s1"), provider: "openai" };
    within_staleness("the session's pin", || async {
        b.state.routing.affinity.pinned(&key, 3_600_000).is_some_and(|c| *c == *second)
    })
    .await;
    let resp = turn(&b, "s1").await.unwrap();
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], second.as_str());
    assert_eq!(chat_keys(&fake).last().unwrap(), "sk-second");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn health_lists_the_instances_and_a_clean_stop_leaves_the_list() {
    let (a, b) = pair().await;
    let listed = || async { server::services::instances::list(&a.state).await };
    within_staleness("both heartbeats, caught up", || async {
        let l = listed().await;
        l.len() == 2 && l.iter().all(|i| i.caught_up)
    })
    .await;
    let health = a.get_json("/api/monitoring/health").await;
    let instances = health["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 2, "{health}");
    assert_eq!(instances.iter().filter(|i| i["this"] == true).count(), 1);
    assert!(instances.iter().all(|i| i["silent"] == false && i["caughtUp"] == true && i["version"].is_string()));
    assert!(!health.to_string().contains(&*b.state.store.instance), "only a prefix of an instance's name");
    let cookie = a.sign_in().await;
    let page = a.http.get(format!("{}/monitoring/health", a.url)).header("cookie", &cookie).send().await.unwrap();
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"data-testid="instances""#) && html.contains("(this one)"), "the Health page lists them");
    assert!(html.contains("2 live instances share this database"), "Queues says its rows are this instance's");
    // One that went quiet (killed, or cut off) is shown silent.
    let now = a.state.clock.now_ms();
    let gone = server::db::entities::gateway_instance::Model {
        id: "deadbeef0000".into(),
        version: "0.0.9".into(),
        started_at: now - 60_000,
        last_seen_at: now - 20_000,
        caught_up: true,
    };
    server::db::instances::beat(&a.state.db, gone, 0).await.unwrap();
    let silent: Vec<bool> = listed().await.iter().map(|i| i.silent).collect();
    assert_eq!(silent.iter().filter(|s| **s).count(), 1, "{silent:?}");
    b.stop().await;
    assert_eq!(listed().await.len(), 2, "B left; the silent one stays until forgotten");
    a.stop().await;
}

#[tokio::test]
async fn a_model_locked_on_one_instance_is_locked_on_the_other() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    a.add_connection("openai", "only", "sk-only", &v1(&fake), 0).await;
    let settings =
        json!({"modelLockout": {"enabled": true, "baseCooldownMs": 60_000}, "waitForCooldown": {"enabled": false}});
    assert_eq!(a.api(Method::PATCH, "/api/resilience").json(&settings).send().await.unwrap().status(), 200);
    within_staleness("the connection and the settings", || async {
        b.state.routing.connections.snapshot().all().count() == 1
            && b.get_json("/api/resilience").await["modelLockout"]["baseCooldownMs"] == 60_000
    })
    .await;
    let gone = json!({"error": {"message": "The model does not exist"}});
    let rule = Rule {
        model: Some("gpt-4o".into()),
        status: Some(404),
        body: Some(gone),
        times: Some(1),
        ..Default::default()
    };
    fake.push_rule(rule);
    assert_eq!(a.chat(chat_body("openai/gpt-4o", false), None).await.status(), 404);
    let locked = within_staleness("the model lockout", || async { !b.state.engine.lockouts().is_empty() }).await;
    println!("staleness: model lockout {locked:?}");
    let asked = fake.requests().len();
    let resp = b.chat(chat_body("openai/gpt-4o", false), None).await;
    assert_eq!(resp.status(), 429, "B answers model_cooldown without asking");
    assert_eq!(fake.requests().len(), asked);
    // Clearing it on B clears it on A.
    let clear = json!({"provider": "openai", "model": "gpt-4o"});
    let clear = b.api(Method::DELETE, "/api/resilience/model-cooldowns").json(&clear).send();
    assert!(clear.await.unwrap().status().is_success());
    within_staleness("the cleared lockout", || async { a.state.engine.lockouts().is_empty() }).await;
    a.stop().await;
    b.stop().await;
}

/// A gateway binary of its own (a process that can be killed), on `url`.
struct Process {
    child: tokio::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Process {
    /// Starts the binary on a free port and waits until it answers ready.
    async fn start(database_url: &str) -> Process {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_omniroute"))
                .args(["serve", "--port", &port.to_string()])
                .env("DATA_DIR", dir.path())
                .env("DATABASE_URL", database_url)
                .env("OMNIROUTE_SECRET_KEY", "one key for every instance")
                .env("OMNIROUTE_MANAGEMENT_KEY", common::MGMT_KEY)
                .env("INITIAL_PASSWORD", common::ADMIN_PASSWORD)
                .env("OMNIROUTE_WORKERS", "1")
                .env("RATE_LIMIT_AUTO_ENABLE", "false")
                .env("OMNIROUTE_LOG", "warn")
                .stdout(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let mut process =
                Process { child, url: format!("http://127.0.0.1:{port}"), _dir: tempfile::tempdir().unwrap() };
            let http = reqwest::Client::new();
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(30) {
                if process.child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: try another
                }
                let ready = http.get(format!("{}/api/ready", process.url)).send().await;
                if ready.is_ok_and(|r| r.status() == 200) {
                    process._dir = dir;
                    return process;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        panic!("the gateway binary did not become ready");
    }

    fn api(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().request(method, format!("{}{path}", self.url)).bearer_auth(common::MGMT_KEY)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instance_loses_only_its_last_log_rows_and_the_other_serves_on() {
    let url = common::fresh_postgres_database().await;
    let fake = FakeUpstream::start().await.unwrap();
    let (mut a, b) = (Process::start(&url).await, Process::start(&url).await);
    let conn = json!({"provider": "openai", "name": "shared", "apiKey": "sk-shared", "baseUrl": v1(&fake)});
    assert_eq!(a.api(Method::POST, "/api/providers").json(&conn).send().await.unwrap().status(), 201);
    let held =
        json!({"provider": "openai", "name": "leased", "apiKey": "sk-leased", "baseUrl": v1(&fake), "priority": 1});
    let held =
        a.api(Method::POST, "/api/providers").json(&held).send().await.unwrap().json::<serde_json::Value>().await;
    let held = held.unwrap()["connection"]["id"].as_str().unwrap().to_owned();
    let key = |body: serde_json::Value| {
        let a = &a;
        async move {
            let created = a.api(Method::POST, "/api/keys").json(&body).send().await.unwrap();
            let created: serde_json::Value = created.json().await.unwrap();
            created["key"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned()
        }
    };
    let (ka, kb) = (key(json!({"name": "to-a"})).await, key(json!({"name": "to-b"})).await);
    let kl =
        key(json!({"name": "lease", "scopes": ["inference", "lease:exclusive"], "allowedConnections": [held]})).await;
    let http = reqwest::Client::new();
    let ask = {
        let http = http.clone();
        move |url: String, key: String| {
            let http = http.clone();
            async move {
                let body = chat_body("openai/gpt-4o-mini", false);
                http.post(format!("{url}/v1/chat/completions")).bearer_auth(key).json(&body).send().await
            }
        }
    };
    within_staleness("the connection and keys made on A, on B", || async {
        ask(b.url.clone(), kb.clone()).await.is_ok_and(|r| r.status() == 200)
    })
    .await;
    // A lease taken through A.
    let owner = format!("vlo_{}", "k".repeat(43));
    let lease = |url: &str, action: serde_json::Value| {
        http.post(format!("{url}/api/v1/session-leases"))
            .bearer_auth(&kl)
            .header("x-omniroute-lease-owner", &owner)
            .json(&action)
            .send()
    };
    let taken = lease(&a.url, json!({"action": "acquire", "model": "openai/gpt-4o-mini"})).await.unwrap();
    assert_eq!(taken.status(), 200);

    // Traffic through both; A is killed (SIGKILL) mid-traffic.
    let answered_by_a: Arc<parking_lot::Mutex<Vec<Instant>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (answered, stop, ask) = (answered_by_a.clone(), stop.clone(), ask.clone());
            let (url, key) = (a.url.clone(), ka.clone());
            #[expect(clippy::disallowed_methods, reason = "traffic runs beside the kill")]
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match ask(url.clone(), key.clone()).await {
                        Ok(r) if r.status() == 200 => answered.lock().push(Instant::now()),
                        _ => return,
                    }
                }
            })
        })
        .collect();
    // Two seconds of traffic, so that "its last moments" are a small part of it.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(answered_by_a.lock().len() > 100, "A served {} requests", answered_by_a.lock().len());
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let killed_at = Instant::now();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    // B serves on.
    for _ in 0..20 {
        assert_eq!(ask(b.url.clone(), kb.clone()).await.unwrap().status(), 200);
    }
    // The lease keeps its fence: its owner renews it through B.
    let renewed = lease(&b.url, json!({"action": "renew", "generation": 1})).await.unwrap();
    assert_eq!(renewed.status(), 200, "{}", renewed.text().await.unwrap());
    // A's log rows: all but its last moments' are stored.
    let answered = answered_by_a.lock().clone();
    let last_moments = answered.iter().filter(|t| killed_at.duration_since(**t) < Duration::from_millis(500)).count();
    let usage = b.api(Method::GET, "/api/usage?groupBy=key").send().await.unwrap().json::<serde_json::Value>().await;
    let usage = usage.unwrap();
    let stored = usage["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "to-a")
        .map_or(0, |g| g["requests"].as_u64().unwrap());
    let lost = (answered.len() as u64).saturating_sub(stored);
    println!(
        "kill -9: A answered {}, stored {stored}, lost {lost} (answered in its last 500 ms: {last_moments})",
        answered.len()
    );
    assert!(stored > 0 && lost <= last_moments as u64, "lost {lost} rows, more than its last 500 ms ({last_moments})");
}

#[tokio::test]
async fn a_tool_limit_learnt_on_one_instance_is_known_on_the_other() {
    let (a, b) = pair().await;
    let fake = FakeUpstream::start().await.unwrap();
    a.add_connection("openai", "only", "sk-only", &v1(&fake), 0).await;
    let refusal = "Invalid 'tools': array too long. Expected an array with maximum length 2, but got an array with length 3 instead.";
    let body = json!({"error": {"message": refusal, "type": "invalid_request_error", "param": "tools"}});
    fake.push_rule(Rule { status: Some(400), body: Some(body), times: Some(1), ..Default::default() });
    let tools: Vec<_> =
        (0..3).map(|i| json!({"type": "function", "function": {"name": format!("t{i}"), "parameters": {}}})).collect();
    let asked = json!({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "tools": tools});
    assert_eq!(a.chat(asked, None).await.status(), 400);
    assert_eq!(a.state.routing.tool_limits.refused_from("openai", "gpt-4o-mini"), Some(3));
    within_staleness("the tool limit", || async {
        b.state.routing.tool_limits.refused_from("openai", "gpt-4o-mini") == Some(3)
    })
    .await;
    a.stop().await;
    b.stop().await;
}
