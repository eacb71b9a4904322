//! Aliases (SPEC §A): another name for a `provider/model` or a combo,
//! resolved before routing, listed in `/v1/models`, refused with the field
//! named when it would take over another name or points nowhere.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use reqwest::Method;
use serde_json::{Value, json};

async fn put(gw: &Gateway, body: Value) -> (u16, Value) {
    let resp = gw.api(Method::PUT, "/api/aliases").json(&body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_alias_routes_to_its_model_or_combo_and_is_listed() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    assert_eq!(put(&gw, json!({"alias": "fast", "model": "openai/gpt-4o-mini"})).await.0, 200);
    let resp = gw.chat(chat_body("fast", false), None).await;
    assert_eq!(resp.status(), 200);
    let sent: Value = serde_json::from_str(&fake.requests().last().unwrap().body).unwrap();
    assert_eq!(sent["model"], "gpt-4o-mini", "the upstream gets the model the alias names");
    let models = gw.get_json("/v1/models").await;
    assert!(models["data"].as_array().unwrap().iter().any(|m| m["id"] == "fast" && m["owned_by"] == "alias"));
    // An alias may name a combo; the combo cannot go while it does.
    let combo = json!({"name": "coding", "strategy": "priority", "targets": [{"model": "openai/gpt-4o"}]});
    assert_eq!(gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap().status(), 201);
    assert_eq!(put(&gw, json!({"alias": "code", "model": "coding"})).await.0, 200);
    assert_eq!(gw.chat(chat_body("code", false), None).await.status(), 200);
    let sent: Value = serde_json::from_str(&fake.requests().last().unwrap().body).unwrap();
    assert_eq!(sent["model"], "gpt-4o");
    let refused = gw.api(Method::DELETE, "/api/combos/coding").send().await.unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("alias code points at this combo"));
    // Re-pointing and deleting.
    assert_eq!(put(&gw, json!({"alias": "fast", "model": "openai/gpt-4o"})).await.0, 200);
    assert_eq!(gw.get_json("/api/aliases").await["aliases"][1], json!({"alias": "fast", "model": "openai/gpt-4o"}));
    let del = |alias: &str| gw.api(Method::DELETE, "/api/aliases").json(&json!({"alias": alias})).send();
    assert_eq!(del("fast").await.unwrap().status(), 204);
    assert_eq!(del("fast").await.unwrap().status(), 404);
    assert_eq!(gw.chat(chat_body("fast", false), None).await.status(), 404, "gone");
}

#[tokio::test]
async fn an_alias_never_takes_over_another_name_and_must_point_somewhere() {
    let gw = Gateway::start().await;
    let combo = json!({"name": "coding", "strategy": "priority", "targets": [{"model": "openai/gpt-4o"}]});
    gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
    let bad = [
        (json!({"alias": "openai", "model": "openai/gpt-4o"}), "alias"),
        (json!({"alias": "gpt-4o", "model": "openai/gpt-4o-mini"}), "alias"),
        (json!({"alias": "coding", "model": "openai/gpt-4o"}), "alias"),
        (json!({"alias": "x/y", "model": "openai/gpt-4o"}), "alias"),
        (json!({"alias": "ok", "model": "nope/gpt-4o"}), "model"),
        (json!({"alias": "ok", "model": "no-such-combo"}), "model"),
        (json!({"alias": "ok"}), "model"),
    ];
    for (body, field) in bad {
        let (status, answer) = put(&gw, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["details"][0]["field"], field, "{body}: {answer}");
    }
    assert_eq!(gw.get_json("/api/aliases").await["aliases"], json!([]), "nothing was saved");
    // A combo cannot take an alias's name either.
    assert_eq!(put(&gw, json!({"alias": "quick", "model": "openai/gpt-4o"})).await.0, 200);
    let clash = json!({"name": "quick", "strategy": "priority", "targets": [{"model": "openai/gpt-4o"}]});
    let resp = gw.api(Method::POST, "/api/combos").json(&clash).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("already an alias"));
    let anonymous = gw.http.get(format!("{}/api/aliases", gw.url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
}
