//! Client API keys (SPEC §A, §U): scopes and allowed connections at
//! creation — through the API and as the dashboard's form posts them —
//! refused with a field message when they name nothing real, and the last
//! use written behind the request.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::FakeUpstream;
use reqwest::Method;
use serde_json::{Value, json};

async fn keys(gw: &Gateway) -> Vec<Value> {
    gw.get_json("/api/keys").await["keys"].as_array().unwrap().clone()
}

async fn refused(gw: &Gateway, body: Value) -> Value {
    let resp = gw.api(Method::POST, "/api/keys").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400, "{body}");
    resp.json().await.unwrap()
}

#[tokio::test]
async fn a_key_gets_its_scopes_and_connections_and_bad_ones_change_nothing() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let body = json!({"name": "lease-agent", "scopes": ["lease:exclusive", "inference"], "allowedConnections": [a, a]});
    let created = gw.create_key(body).await;
    let listed = keys(&gw).await;
    let k = listed.iter().find(|k| k["id"] == created["id"]).unwrap();
    assert_eq!(k["scopes"], json!(["inference", "lease:exclusive"]));
    assert_eq!(k["allowedConnections"], json!([a]), "one entry per connection");
    assert_eq!(k["lastUsedAt"], Value::Null);

    let e = refused(&gw, json!({"name": "x", "allowedConnections": ["no-such-connection"]})).await;
    assert_eq!(e["error"]["details"][0]["field"], "allowedConnections");
    assert!(e["error"]["details"][0]["message"].as_str().unwrap().contains("no-such-connection"), "{e}");
    let e = refused(&gw, json!({"name": "x", "scopes": ["lease:exclusive"]})).await;
    assert_eq!(e["error"]["details"][0]["field"], "allowedConnections");
    assert!(e["error"]["details"][0]["message"].as_str().unwrap().contains("lease:exclusive"), "{e}");
    assert_eq!(keys(&gw).await.len(), 1, "nothing else was created");
    gw.stop().await;
}

#[tokio::test]
async fn the_dashboard_form_posts_scopes_and_allowed_connections() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    let cookie = gw.sign_in().await;
    let form = format!("name=form-key&scopes%5Binference%5D=on&scopes%5Bmanagement%5D=on&allowed%5Bconn-{b}%5D=on");
    let resp = gw.sfn("create_key", &cookie, &form).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let created: Value = resp.json().await.unwrap();
    let key = created["key"].as_str().unwrap().to_owned();
    let k = keys(&gw).await.into_iter().find(|k| k["id"] == created["id"]).unwrap();
    assert_eq!(
        (k["scopes"].clone(), k["allowedConnections"].clone()),
        (json!(["inference", "management"]), json!([b]))
    );
    // The allow-list routes: a, first by priority, is not this key's.
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    assert_ne!(a, b);

    let unknown = gw.sfn("create_key", &cookie, "name=x&scopes%5Broot%5D=on").send().await.unwrap();
    assert_eq!(unknown.status(), 400);
    assert!(unknown.text().await.unwrap().contains("unknown scope"));
    let none = gw.sfn("create_key", &cookie, "name=x").send().await.unwrap();
    assert_eq!(none.status(), 400, "no scope checked");
    assert_eq!(keys(&gw).await.len(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn the_last_use_is_listed_at_once_and_stored_behind_the_request() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let created = gw.create_key(json!({"name": "agent"})).await;
    let key = created["key"].as_str().unwrap();
    let before = gw.state.clock.now_ms();
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some(key)).await.status(), 200);
    let used = keys(&gw).await[0]["lastUsedAt"].as_i64().expect("listed from memory");
    assert!(used >= before, "{used} < {before}");
    let dir = gw.stop().await;
    let gw = Gateway::start_in(dir).await;
    assert_eq!(keys(&gw).await[0]["lastUsedAt"].as_i64(), Some(used), "stored behind, kept over a restart");
    gw.stop().await;
}

#[tokio::test]
async fn a_key_whose_allowed_connections_leave_out_a_provider_is_told_so_not_that_none_exist() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.add_connection("anthropic", "b", "sk-b", &fake.url(), 0).await;
    let key = gw.create_key(json!({"name": "openai-only", "allowedConnections": [a]})).await["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await.status(), 200);
    let refused = gw.chat(chat_body("anthropic/claude-haiku-4-5", false), Some(&key)).await;
    assert_eq!(refused.status(), 403);
    let err: Value = refused.json().await.unwrap();
    assert_eq!(err["error"]["code"], "connection_not_allowed", "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("allowed connections"), "{err}");
    let missing = gw.chat(chat_body("groq/llama-3.3-70b-versatile", false), Some(&key)).await;
    assert_eq!(missing.status(), 404, "a provider without connections is still 404");
    assert_eq!(fake.count("/v1/messages"), 0);
    gw.stop().await;
}
