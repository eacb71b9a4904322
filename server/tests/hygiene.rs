//! What is stored and shown stays clean: no part of a credential in error
//! text, no control characters or shadowing names, private files.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::{Gateway, chat_body, v1};
use reqwest::Method;
use serde_json::{Value, json};

const KEY: &str = "sk-live-Zq8Rt4Wm2Xy7Pn5Kb3Vd9";

/// Every run of 8 characters of `KEY` that `text` still contains.
fn leaks(text: &str) -> Vec<String> {
    let key = KEY.as_bytes();
    key.windows(8)
        .filter(|w| text.as_bytes().windows(8).any(|t| t == *w))
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

#[tokio::test]
async fn a_partly_echoed_key_is_redacted_from_every_error_text() {
    let (fake, gw) = Gateway::with_fake().await;
    // The upstream echoes most of the key, a few characters changed
    // around it, and its last characters separately.
    let echo = format!("Incorrect API key provided: XX{}YY (ending {})", &KEY[..22], &KEY[20..]);
    fake.push_rule(fake_upstream::Rule {
        api_key: Some(KEY.into()),
        status: Some(401),
        body: Some(json!({"error": {"message": echo, "type": "invalid_request_error"}})),
        ..Default::default()
    });
    assert!(!leaks(&echo).is_empty(), "the echo does carry the key");
    let id = gw.add_connection("openai", "leaky", KEY, &v1(&fake), 0).await;

    let answer = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(answer.status(), 401);
    let answer = answer.text().await.unwrap();
    assert!(answer.contains("[redacted]"), "{answer}");
    let tested = gw.api(Method::POST, &format!("/api/providers/{id}/test")).send().await.unwrap();
    let tested = tested.text().await.unwrap();
    let connection = gw.get_json(&format!("/api/providers/{id}")).await.to_string();
    let health = gw.get_json("/api/resilience/connections").await.to_string();
    let logs = Value::Array(gw.logs().await).to_string();
    assert!(logs.contains("[redacted]"), "{logs}");
    for (place, text) in [
        ("client answer", &answer),
        ("test result", &tested),
        ("connection", &connection),
        ("health", &health),
        ("logs", &logs),
    ] {
        assert_eq!(leaks(text), Vec::<String>::new(), "{place}: {text}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn names_refuse_control_characters_and_combos_cannot_shadow_models() {
    let gw = Gateway::start().await;
    let refused = |resp: reqwest::Response| async move {
        assert_eq!(resp.status(), 400);
        let body: Value = resp.json().await.unwrap();
        (body["error"]["details"][0]["field"].as_str().unwrap().to_owned(), body.to_string())
    };
    let conn = json!({"provider": "openai", "name": "bad\u{0}name", "apiKey": "sk-x-000000"});
    let (field, body) = refused(gw.api(Method::POST, "/api/providers").json(&conn).send().await.unwrap()).await;
    assert_eq!(field, "name", "{body}");
    assert!(body.contains("control characters"), "{body}");
    let key = json!({"name": "ops\u{1b}[31m"});
    assert_eq!(refused(gw.api(Method::POST, "/api/keys").json(&key).send().await.unwrap()).await.0, "name");

    let combo =
        |name: &str| json!({"name": name, "strategy": "priority", "targets": [{"model": "openai/gpt-4o-mini"}]});
    for (name, why) in [
        ("openai-compatible/fake-model", "reserved for providers"),
        ("gpt-4o-mini", "a model of"),
        ("openai", "the id of provider"),
        ("line\nbreak", "control characters"),
    ] {
        let resp = gw.api(Method::POST, "/api/combos").json(&combo(name)).send().await.unwrap();
        let (field, body) = refused(resp).await;
        assert_eq!(field, "name", "{name:?}: {body}");
        assert!(body.contains(why), "{name:?}: {body}");
    }
    assert_eq!(gw.get_json("/api/combos").await["combos"].as_array().unwrap().len(), 0);
    let ok = gw.api(Method::POST, "/api/combos").json(&combo("coding-fast")).send().await.unwrap();
    assert!(ok.status().is_success(), "{}", ok.text().await.unwrap());
    assert_eq!(gw.get_json("/api/providers").await["connections"].as_array().unwrap().len(), 0);
    gw.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn the_data_dir_and_database_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let gw = Gateway::start_configured(dir, |c| {
        c.data_dir = data.clone();
        c.database_url = format!("sqlite://{}", data.join("omniroute.db").display());
    })
    .await;
    // A write, so the WAL and SHM files exist.
    gw.create_key(json!({"name": "k"})).await;
    assert_eq!(mode(&data), 0o700);
    for file in ["omniroute.db", "omniroute.db-wal", "omniroute.db-shm", "secret.key"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    gw.stop().await;
}
