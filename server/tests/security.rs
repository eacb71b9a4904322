//! Browser-facing hardening: cross-site requests, security headers, the
//! session cookie's `Secure` flag, sign-in throttling, server-function
//! statuses, and anonymous `/v1` use being local only.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::{ADMIN_PASSWORD, FORM, Gateway, chat_body, v1};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn connection_count(gw: &Gateway) -> usize {
    gw.get_json("/api/providers").await["connections"].as_array().unwrap().len()
}

#[tokio::test]
async fn cross_site_dashboard_posts_are_refused_and_same_origin_ones_pass() {
    let gw = Gateway::start().await;
    let cookie = gw.sign_in().await;
    let add = "provider=openai&name=forged&api_key=sk-forged-0000&base_url=http%3A%2F%2F127.0.0.1%3A9%2Fv1";
    let host = gw.url.trim_start_matches("http://").to_owned();
    // What an attacker's page produces: another origin, or another port of
    // the same host (same-site, which SameSite=Strict lets through).
    let forged = [
        vec![("origin", "http://evil.example".to_owned())],
        vec![("origin", "http://127.0.0.1:1".to_owned())],
        vec![("sec-fetch-site", "same-site".to_owned()), ("origin", format!("http://{host}"))],
        vec![("sec-fetch-site", "cross-site".to_owned())],
    ];
    for headers in forged {
        let mut req = gw.sfn("add_connection", &cookie, add);
        for (k, v) in &headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{headers:?}");
        assert!(resp.text().await.unwrap().contains("Cross-site request refused"));
    }
    assert_eq!(connection_count(&gw).await, 0, "nothing was created");

    let same_origin = gw.sfn("add_connection", &cookie, add).header("sec-fetch-site", "same-origin");
    assert_eq!(same_origin.send().await.unwrap().status(), 200);
    let by_origin =
        gw.sfn("add_connection", &cookie, &add.replace("forged", "second")).header("origin", format!("http://{host}"));
    assert_eq!(by_origin.send().await.unwrap().status(), 200);
    assert_eq!(connection_count(&gw).await, 2);
    gw.stop().await;
}

#[tokio::test]
async fn cookie_authenticated_api_changes_must_be_same_origin_json() {
    let gw = Gateway::start().await;
    let cookie = gw.sign_in().await;
    let post = |path: &str| gw.http.post(format!("{}{path}", gw.url)).header("cookie", cookie.clone());

    // An empty form post (what a forged <form> sends) changes nothing.
    let form = post("/api/resilience/reset").header("content-type", FORM).send().await.unwrap();
    assert_eq!(form.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let body: Value = form.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("application/json"), "{body}");
    let bare = post("/api/keys").body(r#"{"name":"forged"}"#).send().await.unwrap();
    assert_eq!(bare.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "text/plain-like bodies are refused");
    let cross = post("/api/keys").header("origin", "http://evil.example").json(&json!({"name": "x"})).send();
    assert_eq!(cross.await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(gw.get_json("/api/keys").await["keys"].as_array().unwrap().len(), 0);

    // JSON from the dashboard's origin, or a key (no cookie), passes.
    let ok = post("/api/resilience/reset").header("sec-fetch-site", "same-origin").json(&json!({})).send();
    assert_eq!(ok.await.unwrap().status(), 200);
    let keyed = gw.api(Method::POST, "/api/keys").header("origin", "http://evil.example").json(&json!({"name": "k"}));
    assert_eq!(keyed.send().await.unwrap().status(), 201);
    gw.stop().await;
}

#[tokio::test]
async fn pages_carry_security_headers_and_a_nonce_policy() {
    let gw = Gateway::start().await;
    let resp = gw.http.get(format!("{}/login", gw.url)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let h = resp.headers().clone();
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "same-origin");
    let csp = h["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("form-action 'self'"), "{csp}");
    let nonce = csp.split("'nonce-").nth(1).and_then(|r| r.split('\'').next()).unwrap().to_owned();
    assert!(nonce.len() >= 16, "{csp}");
    let html = resp.text().await.unwrap();
    assert!(html.contains(&format!("nonce=\"{nonce}\"")), "the hydration script carries this response's nonce");
    let again = gw.http.get(format!("{}/login", gw.url)).send().await.unwrap();
    assert!(!again.headers()["content-security-policy"].to_str().unwrap().contains(&nonce), "a fresh nonce");
    // The API answers carry the sniffing and framing headers too.
    let api = gw.api(Method::GET, "/api/keys").send().await.unwrap();
    assert_eq!(api.headers()["x-content-type-options"], "nosniff");
    gw.stop().await;
}

#[tokio::test]
async fn the_session_cookie_is_secure_behind_an_https_proxy() {
    let login = |gw: &Gateway, proto: &'static str| {
        gw.http
            .post(format!("{}/api/auth/login", gw.url))
            .header("x-forwarded-proto", proto)
            .json(&json!({"password": ADMIN_PASSWORD}))
            .send()
    };
    let cookie_of = |r: &reqwest::Response| r.headers()["set-cookie"].to_str().unwrap().to_owned();

    let untrusted = Gateway::start().await;
    let plain = login(&untrusted, "https").await.unwrap();
    assert!(!cookie_of(&plain).contains("Secure"), "a forwarding header means nothing unless the proxy is trusted");
    untrusted.stop().await;

    let behind_proxy = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.trust_proxy = true).await;
    assert!(cookie_of(&login(&behind_proxy, "https").await.unwrap()).ends_with("; Secure"));
    assert!(!cookie_of(&login(&behind_proxy, "http").await.unwrap()).contains("Secure"));
    behind_proxy.stop().await;

    let forced = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.secure_cookie = server::config::SecureCookie::Always;
    })
    .await;
    assert!(cookie_of(&login(&forced, "http").await.unwrap()).ends_with("; Secure"));
    forced.stop().await;
}

#[tokio::test]
async fn sign_in_is_throttled_and_a_wrong_password_is_401_everywhere() {
    use server::auth::login_throttle::FREE_FAILURES;
    // The throttle runs on the gateway's clock, which stands still here: a
    // slow password check cannot let the one-second block run out.
    let (gw, clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    let api_login =
        |password: &str| gw.http.post(format!("{}/api/auth/login", gw.url)).json(&json!({"password": password})).send();
    for _ in 0..=FREE_FAILURES {
        assert_eq!(api_login("wrong").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    }
    // Now this address waits, even with the right password (no oracle).
    for password in ["wrong", ADMIN_PASSWORD] {
        let throttled = api_login(password).await.unwrap();
        assert_eq!(throttled.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry_after: u64 = throttled.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=2).contains(&retry_after), "{retry_after}");
        let body: Value = throttled.json().await.unwrap();
        assert!(body["error"]["message"].as_str().unwrap().contains("Too many failed sign-ins"), "{body}");
    }
    // The login page's server function shares the same throttle.
    let page = gw.http.post(format!("{}/sfn/login", gw.url)).header("content-type", FORM).body("password=wrong");
    let page = page.send().await.unwrap();
    assert_eq!(page.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(page.headers().contains_key("retry-after"));
    // Once the gateway's clock passes the block, the right password is let in.
    clock.advance(server::auth::login_throttle::BASE_DELAY_MS);
    assert_eq!(api_login(ADMIN_PASSWORD).await.unwrap().status(), StatusCode::OK);
    gw.stop().await;

    let fresh = Gateway::start().await;
    let page = fresh.http.post(format!("{}/sfn/login", fresh.url)).header("content-type", FORM).body("password=wrong");
    let page = page.send().await.unwrap();
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    assert!(page.text().await.unwrap().contains("Wrong password"));
    fresh.stop().await;
}

#[tokio::test]
async fn bad_server_function_input_is_a_4xx_that_changes_nothing() {
    let gw = Gateway::start().await;
    let cookie = gw.sign_in().await;
    let cases = [
        ("set_connection_active", "id=x&active=maybe", StatusCode::BAD_REQUEST),
        ("set_connection_active", "active=true", StatusCode::BAD_REQUEST),
        ("save_resilience", "card=no-such-card", StatusCode::BAD_REQUEST),
        ("add_connection", "provider=openai&name=x&priority=high", StatusCode::BAD_REQUEST),
        ("add_connection", "provider=no-such-provider&name=x", StatusCode::BAD_REQUEST),
        ("delete_connection", "id=no-such-id", StatusCode::NOT_FOUND),
        ("revoke_key", "id=no-such-id", StatusCode::NOT_FOUND),
    ];
    for (name, body, status) in cases {
        let resp = gw.sfn(name, &cookie, body).send().await.unwrap();
        let got = resp.status();
        assert_eq!(got, status, "{name} {body}: {}", resp.text().await.unwrap());
    }
    assert_eq!(connection_count(&gw).await, 0);
    gw.stop().await;
}

#[tokio::test]
async fn anonymous_use_is_local_json_and_addressed_to_this_gateway() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "main", "sk-upstream-1", &v1(&fake), 0).await;
    let chat = || gw.http.post(format!("{}/v1/chat/completions", gw.url));
    let body = chat_body("openai/gpt-4o-mini", false).to_string();

    let plain = chat().header("content-type", "text/plain").body(body.clone()).send().await.unwrap();
    assert_eq!(plain.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "a cross-site text/plain post");
    let rebound = chat().header("host", "attacker.example").json(&chat_body("openai/gpt-4o-mini", false));
    let rebound = rebound.send().await.unwrap();
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN, "DNS rebinding: the page's own name");
    let err: Value = rebound.json().await.unwrap();
    assert_eq!(err["error"]["code"], "anonymous_host_refused");
    assert_eq!(fake.requests().len(), 0, "no provider credit was spent");
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);

    // Once a key exists, requireApiKey (default on) decides.
    let key = gw.create_key(json!({"name": "agent"})).await["key"].as_str().unwrap().to_owned();
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 401);
    let off = gw.api(Method::PATCH, "/api/resilience").json(&json!({"requireApiKey": false})).send().await.unwrap();
    assert_eq!(off.status(), 200);
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);
    let wrong = gw.chat(chat_body("openai/gpt-4o-mini", false), Some("omr-wrong")).await;
    assert_eq!(wrong.status(), 401);
    // A refusal of the key carries the ids as an answer does.
    assert_eq!(wrong.headers()["x-request-id"].len(), 32);
    assert_eq!(wrong.headers()["x-omniroute-selected-connection-id"], "none");
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&key)).await.status(), 200);
    let plain = chat().header("content-type", "text/plain").body(body).send().await.unwrap();
    assert_eq!(plain.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "still local rules only");
    gw.stop().await;
}

/// Runs `args` as a command; panics with its output when it fails.
fn run(args: &[&str]) {
    let out = std::process::Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A network namespace joined to this one by a veth pair: the gateway at
/// `10.231.<n>.1`, the namespace's client at `10.231.<n>.2`.
struct OtherMachine {
    name: String,
    gateway_ip: String,
}

impl OtherMachine {
    fn create() -> Self {
        let n = std::process::id() % 250;
        let (name, host_if, ns_if) = (format!("omr-t{n}"), format!("omr-h{n}"), format!("omr-n{n}"));
        let gateway_ip = format!("10.231.{n}.1");
        let _ = std::process::Command::new("ip").args(["netns", "del", &name]).output();
        run(&["ip", "netns", "add", &name]);
        run(&["ip", "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if]);
        run(&["ip", "link", "set", &ns_if, "netns", &name]);
        run(&["ip", "addr", "add", &format!("{gateway_ip}/30"), "dev", &host_if]);
        run(&["ip", "link", "set", &host_if, "up"]);
        run(&["ip", "netns", "exec", &name, "ip", "addr", "add", &format!("10.231.{n}.2/30"), "dev", &ns_if]);
        run(&["ip", "netns", "exec", &name, "ip", "link", "set", &ns_if, "up"]);
        Self { name, gateway_ip }
    }
}

/// `curl` from inside namespace `ns`: (status, body). Blocking, so run
/// beside the runtime.
async fn curl_from(ns: &str, url: &str, body: &str, key: Option<&str>) -> (u16, String) {
    let mut args: Vec<String> = ["netns", "exec", ns, "curl", "-s", "-m", "10", "-w", "\n%{http_code}"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    args.extend(["-H".into(), "content-type: application/json".into(), "-d".into(), body.to_owned()]);
    if let Some(key) = key {
        args.extend(["-H".into(), format!("Authorization: Bearer {key}")]);
    }
    args.push(url.to_owned());
    let out = tokio::process::Command::new("ip").args(&args).output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (status.trim().parse().unwrap(), body.to_owned())
}

impl Drop for OtherMachine {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the pair, and so both.
        let _ = std::process::Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

#[tokio::test]
async fn anonymous_requests_from_another_machine_are_refused() {
    let root = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        eprintln!("skipped: creating a network namespace needs root (the guard's unit tests still run)");
        return;
    }
    let fake = fake_upstream::FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_on("0.0.0.0:0", |_| {}).await;
    gw.add_connection("openai", "main", "sk-upstream-1", &v1(&fake), 0).await;
    let other = OtherMachine::create();
    let url = format!("http://{}:{}/v1/chat/completions", other.gateway_ip, gw.url.rsplit(':').next().unwrap());
    let body = chat_body("openai/gpt-4o-mini", false).to_string();

    let (status, answer) = curl_from(&other.name, &url, &body, None).await;
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("served only from this machine"), "{answer}");
    assert_eq!(fake.requests().len(), 0);
    // With a key the same machine is served.
    let key = gw.create_key(json!({"name": "remote"})).await["key"].as_str().unwrap().to_owned();
    let (status, answer) = curl_from(&other.name, &url, &body, Some(&key)).await;
    assert_eq!(status, 200, "{answer}");
    gw.stop().await;
}
