//! Connections CRUD: strict JSON, field-level 400s that change nothing,
//! credentials write-only and encrypted at rest.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::Gateway;
use reqwest::Method;
use serde_json::{Value, json};

const SECRET: &str = "sk-very-secret-upstream-key-9876";

async fn count(gw: &Gateway) -> u64 {
    let body = gw.get_json("/api/providers").await;
    body["total"].as_u64().unwrap()
}

#[tokio::test]
async fn crud_round_trip_never_returns_the_credential() {
    let gw = Gateway::start().await;
    let catalog = gw.get_json("/api/providers/catalog").await;
    assert!(
        catalog
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == "openai" && p["category"] == "apikey" && p["protocol"] == "openai-chat")
    );

    let resp = gw
        .api(Method::POST, "/api/providers")
        .json(&json!({"provider": "openai", "name": "main", "apiKey": SECRET, "priority": 2, "maxConcurrent": 3,
                      "rateLimitOverrides": {"modelConcurrency": {"gpt-5": 1}}, "providerSpecificData": {"disableCooling": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let text = resp.text().await.unwrap();
    assert!(!text.contains(SECRET), "{text}");
    let created: Value = serde_json::from_str(&text).unwrap();
    let c = &created["connection"];
    assert_eq!(c["apiKeyMasked"], "…9876");
    assert_eq!(c["status"], "active");
    assert_eq!(c["rateLimitOverrides"]["modelConcurrency"]["gpt-5"], 1);
    assert_eq!(c["disableCooling"], true, "the original's providerSpecificData.disableCooling is read");
    let id = c["id"].as_str().unwrap();

    for path in [format!("/api/providers/{id}"), "/api/providers".into(), "/api/providers?provider=openai".into()] {
        let text = gw.api(Method::GET, &path).send().await.unwrap().text().await.unwrap();
        assert!(text.contains(id) && !text.contains(SECRET), "{path}: {text}");
    }

    let updated: Value = gw
        .api(Method::PUT, &format!("/api/providers/{id}"))
        .json(&json!({"name": "renamed", "isActive": false, "maxConcurrent": null, "apiKey": "sk-rotated-key-5555"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let c = &updated["connection"];
    assert_eq!(
        (c["name"].as_str(), c["status"].as_str(), c["apiKeyMasked"].as_str()),
        (Some("renamed"), Some("disabled"), Some("…5555"))
    );
    assert!(c["maxConcurrent"].is_null());
    // The original's place for the cooling switch works on an edit too, and is not kept as such.
    let edit = json!({"providerSpecificData": {"disableCooling": false, "rateLimitOverrides": {"rpm": 30}}});
    let edited: Value =
        gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&edit).send().await.unwrap().json().await.unwrap();
    let c = &edited["connection"];
    assert_eq!((&c["disableCooling"], &c["rateLimitOverrides"]["rpm"]), (&json!(false), &json!(30)), "{c}");
    assert!(c["providerSpecificData"].is_null(), "{c}");

    assert_eq!(gw.api(Method::DELETE, &format!("/api/providers/{id}")).send().await.unwrap().status(), 200);
    assert_eq!(gw.api(Method::GET, &format!("/api/providers/{id}")).send().await.unwrap().status(), 404);
    assert_eq!(gw.api(Method::DELETE, &format!("/api/providers/{id}")).send().await.unwrap().status(), 404);

    // Encrypted at rest: the SQLite file never holds the plaintext.
    gw.add_connection("openai", "again", SECRET, "https://example.invalid/v1", 0).await;
    let dir = gw.stop().await;
    let db = std::fs::read(dir.path().join("omniroute.db")).unwrap();
    let wal = std::fs::read(dir.path().join("omniroute.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(!String::from_utf8_lossy(&bytes).contains(SECRET));
    }
}

#[tokio::test]
async fn bad_input_is_a_field_level_400_and_changes_nothing() {
    let gw = Gateway::start().await;
    let id = gw.add_connection("openai", "keep", "sk-keep-1111", "https://example.invalid/v1", 0).await;
    let cases = [
        (json!({"provider": "openai", "name": "x", "apiKy": "k"}), "apiKy"),
        (json!({"provider": "nope", "name": "x"}), "provider"),
        (json!({"provider": "openai", "name": ""}), "name"),
        (json!({"provider": "openai", "name": "x", "priority": "high"}), "priority"),
        (json!({"provider": "openai", "name": "x", "baseUrl": "not a url"}), "baseUrl"),
        (json!({"provider": "openai", "name": "x", "baseUrl": "https://münchen.example/v1"}), "baseUrl"),
        (json!({"provider": "openai", "name": "x", "baseUrl": "http://h.example:99999/v1"}), "baseUrl"),
        (json!({"provider": "openai-compatible", "name": "x"}), "baseUrl"),
        (json!({"provider": "openai", "name": "x", "maxConcurrent": 0}), "maxConcurrent"),
        (json!({"provider": "openai", "name": "x", "rateLimitOverrides": {"tpm": 90000}}), "rateLimitOverrides.tpm"),
        (
            json!({"provider": "openai", "name": "x", "providerSpecificData": {"tier": "pro"}}),
            "providerSpecificData.tier",
        ),
        (
            json!({"provider": "openai", "name": "x", "disableCooling": false, "providerSpecificData": {"disableCooling": true}}),
            "providerSpecificData.disableCooling",
        ),
        (
            json!({"provider": "openai", "name": "x", "providerSpecificData": {"rateLimitOverrides": {"rpm": 0}}}),
            "rateLimitOverrides.rpm",
        ),
    ];
    for (body, field) in cases {
        let resp = gw.api(Method::POST, "/api/providers").json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["message"], "Invalid request");
        assert_eq!(err["error"]["details"][0]["field"], field, "{body}: {err}");
    }
    let malformed = gw
        .api(Method::POST, "/api/providers")
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    let not_json = gw.api(Method::POST, "/api/providers").body("provider=openai").send().await.unwrap();
    assert_eq!(not_json.status(), 415);
    assert_eq!(count(&gw).await, 1, "nothing was created");

    let bad_puts = [
        (json!({"name": "new", "provider": "groq"}), "provider"),
        (json!({"name": "new", "baseUrl": "https://ex ample.invalid/v1"}), "baseUrl"),
        (json!({"name": "new", "baseUrl": "https://münchen.example/v1"}), "baseUrl"),
        (
            json!({"name": "new", "providerSpecificData": {"passthroughModels": true}}),
            "providerSpecificData.passthroughModels",
        ),
    ];
    for (body, field) in bad_puts {
        let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["details"][0]["field"], field, "{body}: {err}");
    }
    let c: Value = gw.api(Method::GET, &format!("/api/providers/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (c["connection"]["name"].as_str(), c["connection"]["baseUrl"].as_str()),
        (Some("keep"), Some("https://example.invalid/v1")),
        "a rejected update changes nothing"
    );

    let bad_key =
        gw.api(Method::POST, "/api/keys").json(&json!({"name": "k", "scopes": ["root"]})).send().await.unwrap();
    assert_eq!(bad_key.status(), 400);
    let keys = gw.get_json("/api/keys").await;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 0);
    gw.stop().await;
}

#[tokio::test]
async fn connection_test_reports_status_latency_and_models() {
    let (fake, gw) = Gateway::with_fake().await;
    let good = gw.add_connection("openai", "good", "sk-good-0001", &common::v1(&fake), 0).await;
    let res: Value =
        gw.api(Method::POST, &format!("/api/providers/{good}/test")).send().await.unwrap().json().await.unwrap();
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["status"], 200);
    assert!(res["models"].as_array().unwrap().iter().any(|m| m == "fake-model"));
    let auth = &fake.requests()[0].headers["authorization"];
    assert_eq!(auth, "Bearer sk-good-0001");

    fake.push_rule(fake_upstream::Rule {
        api_key: Some("sk-bad-0002".into()),
        status: Some(401),
        ..Default::default()
    });
    let bad = gw.add_connection("openai", "bad", "sk-bad-0002", &common::v1(&fake), 0).await;
    let res: Value =
        gw.api(Method::POST, &format!("/api/providers/{bad}/test")).send().await.unwrap().json().await.unwrap();
    assert_eq!((res["ok"].as_bool(), res["status"].as_u64()), (Some(false), Some(401)));
    assert!(!res.to_string().contains("sk-bad-0002"));
    // The outcome is kept on the connection for the dashboard.
    let view = |id: String| {
        let gw = &gw;
        async move {
            let v: Value =
                gw.api(Method::GET, &format!("/api/providers/{id}")).send().await.unwrap().json().await.unwrap();
            v["connection"].clone()
        }
    };
    let g = view(good.clone()).await;
    assert_eq!((g["testStatus"].as_str(), g["lastError"].as_str()), (Some("ok"), None));
    let b = view(bad.clone()).await;
    assert_eq!(b["testStatus"], "failed");
    assert!(b["lastError"].as_str().unwrap().contains("401"));

    let dead = gw.add_connection("openai", "dead", "sk-dead-0003", &common::dead_url().await, 0).await;
    let res: Value =
        gw.api(Method::POST, &format!("/api/providers/{dead}/test")).send().await.unwrap().json().await.unwrap();
    assert_eq!((res["ok"].as_bool(), res["status"].as_u64()), (Some(false), Some(0)));
    gw.stop().await;
}

#[tokio::test]
async fn a_custom_upstreams_tested_models_appear_in_v1_models_and_survive_a_restart() {
    let fake = fake_upstream::FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    let id = gw.add_connection("openai-compatible", "lab", "sk-lab-1", &common::v1(&fake), 0).await;
    let ids = |gw: &Gateway| {
        let url = format!("{}/v1/models", gw.url);
        let http = gw.http.clone();
        async move {
            let body: Value = http.get(url).send().await.unwrap().json().await.unwrap();
            body["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
        }
    };
    assert!(!ids(&gw).await.iter().any(|m| m.starts_with("openai-compatible/")), "nothing known before a test");
    let test = gw.api(Method::POST, &format!("/api/providers/{id}/test")).send().await.unwrap();
    assert_eq!(test.status(), 200);
    let expected =
        ["openai-compatible/fake-model", "openai-compatible/fake-model-mini", "openai-compatible/gpt-4o-mini"];
    let listed = ids(&gw).await;
    assert!(expected.iter().all(|m| listed.iter().any(|l| l == m)), "{listed:?}");
    let gw = Gateway::start_in(gw.stop().await).await;
    let listed = ids(&gw).await;
    assert!(expected.iter().all(|m| listed.iter().any(|l| l == m)), "after a restart: {listed:?}");
    gw.stop().await;
}

/// A base URL that carries a proxy's `user:password@` shows the password
/// masked; the form sending the masked URL back keeps the real one.
#[tokio::test]
async fn a_password_in_a_base_url_is_never_shown_and_survives_an_edit() {
    let gw = Gateway::start().await;
    let base = "http://agent:pr0xy-s3cret-pass@127.0.0.1:9/v1";
    let body = json!({"provider": "openai", "name": "via-proxy", "apiKey": "sk-test-1234", "baseUrl": base});
    let created: Value = gw.api(Method::POST, "/api/providers").json(&body).send().await.unwrap().json().await.unwrap();
    let id = created["connection"]["id"].as_str().unwrap().to_owned();
    let shown = "http://agent:****@127.0.0.1:9/v1";
    assert_eq!(created["connection"]["baseUrl"], shown);
    let text = gw.api(Method::GET, "/api/providers").send().await.unwrap().text().await.unwrap();
    assert!(!text.contains("pr0xy-s3cret-pass") && text.contains(shown), "{text}");
    let edit = json!({"name": "renamed", "baseUrl": shown});
    let resp = gw.api(Method::PUT, &format!("/api/providers/{id}")).json(&edit).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let rows = server::db::connections::list(&gw.state.db, None).await.unwrap();
    assert_eq!(rows.iter().find(|r| r.id == id).unwrap().base_url.as_deref(), Some(base), "unchanged by the stars");
    gw.stop().await;
}

#[tokio::test]
async fn a_hosted_api_connection_needs_its_key_and_the_test_names_the_connection() {
    let (fake, gw) = common::Gateway::with_fake().await;
    let resp = gw
        .api(Method::POST, "/api/providers")
        .json(&json!({"provider": "openai", "name": "no-key"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["details"][0]["field"], "apiKey", "{err}");
    assert_eq!(gw.get_json("/api/providers").await["total"], 0, "nothing was added");
    let custom = json!({"provider": "openai-compatible", "name": "vllm", "baseUrl": common::v1(&fake)});
    let resp = gw.api(Method::POST, "/api/providers").json(&custom).send().await.unwrap();
    assert_eq!(resp.status(), 201, "a custom server may take no key");
    let id = resp.json::<Value>().await.unwrap()["connection"]["id"].as_str().unwrap().to_owned();
    let tested: Value =
        gw.api(Method::POST, &format!("/api/providers/{id}/test")).send().await.unwrap().json().await.unwrap();
    assert_eq!((tested["name"].as_str(), tested["ok"].as_bool()), (Some("vllm"), Some(true)), "{tested}");
    gw.stop().await;
}
