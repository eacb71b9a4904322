//! The bad-input matrix: every `/v1`, `/api` and `/sfn` route that takes
//! a body gets malformed JSON, wrong types, deeply nested and oversized
//! bodies, invalid UTF-8, NUL bytes and an oversized header. Every answer
//! must be a 4xx with a message, and nothing may change.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::{ADMIN_PASSWORD, Gateway, MGMT_KEY, v1};
use serde_json::{Value, json};

/// JSON routes: (method, path, authenticated with the management key).
/// Three take an optional body (empty means "all"): they are not sent
/// the empty one.
const OPTIONAL_BODY: [&str; 3] =
    ["/api/resilience/reset", "/api/resilience/cooldowns", "/api/resilience/model-cooldowns"];
const JSON_ROUTES: &[(&str, &str, bool)] = &[
    ("POST", "/v1/chat/completions", false),
    ("POST", "/v1/messages", false),
    ("POST", "/v1/responses", false),
    ("POST", "/v1/messages/count_tokens", false),
    ("POST", "/v1beta/models/fake-model:generateContent", false),
    ("POST", "/api/auth/login", false),
    ("POST", "/api/providers", true),
    ("PUT", "/api/providers/{conn}", true),
    ("POST", "/api/combos", true),
    ("PUT", "/api/combos/coding", true),
    ("POST", "/api/keys", true),
    ("PATCH", "/api/resilience", true),
    ("POST", "/api/resilience/reset", true),
    ("POST", "/api/resilience/cooldowns", true),
    ("DELETE", "/api/resilience/model-cooldowns", true),
];

/// Server functions and a form body each gets, mangled below. The two
/// that create something get a base that is refused on its own (an
/// unknown provider, an empty name), so no mangle can create anything.
const SERVER_FNS: &[(&str, &str)] = &[
    ("add_connection", "provider=no-such-provider&name=x"),
    ("update_connection", "id={conn}&name=y"),
    ("set_connection_active", "id={conn}&active=true"),
    ("delete_connection", "id=x"),
    ("create_key", "name="),
    ("revoke_key", "id=x"),
    ("save_resilience", "card=session-affinity&fields[sessionAffinityTtlMs]=5"),
    ("clear_cooldowns", "provider=openai"),
    ("clear_model_cooldown", "provider=openai&connection=x&model=m"),
    ("reset_breakers", "provider=openai"),
    ("test_connection", "id=x"),
];

fn bad_json_bodies() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    vec![
        ("truncated", b"{\"model\": ".to_vec()),
        ("not an object", b"[1, 2, 3]".to_vec()),
        ("a string", b"\"hello\"".to_vec()),
        ("wrong types", br#"{"model": 5, "messages": "hi", "name": [], "provider": {}, "password": 1}"#.to_vec()),
        ("deeply nested", format!(r#"{{"model": "m", "messages": {deep}}}"#).into_bytes()),
        ("invalid utf-8", b"{\"model\": \"\xff\xfe\", \"name\": \"\xc3\x28\"}".to_vec()),
        ("raw NUL", b"{\"model\": \"m\0\", \"name\": \"a\0b\"}".to_vec()),
        ("empty", Vec::new()),
    ]
}

/// What can change: the counts of connections, keys and combos, and the settings.
async fn snapshot(gw: &Gateway) -> Value {
    json!({
        "connections": gw.get_json("/api/providers").await["connections"].as_array().unwrap().len(),
        "keys": gw.get_json("/api/keys").await["keys"].as_array().unwrap().len(),
        "combos": gw.get_json("/api/combos").await["combos"].as_array().unwrap().len(),
        "settings": gw.get_json("/api/resilience").await,
    })
}

async fn assert_refused(what: &str, resp: reqwest::Response) {
    let status = resp.status();
    let body = resp.text().await.unwrap();
    assert!(status.is_client_error(), "{what}: {status} {body}");
    assert!(!body.trim().is_empty(), "{what}: {status} without a message");
}

#[tokio::test]
async fn every_json_route_refuses_bad_bodies_and_changes_nothing() {
    let (fake, gw) = Gateway::with_fake().await;
    let conn = gw.add_connection("openai", "main", "sk-upstream-1", &v1(&fake), 0).await;
    let before = snapshot(&gw).await;
    let huge = vec![b' '; 40 * 1024 * 1024];
    for (method, path, admin) in JSON_ROUTES {
        let path = path.replace("{conn}", &conn);
        let mut bodies = bad_json_bodies();
        bodies.push(("larger than any limit", huge.clone()));
        for (kind, body) in bodies {
            if kind == "empty" && OPTIONAL_BODY.contains(&path.as_str()) {
                continue;
            }
            let mut req = gw
                .http
                .request(method.parse().unwrap(), format!("{}{path}", gw.url))
                .header("content-type", "application/json")
                .body(body);
            if *admin {
                req = req.bearer_auth(MGMT_KEY);
            }
            assert_refused(&format!("{method} {path} ({kind})"), req.send().await.unwrap()).await;
        }
    }
    assert_eq!(snapshot(&gw).await, before);
    assert_eq!(fake.requests().iter().filter(|r| r.path.contains("chat")).count(), 0, "no upstream call");
    gw.stop().await;
}

#[tokio::test]
async fn an_oversized_header_is_refused_everywhere() {
    let gw = Gateway::start().await;
    let huge = "x".repeat(200 * 1024);
    for (method, path, _) in JSON_ROUTES {
        let req = gw.http.request(method.parse().unwrap(), format!("{}{path}", gw.url)).header("x-filler", &huge);
        let resp = req.json(&json!({})).send().await.unwrap();
        assert!(resp.status().is_client_error(), "{method} {path}: {}", resp.status());
    }
    gw.stop().await;
}

#[tokio::test]
async fn every_server_function_refuses_mangled_forms_and_changes_nothing() {
    let (fake, gw) = Gateway::with_fake().await;
    let conn = gw.add_connection("openai", "main", "sk-upstream-1", &v1(&fake), 0).await;
    let login = gw.http.post(format!("{}/api/auth/login", gw.url)).json(&json!({"password": ADMIN_PASSWORD}));
    let login = login.send().await.unwrap();
    let cookie = login.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let before = snapshot(&gw).await;
    for (name, form) in SERVER_FNS {
        let form = form.replace("{conn}", &conn);
        let mangled: Vec<(&str, Vec<u8>)> = vec![
            ("missing fields", Vec::new()),
            ("bad escapes", format!("{form}&%zz=%G1").into_bytes()),
            ("invalid utf-8", [form.as_bytes(), b"&name=\xff\xfe"].concat()),
            ("NUL in every value", form.replace('=', "=%00").into_bytes()),
            ("wrong types", format!("{form}&active=maybe&priority=high&fields=3").into_bytes()),
            ("JSON instead of a form", br#"{"id": 1}"#.to_vec()),
        ];
        for (kind, body) in mangled {
            let resp = gw
                .http
                .post(format!("{}/sfn/{name}", gw.url))
                .header("cookie", &cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap();
            let status = resp.status();
            let text = resp.text().await.unwrap();
            // Some mangles still read as a valid call (extra fields are
            // ignored); what must never happen is a 5xx.
            assert!(!status.is_server_error(), "{name} ({kind}): {status} {text}");
            assert!(status.is_success() || !text.trim().is_empty(), "{name} ({kind}): {status} without a message");
        }
    }
    let after = snapshot(&gw).await;
    assert_eq!(after["connections"], before["connections"], "no connection added or removed");
    assert_eq!(after["keys"], before["keys"]);
    gw.stop().await;
}
