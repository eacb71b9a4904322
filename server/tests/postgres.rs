//! The same gateway on Postgres (`DATABASE_URL=postgres://…`): migrations,
//! CRUD, the proxy path with its write-behind log, and retention.
//! Compiled with `--features postgres-tests`; `cargo xtask test` starts a
//! throwaway cluster and passes `OMNIROUTE_TEST_POSTGRES_URL`.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::FakeUpstream;
use reqwest::Method;
use serde_json::Value;

#[tokio::test]
async fn the_gateway_runs_on_postgres() {
    let url = common::fresh_postgres_database().await;
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_with(tempfile::tempdir().unwrap(), Some(url.clone())).await;
    let a = gw.add_connection("openai", "a", "sk-pg-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-pg-b", &v1(&fake), 1).await;
    fake.push_rule(fake_upstream::Rule { api_key: Some("sk-pg-a".into()), status: Some(503), ..Default::default() });
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    let logs = gw.logs().await;
    assert_eq!(logs.len(), 2);
    // Usage's grouped query is the same SQL on Postgres.
    for group_by in ["key", "model", "connection", "day"] {
        let usage: Value = gw.get_json(&format!("/api/usage?groupBy={group_by}")).await;
        let requests: i64 = usage["groups"].as_array().unwrap().iter().map(|g| g["requests"].as_i64().unwrap()).sum();
        assert_eq!(requests, if group_by == "connection" { 2 } else { 1 }, "{group_by}: {usage}");
    }
    assert_eq!(logs[1]["connectionId"], a.as_str());
    assert!(
        logs[0]["id"].as_str().unwrap().parse::<i64>().unwrap()
            > logs[1]["id"].as_str().unwrap().parse::<i64>().unwrap()
    );
    let updated = gw
        .api(Method::PUT, &format!("/api/providers/{a}"))
        .json(&serde_json::json!({"isActive": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), 200);
    let created: Value = gw
        .api(Method::POST, "/api/keys")
        .json(&serde_json::json!({"name": "pg"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(created["key"].as_str().unwrap().starts_with("omr-"));
    let db = gw.state.db.clone();
    let dir = gw.stop().await;

    // A restart on the same database keeps everything.
    let gw = Gateway::start_with(dir, Some(url)).await;
    let list = gw.get_json("/api/providers").await;
    assert_eq!(list["total"], 2);
    assert_eq!(server::db::logs::prune(&db, 1).await.unwrap(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn pins_leases_and_key_uses_are_stored_on_postgres() {
    use server::{
        db::leases::{Taken, insert},
        routing::leases::{Lease, Owner},
    };
    let url = common::fresh_postgres_database().await;
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_with(tempfile::tempdir().unwrap(), Some(url.clone())).await;
    let a = gw.add_connection("openai", "a", "sk-pg-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-pg-b", &v1(&fake), 1).await;
    let key = gw.create_key(serde_json::json!({"name": "pg"})).await["key"].as_str().unwrap().to_owned();
    fake.push_rule(fake_upstream::Rule {
        api_key: Some("sk-pg-a".into()),
        status: Some(429),
        times: Some(1),
        ..Default::default()
    });
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    gw.state.store.state.flush().await;
    let pins = server::db::affinity::load(&gw.state.db, 0, server::routing::affinity::MAX_PINS).await.unwrap();
    assert_eq!((pins.len(), pins[0].connection_id.as_str()), (1, b.as_str()));
    let lease = |id: &str, who: char, conn: &str| Lease {
        id: id.into(),
        owner: Owner::parse(&format!("vlo_{}", who.to_string().repeat(43))).unwrap(),
        key_id: "k".into(),
        provider: "openai",
        connection_id: conn.into(),
        generation: 1,
        expires_at: i64::MAX,
    };
    let db = &gw.state.db;
    assert!(matches!(insert(db, lease("1", 'a', &a).active_row(0)).await.unwrap(), Taken::Yes));
    assert!(matches!(insert(db, lease("2", 'b', &a).active_row(0)).await.unwrap(), Taken::Conflict));
    assert!(matches!(insert(db, lease("3", 'a', &b).active_row(0)).await.unwrap(), Taken::Conflict));
    let dir = gw.stop().await;
    let gw = Gateway::start_with(dir, Some(url)).await;
    let keys = gw.get_json("/api/keys").await;
    assert!(keys["keys"][0]["lastUsedAt"].as_i64().is_some(), "{keys}");
    assert_eq!(gw.state.routing.leases.active().len(), 1, "the lease is restored");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_instances_starting_at_once_on_a_new_database_one_makes_the_password() {
    use sea_orm::ConnectionTrait;
    use server::{auth::password, db::settings::ADMIN_PASSWORD_HASH};
    let url = common::fresh_postgres_database().await;
    let (a, b) = (server::db::connect(&url).await.unwrap(), server::db::connect(&url).await.unwrap());
    for round in 0..5 {
        let forget = format!("DELETE FROM key_value WHERE key = '{ADMIN_PASSWORD_HASH}'");
        a.execute_unprepared(&forget).await.unwrap();
        let (on_a, on_b) = tokio::join!(password::ensure_initial(&a, None), password::ensure_initial(&b, None));
        let printed: Vec<String> = [on_a.unwrap(), on_b.unwrap()].into_iter().flatten().collect();
        assert_eq!(printed.len(), 1, "round {round}: exactly one instance prints a password");
        assert!(
            password::check(&b, &printed[0]).await.unwrap(),
            "round {round}: the printed password is the stored one"
        );
    }
}
