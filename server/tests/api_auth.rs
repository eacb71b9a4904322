//! Who may call what: admin sessions, the management key, client keys.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::{ADMIN_PASSWORD, Gateway, MGMT_KEY, chat_body, v1};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn management_routes_need_auth_and_answer_401_json() {
    let gw = Gateway::start().await;
    for path in ["/api/providers", "/api/providers/catalog", "/api/keys", "/api/logs"] {
        let resp = gw.http.get(format!("{}{path}", gw.url)).send().await.unwrap();
        assert_eq!(resp.status(), 401, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["message"], "Authentication required");
    }
    let wrong = gw.http.get(format!("{}/api/keys", gw.url)).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let ok = gw.api(Method::GET, "/api/keys").send().await.unwrap();
    assert_eq!(ok.status(), 200);
    gw.stop().await;
}

#[tokio::test]
async fn readiness_is_open_and_says_when_the_instance_is_behind() {
    let gw = Gateway::start().await;
    let ready = || async { gw.http.get(format!("{}/api/ready", gw.url)).send().await.unwrap() };
    // SQLite: one instance, nothing to catch up with.
    assert_eq!(ready().await.status(), 200);
    gw.state.store.caught_up.send_replace(false);
    let behind = ready().await;
    assert_eq!(behind.status(), 503);
    let body: Value = behind.json().await.unwrap();
    assert_eq!((body["ready"].clone(), body["reason"].is_string()), (json!(false), true), "{body}");
    gw.stop().await;
}

#[tokio::test]
async fn login_sets_a_strict_http_only_session_cookie_and_logout_ends_it() {
    let gw = Gateway::start().await;
    let bad =
        gw.http.post(format!("{}/api/auth/login", gw.url)).json(&json!({"password": "wrong"})).send().await.unwrap();
    assert_eq!(bad.status(), 401);
    assert!(bad.headers().get("set-cookie").is_none());

    let ok = gw
        .http
        .post(format!("{}/api/auth/login", gw.url))
        .json(&json!({"password": ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let cookie = ok.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let session = cookie.split(';').next().unwrap().to_owned();

    let with_cookie = |path: &str| gw.http.get(format!("{}{path}", gw.url)).header("cookie", session.clone());
    assert_eq!(with_cookie("/api/providers").send().await.unwrap().status(), 200);
    let logout = gw.http.post(format!("{}/api/auth/logout", gw.url)).header("cookie", session.clone());
    assert_eq!(logout.json(&json!({})).send().await.unwrap().status(), 200);
    assert_eq!(with_cookie("/api/providers").send().await.unwrap().status(), 401);
    gw.stop().await;
}

#[tokio::test]
async fn client_keys_gate_v1_once_any_exists_and_scopes_gate_api() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "main", "sk-upstream-1", &v1(&fake), 0).await;

    // No key exists yet: anonymous local use is allowed.
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);

    let created: Value =
        gw.api(Method::POST, "/api/keys").json(&json!({"name": "agent"})).send().await.unwrap().json().await.unwrap();
    let key = created["key"].as_str().unwrap().to_owned();

    let anon = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(anon.status(), 401);
    let body: Value = anon.json().await.unwrap();
    assert_eq!(body["error"]["code"], "missing_api_key");
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some("omr-wrong")).await.status(), 401);
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await.status(), 200);
    // x-api-key works as well as Bearer.
    let via_header = gw
        .http
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-api-key", &key)
        .json(&chat_body("openai/gpt-4o-mini", false))
        .send()
        .await
        .unwrap();
    assert_eq!(via_header.status(), 200);

    // An inference key is not a management credential; a management-scoped key is.
    assert_eq!(gw.http.get(format!("{}/api/keys", gw.url)).bearer_auth(&key).send().await.unwrap().status(), 401);
    let mgmt = gw.create_key(json!({"name": "ops", "scopes": ["management"]})).await;
    let mgmt_key = mgmt["key"].as_str().unwrap();
    assert_eq!(gw.http.get(format!("{}/api/keys", gw.url)).bearer_auth(mgmt_key).send().await.unwrap().status(), 200);
    // ...but it may not call /v1 (no inference scope).
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some(mgmt_key)).await.status(), 403);

    // Revoking the key locks it out at once.
    let id = created["id"].as_str().unwrap();
    assert_eq!(gw.api(Method::DELETE, &format!("/api/keys/{id}")).send().await.unwrap().status(), 200);
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await.status(), 401);
    assert_ne!(MGMT_KEY, key);
    gw.stop().await;
}

#[tokio::test]
async fn keys_are_shown_once_and_stored_only_as_hashes() {
    let gw = Gateway::start().await;
    let created = gw.create_key(json!({"name": "a", "scopes": ["inference"]})).await;
    let key = created["key"].as_str().unwrap();
    let list = gw.api(Method::GET, "/api/keys").send().await.unwrap().text().await.unwrap();
    assert!(!list.contains(key), "the list must not show the key");
    assert!(list.contains(&key[..8]), "the list shows the prefix");
    let dir = gw.stop().await;
    let db = std::fs::read(dir.path().join("omniroute.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains(key), "the database must not hold the key");
}

#[tokio::test]
async fn a_session_survives_a_restart_and_ends_with_a_password_reset() {
    let gw = Gateway::start().await;
    let session = gw.sign_in().await;
    let gw = Gateway::start_in(gw.stop().await).await;
    let page = |gw: &Gateway| gw.http.get(format!("{}/providers", gw.url)).header("cookie", session.clone()).send();
    assert_eq!(page(&gw).await.unwrap().status(), 200, "a restart keeps the session");

    server::auth::password::reset(&gw.state.db, Some("a-new-password".into())).await.unwrap();
    let after = page(&gw).await.unwrap();
    assert_eq!(after.status(), 303, "a password reset ends every session");
    assert_eq!(after.headers()["location"], "/login?next=%2Fproviders");
    gw.stop().await;
}

#[tokio::test]
async fn without_a_session_pages_and_server_functions_lead_to_sign_in_and_back() {
    let gw = Gateway::start().await;
    let page = gw.http.get(format!("{}/combos?tab=a", gw.url)).send().await.unwrap();
    assert_eq!(page.headers()["location"], "/login?next=%2Fcombos%3Ftab%3Da");

    // The hydrated app's call: a 401 its server_fn client decodes.
    let call = gw.sfn("connections", "omniroute_session=stale", "").send().await.unwrap();
    assert_eq!(call.status(), 401);
    assert_eq!(call.text().await.unwrap(), format!("ServerError|{}", app::session::SIGNED_OUT));

    // A plain form post goes to sign-in, then back to the page it came from.
    let form = gw.sfn("create_key", "omniroute_session=stale", "name=k").header("accept", "text/html");
    let form = form.header("referer", format!("{}/keys", gw.url)).send().await.unwrap();
    assert_eq!(form.headers()["location"], "/login?next=%2Fkeys");

    let signed_in = gw
        .http
        .post(format!("{}/sfn/login", gw.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "text/html")
        .body(format!("password={ADMIN_PASSWORD}&next=%2Fkeys"))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.headers()["location"], "/keys");
    let elsewhere = gw
        .http
        .post(format!("{}/sfn/login", gw.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "text/html")
        .body(format!("password={ADMIN_PASSWORD}&next=%2F%2Fevil.example"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.headers()["location"], "/get-started", "next never leaves the site: the landing page instead");
    gw.stop().await;
}
