//! Client connection hygiene on real sockets: slow and silent clients are
//! cut at their timeout, the open-connection budget answers a fast 503,
//! and shutdown is held neither by idle sockets nor past its grace.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test helpers fail loudly")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{FakeUpstream, Rule};
use server::config::Config;
use std::time::Duration;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::Instant,
};

async fn start(adjust: impl FnOnce(&mut Config)) -> Gateway {
    Gateway::start_configured(tempfile::tempdir().unwrap(), adjust).await
}

async fn connect(gw: &Gateway) -> TcpStream {
    TcpStream::connect(gw.url.trim_start_matches("http://")).await.unwrap()
}

/// A connection from the loopback address `from` (127.0.0.x: another client).
async fn connect_from(gw: &Gateway, from: [u8; 4]) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind((std::net::Ipv4Addr::from(from), 0).into()).unwrap();
    socket.connect(gw.url.trim_start_matches("http://").parse().unwrap()).await.unwrap()
}

/// One request and its answer's head, on a keep-alive connection.
async fn ask(tcp: &mut TcpStream, request: &[u8]) -> String {
    tcp.write_all(request).await.unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf)).await.unwrap().unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Reads until the server closes the connection (at most `limit`);
/// what was read and how long it took.
async fn read_to_close(tcp: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut got = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    });
    read.await.expect("the server never closed the connection");
    (String::from_utf8_lossy(&got).into_owned(), started.elapsed())
}

const HEAD_REQUEST: &[u8] = b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

#[tokio::test]
async fn silent_and_half_sent_heads_are_cut_at_the_header_timeout() {
    let gw = start(|c| c.client.header_read_timeout = Duration::from_millis(300)).await;
    let opened = Instant::now();
    let mut silent = connect(&gw).await;
    let mut partial = connect(&gw).await;
    partial.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    // Meanwhile a normal client is served.
    assert_eq!(gw.http.head(format!("{}/", gw.url)).send().await.unwrap().status(), 200);
    for tcp in [&mut silent, &mut partial] {
        read_to_close(tcp, Duration::from_secs(5)).await;
        assert!(opened.elapsed() >= Duration::from_millis(250), "cut too early: {:?}", opened.elapsed());
    }
    gw.stop().await;
}

#[tokio::test]
async fn http2_clients_and_http1_heads_sent_a_byte_at_a_time_are_both_served() {
    let gw = start(|_| {}).await;
    let h2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let resp = h2.head(format!("{}/", gw.url)).send().await.unwrap();
    assert_eq!((resp.version(), resp.status().as_u16()), (reqwest::Version::HTTP_2, 200));
    // "P" could still begin HTTP/2's preface ("PRI * HTTP/2.0…").
    let mut tcp = connect(&gw).await;
    tcp.set_nodelay(true).unwrap();
    for byte in b"PATCH / HTTP/1.1\r\nHost: 127.0.0.1\r\nconnection: close\r\n\r\n" {
        tcp.write_all(&[*byte]).await.unwrap();
        tcp.flush().await.unwrap();
    }
    let (answer, _) = read_to_close(&mut tcp, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    gw.stop().await;
}

#[tokio::test]
async fn a_body_shorter_than_announced_is_cut_at_the_body_timeout() {
    let gw = start(|c| c.client.body_read_timeout = Duration::from_millis(300)).await;
    let mut tcp = connect(&gw).await;
    let head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(br#"{"model":"#).await.unwrap();
    let (answer, took) = read_to_close(&mut tcp, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("stalled"), "{answer}");
    assert!(took >= Duration::from_millis(250), "{took:?}");
    gw.stop().await;
}

/// One byte per pause, each just in time: the body deadline still ends it.
#[tokio::test]
async fn a_body_trickled_just_in_time_is_cut_at_its_deadline() {
    let gw = start(|c| {
        c.client.body_read_timeout = Duration::from_millis(400);
        c.client.body_deadline = Duration::from_millis(1_000);
    })
    .await;
    let mut tcp = connect(&gw).await;
    let head = "POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let trickle = async {
        for _ in 0..200 {
            if tcp.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), trickle).await;
    let took = started.elapsed();
    let (answer, _) = read_to_close(&mut tcp, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 400") && answer.contains("in time"), "{answer}");
    assert!(took < Duration::from_millis(2_500), "cut near its deadline, not after 200 pauses: {took:?}");
    gw.stop().await;
}

/// One client's flood of connections takes only its share: another client
/// is still served, and the flooding one gets a fast 503.
#[tokio::test]
async fn one_client_cannot_take_every_connection() {
    let gw = start(|c| {
        c.client.max_connections = Some(64);
        c.client.max_connections_per_client = Some(4);
        c.client.header_read_timeout = Duration::from_secs(5);
    })
    .await;
    let mut flood = Vec::new();
    for _ in 0..4 {
        let mut tcp = connect_from(&gw, [127, 0, 0, 2]).await;
        tcp.write_all(b"GET / HTTP/1.1\r\n").await.unwrap(); // a head that never ends
        flood.push(tcp);
    }
    let mut one_more = connect_from(&gw, [127, 0, 0, 2]).await;
    one_more.write_all(HEAD_REQUEST).await.unwrap();
    let (refused, took) = read_to_close(&mut one_more, Duration::from_secs(3)).await;
    assert!(refused.starts_with("HTTP/1.1 503") && refused.contains("This client has too many"), "{refused}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    let mut other = connect_from(&gw, [127, 0, 0, 3]).await;
    assert!(ask(&mut other, HEAD_REQUEST).await.starts_with("HTTP/1.1 200"), "another client is served");
    drop(flood);
    gw.stop().await;
}

/// With every general slot held, the reserve still serves the operator's
/// side — but no inference request, which would hold it for as long.
#[tokio::test]
async fn the_reserve_serves_the_operator_and_no_inference() {
    let gw = start(|c| {
        c.client.max_connections = Some(4);
        c.client.reserved_connections = Some(1);
        c.client.header_read_timeout = Duration::from_secs(5);
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut tcp = connect(&gw).await;
        tcp.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        held.push(tcp);
    }
    let mut operator = connect(&gw).await;
    let models = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    assert!(ask(&mut operator, models).await.starts_with("HTTP/1.1 200"), "the model list is the operator's");
    let body = chat_body("openai/gpt-4o-mini", false).to_string();
    let chat = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let refused = ask(&mut operator, chat.as_bytes()).await;
    assert!(refused.starts_with("HTTP/1.1 503") && refused.contains("too_many_connections"), "{refused}");
    assert!(ask(&mut operator, HEAD_REQUEST).await.starts_with("HTTP/1.1 200"), "still the operator's");
    drop(held);
    gw.stop().await;
}

#[tokio::test]
async fn an_idle_keepalive_connection_closes_but_a_prompt_next_request_is_served() {
    let gw = start(|c| c.client.keepalive_timeout = Duration::from_millis(400)).await;
    let mut tcp = connect(&gw).await;
    let mut buf = [0u8; 1024];
    for _ in 0..2 {
        tcp.write_all(HEAD_REQUEST).await.unwrap();
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buf[..n]));
    }
    let (rest, took) = read_to_close(&mut tcp, Duration::from_secs(5)).await;
    assert_eq!(rest, "");
    assert!(took >= Duration::from_millis(350), "{took:?}");
    gw.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_budget_get_a_fast_503() {
    let gw = start(|c| {
        c.client.max_connections = Some(2);
        c.client.header_read_timeout = Duration::from_millis(500);
        c.client.keepalive_timeout = Duration::from_millis(500);
    })
    .await;
    let (mut a, mut b) = (connect(&gw).await, connect(&gw).await);
    // Both slots are taken by the time the server has answered on one.
    a.write_all(HEAD_REQUEST).await.unwrap();
    let mut buf = [0u8; 512];
    assert!(a.read(&mut buf).await.unwrap() > 0);
    let mut third = connect(&gw).await;
    third.write_all(HEAD_REQUEST).await.unwrap();
    let (refused, took) = read_to_close(&mut third, Duration::from_secs(3)).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("retry-after: 1") && refused.contains("too_many_connections"), "{refused}");
    assert!(took < Duration::from_millis(400), "fast, not after a timeout: {took:?}");
    // Once the silent ones are cut, the slots are free again.
    read_to_close(&mut a, Duration::from_secs(5)).await;
    read_to_close(&mut b, Duration::from_secs(5)).await;
    let mut served = false;
    for _ in 0..50 {
        let mut c = connect(&gw).await;
        c.write_all(HEAD_REQUEST).await.unwrap();
        let n = c.read(&mut buf).await.unwrap_or(0);
        if buf[..n].starts_with(b"HTTP/1.1 200") {
            served = true;
            break;
        }
    }
    assert!(served, "a freed slot admits a new connection");
    gw.stop().await;
}

#[tokio::test]
async fn shutdown_is_not_held_by_idle_or_half_sent_connections() {
    let gw = start(|c| c.shutdown_grace = Duration::from_secs(20)).await;
    let _silent = connect(&gw).await;
    let mut partial = connect(&gw).await;
    partial.write_all(b"GET /api/keys HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let mut idle = connect(&gw).await;
    idle.write_all(HEAD_REQUEST).await.unwrap();
    let mut buf = [0u8; 512];
    assert!(idle.read(&mut buf).await.unwrap() > 0);
    let started = Instant::now();
    gw.stop().await;
    // Not even until the header timeout (10 s): nothing was in flight.
    assert!(started.elapsed() < Duration::from_secs(3), "held for {:?}", started.elapsed());
}

#[tokio::test]
async fn streams_still_open_at_the_end_of_the_grace_get_an_error_event_and_a_log_row() {
    let fake = FakeUpstream::start().await.unwrap();
    fake.push_rule(Rule { stall_after_chunks: Some(1), ..Default::default() });
    let gw = start(|c| c.shutdown_grace = Duration::from_millis(300)).await;
    gw.add_connection("openai", "main", "sk-x", &v1(&fake), 0).await;
    let mut resp = gw.chat(chat_body("openai/gpt-4o-mini", true), None).await;
    assert_eq!(resp.status(), 200);
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    let state = gw.state.clone();
    let (_, rest) = tokio::join!(gw.stop(), resp.bytes());
    let rest = String::from_utf8_lossy(&rest.unwrap()).into_owned();
    assert!(rest.contains("shutting down"), "the stream ends with an error event: {rest}");
    let rows = server::db::logs::list(&state.db, &server::db::logs::LogFilter { limit: 10, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].error_kind.as_deref(), Some("server_shutdown"));
}

#[tokio::test]
async fn a_stream_still_waiting_for_its_first_event_at_the_end_of_the_grace_gets_the_error_event_too() {
    let fake = FakeUpstream::start().await.unwrap();
    fake.push_rule(Rule { latency_ms: 60_000, ..Default::default() });
    let gw = start(|c| {
        c.shutdown_grace = Duration::from_millis(300);
        c.sse_heartbeat_interval = Duration::from_millis(100);
    })
    .await;
    gw.add_connection("anthropic", "main", "sk-x", &fake.url(), 0).await;
    let body = serde_json::json!({"model": "anthropic/claude-sonnet-4", "stream": true, "max_tokens": 16,
                                  "messages": [{"role": "user", "content": "hi"}]});
    let mut resp = gw.http.post(format!("{}/v1/messages", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200, "committed early: keepalives while the upstream is silent");
    let first = String::from_utf8_lossy(&resp.chunk().await.unwrap().unwrap()).into_owned();
    assert!(first.contains("event: ping"), "{first}");
    let state = gw.state.clone();
    let (_, rest) = tokio::join!(gw.stop(), resp.bytes());
    let rest = String::from_utf8_lossy(&rest.unwrap()).into_owned();
    let last = rest.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("event: error") && last.contains("shutting down"), "ends with the error event: {rest}");
    let rows = server::db::logs::list(&state.db, &server::db::logs::LogFilter { limit: 10, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].error_kind.as_deref(), Some("server_shutdown"), "not a client that went away");
}
