//! Upstreams over HTTPS, as real providers are reached: the pooled client
//! takes HTTP/2 where the upstream's TLS handshake offers it, so many
//! requests (and open streams) share one connection, and HTTP/1.1 where
//! only that is offered. `OMNIROUTE_UPSTREAM_CA_FILE` adds the authority
//! of a private upstream (here the fake's test authority) to the roots.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::{Alpn, FakeUpstream, Rule, ca_file};
use futures_util::future::join_all;

/// A gateway trusting the fake's test authority, with one connection to `fake`.
async fn trusting(fake: &FakeUpstream) -> Gateway {
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.upstream_ca_file = Some(ca_file())).await;
    gw.add_connection("openai", "tls", "sk-tls", &v1(fake), 0).await;
    gw
}

/// Sends `n` chat requests at once (each held 300 ms by the fake, so they
/// overlap) and returns their statuses.
async fn at_once(gw: &Gateway, fake: &FakeUpstream, n: usize) -> Vec<u16> {
    fake.push_rule(Rule { latency_ms: 300, ..Rule::default() });
    let asks = (0..n).map(|_| gw.chat(chat_body("openai/gpt-4o-mini", false), None));
    join_all(asks).await.iter().map(|r| r.status().as_u16()).collect()
}

#[tokio::test]
async fn an_upstream_offering_http2_carries_many_requests_on_one_connection() {
    let fake = FakeUpstream::start_tls(Alpn::Http2).await.unwrap();
    let gw = trusting(&fake).await;
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", true), None).await.status(), 200);
    assert_eq!(at_once(&gw, &fake, 16).await, vec![200; 16]);
    let versions: Vec<String> = fake.requests().into_iter().map(|r| r.version).collect();
    assert_eq!(versions, vec!["HTTP/2.0"; 17]);
    assert_eq!(fake.in_flight("*").peak, 16, "the sixteen were answered at once");
    assert_eq!(fake.connections(), 1, "on one connection");
    gw.stop().await;
}

#[tokio::test]
async fn an_upstream_offering_only_http1_gets_a_connection_per_request_in_flight() {
    let fake = FakeUpstream::start_tls(Alpn::Http1).await.unwrap();
    let gw = trusting(&fake).await;
    assert_eq!(at_once(&gw, &fake, 4).await, vec![200; 4]);
    let versions: Vec<String> = fake.requests().into_iter().map(|r| r.version).collect();
    assert_eq!(versions, vec!["HTTP/1.1"; 4]);
    assert_eq!(fake.connections(), 4);
    gw.stop().await;
}

#[tokio::test]
async fn an_upstream_whose_authority_is_not_trusted_is_never_sent_the_request() {
    let fake = FakeUpstream::start_tls(Alpn::Http2).await.unwrap();
    let gw = Gateway::start().await;
    gw.add_connection("openai", "tls", "sk-tls", &v1(&fake), 0).await;
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 502);
    let said: serde_json::Value = resp.json().await.unwrap();
    let message = said["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with("the upstream's TLS handshake failed: invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
    assert_eq!((fake.connections(), fake.requests().len()), (1, 0), "the handshake failed: nothing was sent");
    gw.stop().await;
}

#[tokio::test]
async fn a_ca_file_without_certificates_stops_the_start_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, "a key, not a certificate\n").unwrap();
    let mut config = server::config::Config::for_data_dir(dir.path().join("data"));
    config.upstream_ca_file = Some(not_pem);
    let refused = server::build_state(config).await.err().expect("no certificate: the start must fail");
    let message = format!("{refused:#}");
    assert!(
        message.starts_with("OMNIROUTE_UPSTREAM_CA_FILE: ") && message.contains("holds no PEM certificate"),
        "{message}"
    );
}

/// Opens `n` streams to `gw` at once (each sends its first words, then
/// stays open, by `fake`'s rule); fails if one waits 20 s for them.
async fn open_streams(gw: &Gateway, n: usize) -> Vec<reqwest::Response> {
    let open = (0..n).map(|_| async {
        let mut resp = gw.chat(chat_body("openai/gpt-4o-mini", true), None).await;
        assert_eq!(resp.status(), 200);
        assert!(resp.chunk().await.unwrap().is_some());
        resp
    });
    let within = tokio::time::timeout(std::time::Duration::from_secs(20), join_all(open)).await;
    within.expect("every stream got its first words; none waited for a place on a full connection")
}

#[tokio::test]
async fn streams_beyond_what_one_http2_connection_allows_open_another() {
    let fake = FakeUpstream::start_tls_with_streams(Alpn::Http2, 100).await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.upstream_ca_file = Some(ca_file());
        c.client.max_connections_per_client = Some(1_000);
    })
    .await;
    gw.add_connection("openai", "tls", "sk-tls", &v1(&fake), 0).await;
    fake.push_rule(Rule { stall_after_chunks: Some(2), ..Rule::default() });
    // The first alone: until a host has answered, requests that find no
    // connection each start a handshake (the pool keeps the first done).
    let mut streams = open_streams(&gw, 1).await;
    streams.extend(open_streams(&gw, 99).await);
    assert_eq!(fake.connections(), 1, "the first hundred share a connection");
    // Fifty at once open the second lane: one handshake, the rest wait for it.
    streams.extend(open_streams(&gw, 50).await);
    assert_eq!((fake.in_flight("*").now, fake.connections()), (150, 2), "150 streams on two connections");
    drop(streams);
    gw.stop().await;
}
