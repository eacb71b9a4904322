//! The binary as an operator runs it: graceful shutdown on SIGTERM, no
//! secret in its log output; in-flight streams finish during shutdown;
//! mid-stream upstream failures end with an error event.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod common;

use common::{Gateway, MGMT_KEY, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use serde_json::{Value, json};
use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    sync::mpsc,
};

const SECRET: &str = "sk-live-SUPERSECRET-credential-4242";

#[tokio::test]
async fn binary_logs_no_secrets_and_exits_cleanly_on_sigterm() {
    let fake = FakeUpstream::start().await.unwrap();
    // The upstream echoes the credential in its error text, as some do
    // (newest rule first: a 500, then a 401).
    fake.push_rule(Rule {
        status: Some(401),
        body: Some(json!({"error": {"message": format!("Incorrect API key provided: {SECRET}")}})),
        times: Some(1),
        ..Default::default()
    });
    fake.push_rule(Rule {
        status: Some(500),
        body: Some(json!({"error": {"message": format!("key {SECRET} is broken")}})),
        times: Some(1),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (mut child, port, rx, mut output) = start_binary(dir.path());

    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/api/providers"))
        .bearer_auth(MGMT_KEY)
        .json(&json!({"provider": "openai", "name": "main", "apiKey": SECRET, "baseUrl": v1(&fake)}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["connection"]["id"].as_str().unwrap();
    // Each failure below would otherwise cool the only connection.
    let no_cooldowns = json!({"connectionCooldown": {"apikey": {"baseCooldownMs": 0}}});
    let resp =
        http.patch(format!("{base}/api/resilience")).bearer_auth(MGMT_KEY).json(&no_cooldowns).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let fail = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat_body("openai/gpt-4o-mini", false))
        .send()
        .await
        .unwrap();
    assert_eq!(fail.status(), 500);
    assert!(!fail.text().await.unwrap().contains(SECRET), "the client error body is redacted");
    let unauthorized = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat_body("openai/gpt-4o-mini", false))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), 401);
    let text = unauthorized.text().await.unwrap();
    assert!(text.contains("Incorrect API key provided") && !text.contains(SECRET), "{text}");
    let ok = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat_body("openai/gpt-4o-mini", true))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    ok.bytes().await.unwrap();
    http.post(format!("{base}/api/providers/{id}/test")).bearer_auth(MGMT_KEY).send().await.unwrap();
    let logs = http.get(format!("{base}/api/logs")).bearer_auth(MGMT_KEY).send().await.unwrap().text().await.unwrap();
    assert!(!logs.contains(SECRET), "stored log rows are redacted: {logs}");

    // The workers share the port with each other, not with a second
    // gateway: that one is refused, and the first keeps serving.
    let other_dir = tempfile::tempdir().unwrap();
    let second = Command::new(env!("CARGO_BIN_EXE_omniroute"))
        .args(["serve", "--port", &port.to_string()])
        .env("DATA_DIR", other_dir.path())
        .env("INITIAL_PASSWORD", "pw-for-binary-test")
        .output()
        .unwrap();
    let second_err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second gateway started on a port in use");
    assert!(second_err.contains(&format!("binding 127.0.0.1:{port}")), "{second_err}");
    let clients: Vec<_> = (0..6).map(|_| reqwest::Client::new()).collect();
    let answers = futures_util::future::join_all(
        clients
            .iter()
            .map(|c| c.post(format!("{base}/v1/chat/completions")).json(&chat_body("openai/x", false)).send()),
    )
    .await;
    for a in answers {
        assert_eq!(a.unwrap().status(), 200, "every connection is served, whichever worker took it");
    }

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    output.extend(rx.iter());
    let all = output.join("\n");
    assert!(exit.success(), "exit status {exit:?}\n{all}");
    assert!(all.contains("shutdown complete"), "{all}");
    assert!(all.contains("upstream attempt failed"), "debug logs were produced: {all}");
    assert!(!all.contains(SECRET), "a credential leaked into the log output");
    assert!(!all.contains(MGMT_KEY), "the management key leaked into the log output");
}

#[tokio::test]
async fn in_flight_streams_finish_during_graceful_shutdown() {
    let fake = FakeUpstream::start().await.unwrap();
    fake.push_rule(Rule { trickle_ms: 40, content: Some("one two three four five six".into()), ..Default::default() });
    let gw = Gateway::start().await;
    gw.add_connection("openai", "main", "sk-x", &v1(&fake), 0).await;
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", true), None).await;
    assert_eq!(resp.status(), 200);
    #[expect(clippy::disallowed_methods, reason = "the client reads while the test stops the server")]
    let reader = tokio::spawn(resp.bytes());
    let state = gw.state.clone();
    gw.stop().await;
    let body = reader.await.unwrap().unwrap();
    assert!(body.ends_with(b"data: [DONE]\n\n"), "the stream completed: {}", String::from_utf8_lossy(&body));
    // The write-behind log was flushed before shutdown returned.
    let rows = server::db::logs::list(&state.db, &server::db::logs::LogFilter { limit: 10, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
}

#[tokio::test]
async fn a_mid_stream_upstream_drop_ends_with_an_error_event() {
    let fake = FakeUpstream::start().await.unwrap();
    fake.push_rule(Rule { drop_after_chunks: Some(2), ..Default::default() });
    let gw = Gateway::start().await;
    gw.add_connection("openai", "main", "sk-x", &v1(&fake), 0).await;
    let body = gw.chat(chat_body("openai/gpt-4o-mini", true), None).await.bytes().await.unwrap();
    let text = String::from_utf8_lossy(&body);
    let frames: Vec<&str> = text.split("\n\n").filter(|f| !f.is_empty()).collect();
    assert_eq!(frames.len(), 3, "{text}");
    let last: Value = serde_json::from_str(frames[2].strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "upstream_stream_error");
    let logs = gw.logs().await;
    assert_eq!(logs[0]["errorKind"], "stream_interrupted");
    gw.stop().await;
}

#[tokio::test]
async fn logs_filter_by_provider_and_status() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    fake.push_rule(Rule {
        model: Some("deepseek-chat".into()),
        status: Some(502),
        times: Some(1),
        ..Default::default()
    });
    gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    gw.chat(chat_body("deepseek/deepseek-chat", false), None).await;
    gw.chat(chat_body("deepseek/deepseek-chat", false), None).await;
    gw.state.store.logs.flush().await;
    assert_eq!(logs_query(&gw, "?provider=deepseek").await.len(), 2);
    assert_eq!(logs_query(&gw, "?provider=deepseek&status=502").await.len(), 1);
    let newest_first = logs_query(&gw, "?limit=2").await;
    assert_eq!(newest_first.len(), 2);
    assert!(
        newest_first[0]["id"].as_str().unwrap().parse::<i64>().unwrap()
            > newest_first[1]["id"].as_str().unwrap().parse::<i64>().unwrap()
    );
    let bad = gw.api(reqwest::Method::GET, "/api/logs?limit=0").send().await.unwrap();
    assert_eq!(bad.status(), 400);
    gw.stop().await;
}

async fn logs_query(gw: &Gateway, q: &str) -> Vec<Value> {
    let v: Value = gw.api(reqwest::Method::GET, &format!("/api/logs{q}")).send().await.unwrap().json().await.unwrap();
    v["logs"].as_array().unwrap().clone()
}

#[tokio::test]
async fn migrate_and_reset_password_commands_work_on_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_omniroute");
    let migrate = Command::new(bin).args(["migrate", "--data-dir"]).arg(dir.path()).output().unwrap();
    assert!(migrate.status.success(), "{}", String::from_utf8_lossy(&migrate.stderr));
    assert!(String::from_utf8_lossy(&migrate.stdout).contains("migrations applied"));
    let reset = Command::new(bin)
        .args(["reset-password", "--password", "a-new-admin-password", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(reset.status.success());
    assert!(String::from_utf8_lossy(&reset.stdout).contains("a-new-admin-password"));

    // The server keeps the reset password (INITIAL_PASSWORD only applies to a fresh database).
    let gw = Gateway::start_in(dir).await;
    let login = |password: &'static str| {
        gw.http.post(format!("{}/api/auth/login", gw.url)).json(&json!({ "password": password })).send()
    };
    assert_eq!(login("a-new-admin-password").await.unwrap().status(), 200);
    assert_eq!(login(common::ADMIN_PASSWORD).await.unwrap().status(), 401);
    gw.stop().await;
}

/// Starts the binary on a free port and waits for its "listening" line;
/// returns it, its port, its remaining log lines and those read so far.
/// The port is free when picked but may be taken (by a parallel test's
/// client socket) before the binary binds it: then it exits, and the next
/// port is tried.
fn start_binary(dir: &std::path::Path) -> (std::process::Child, u16, mpsc::Receiver<String>, Vec<String>) {
    for _ in 0..3 {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_omniroute"))
            .args(["serve", "--port", &port.to_string()])
            .env("DATA_DIR", dir)
            .env("INITIAL_PASSWORD", "pw-for-binary-test")
            .env("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY)
            .env("OMNIROUTE_LOG", "debug")
            .env("OMNIROUTE_WORKERS", "3")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        drop(tx);
        let mut output = Vec::new();
        for line in rx.iter() {
            let ready = line.contains("OmniRoute listening");
            output.push(line);
            if ready {
                return (child, port, rx, output);
            }
        }
        let _ = child.wait();
    }
    panic!("the binary did not start on three free ports");
}
