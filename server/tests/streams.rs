//! Streams that never hang (SPEC §R6), through the real server and
//! fake-upstream, for every client protocol: upstreams whose headers never
//! come, streams that end before their first event, go silent after it,
//! or drop every time; each answered within its budget, failed over where
//! nothing reached the client yet, and reported to the engine.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{Client, ask, base_url, ends_with_error_event, leading_metadata, post, same_protocol_pairs, text},
    sse_events,
};
use fake_upstream::{DEFAULT_CONTENT, FakeUpstream, Rule};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// Every budget of this file: short, so that a hang shows as a failure.
const BUDGET: Duration = Duration::from_millis(400);

async fn start() -> (FakeUpstream, Gateway) {
    Gateway::with_fake_and_budgets(BUDGET).await
}

/// A connection named `name` to the fake for `provider`: its key
/// (`<name>-<provider>`) and its id.
async fn connect(gw: &Gateway, fake: &FakeUpstream, provider: &str, name: &str, priority: i32) -> (String, String) {
    let key = format!("{name}-{provider}");
    let id = gw.add_connection(provider, name, &key, &base_url(fake, provider), priority).await;
    (key, id)
}

fn on_key(key: &str, rule: Rule) -> Rule {
    Rule { api_key: Some(key.into()), ..rule }
}

fn selected(resp: &reqwest::Response) -> String {
    resp.headers()["x-omniroute-selected-connection-id"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn headers_that_never_come_fail_over_to_the_sibling_within_the_budget() {
    let (fake, gw) = start().await;
    for (client, up) in same_protocol_pairs() {
        let (slow_key, slow) = connect(&gw, &fake, up.provider, "slow", 0).await;
        let (_, good) = connect(&gw, &fake, up.provider, "good", 1).await;
        for stream in [true, false] {
            fake.push_rule(on_key(&slow_key, Rule { times: Some(1), latency_ms: 60_000, ..Rule::default() }));
            let started = Instant::now();
            let resp = post(&gw, client, up.model, stream, &ask(client, up.model, stream)).await;
            assert_eq!(resp.status(), 200, "{client:?} stream={stream}");
            assert_eq!(selected(&resp), good, "{client:?} stream={stream}: served by the sibling");
            assert_eq!(text(client, stream, resp).await, DEFAULT_CONTENT);
            assert!(started.elapsed() < BUDGET * 5, "{client:?} stream={stream}: {:?}", started.elapsed());
            // The slow one cooled on its timeout: clear it for the next round.
            gw.state.engine.clear_connection(&slow, false);
        }
    }
    gw.stop().await;
}

#[tokio::test]
async fn a_stream_that_ends_before_its_first_event_is_retried_once_on_the_same_connection_unmarked() {
    let (fake, gw) = start().await;
    for (client, up) in same_protocol_pairs() {
        let (key, id) = connect(&gw, &fake, up.provider, "only", 0).await;
        fake.push_rule(on_key(&key, Rule { times: Some(1), end_after_chunks: Some(0), ..Rule::default() }));
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(resp.status(), 200, "{client:?}");
        assert_eq!(text(client, true, resp).await, DEFAULT_CONTENT, "{client:?}: recovered before commit");
        assert_eq!(fake.count(up.path), 2, "{client:?}: one retry on the same connection");
        assert_eq!(gw.state.engine.health(&id), Default::default(), "{client:?}: the account is not marked");

        // Ending early every time: one retry, then 502 STREAM_EARLY_EOF.
        fake.push_rule(on_key(&key, Rule { end_after_chunks: Some(0), ..Rule::default() }));
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(resp.status(), 502, "{client:?}");
        assert_eq!(resp.headers()["retry-after"], "1");
        let body: Value = resp.json().await.unwrap();
        assert!(body.to_string().contains("STREAM_EARLY_EOF"), "{client:?}: {body}");
        assert_eq!(fake.count(up.path), 4);
        fake.clear_rules();
        fake.clear_requests();
    }
    gw.stop().await;
}

#[tokio::test]
async fn one_event_then_silence_ends_with_the_protocols_error_event_within_the_idle_budget() {
    let (fake, gw) = start().await;
    for (client, up) in same_protocol_pairs() {
        let (key, id) = connect(&gw, &fake, up.provider, "only", 0).await;
        let first_output = leading_metadata(up) + 1;
        fake.push_rule(on_key(
            &key,
            Rule { times: Some(1), stall_after_chunks: Some(first_output), ..Rule::default() },
        ));
        let started = Instant::now();
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(resp.status(), 200, "{client:?}: committed at the first output");
        let events = sse_events(resp).await;
        assert!(started.elapsed() < BUDGET * 5, "{client:?}: {:?}", started.elapsed());
        assert!(events.len() >= 2, "{client:?}: {events:?}");
        assert!(ends_with_error_event(client, &events), "{client:?}: {events:?}");

        let health = gw.state.engine.health(&id);
        assert!(health.last_error.as_deref().is_some_and(|e| e.contains("stalled")), "{client:?}: {health:?}");
        assert_eq!(health.rate_limited_until, None, "{client:?}: a stall does not cool the account");
        let row = gw.logs().await.into_iter().find(|r| r["connectionId"] == id.as_str()).unwrap();
        assert_eq!((row["status"].as_i64(), row["errorKind"].as_str()), (Some(200), Some("stream_stalled")));
    }
    gw.stop().await;
}

#[tokio::test]
async fn with_stall_cooldown_on_a_stalled_connection_cools() {
    let (fake, gw) = start().await;
    let body = json!({"streamStallCooldown": {"enabled": true}});
    assert_eq!(gw.api(reqwest::Method::PATCH, "/api/resilience").json(&body).send().await.unwrap().status(), 200);
    let id = gw.add_connection("openai", "only", "sk-a", &base_url(&fake, "openai"), 0).await;
    // The role chunk, the first word, then silence.
    fake.push_rule(Rule { times: Some(1), stall_after_chunks: Some(2), ..Rule::default() });
    let resp =
        post(&gw, Client::Chat, "openai/gpt-4o-mini", true, &ask(Client::Chat, "openai/gpt-4o-mini", true)).await;
    assert!(ends_with_error_event(Client::Chat, &sse_events(resp).await));
    assert!(gw.state.engine.health(&id).rate_limited_until.is_some());
    gw.stop().await;
}

#[tokio::test]
async fn a_connection_that_drops_every_stream_is_cooled_and_its_sibling_serves_the_next_request() {
    let (fake, gw) = start().await;
    for (client, up) in same_protocol_pairs() {
        let (bad_key, bad) = connect(&gw, &fake, up.provider, "bad", 0).await;
        let (_, good) = connect(&gw, &fake, up.provider, "good", 1).await;
        let after_first_output = leading_metadata(up) + 2;
        fake.push_rule(on_key(&bad_key, Rule { drop_after_chunks: Some(after_first_output), ..Rule::default() }));
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(selected(&resp), bad);
        assert!(ends_with_error_event(client, &sse_events(resp).await), "{client:?}");
        let now = gw.state.engine.now();
        assert!(gw.state.engine.health(&bad).rate_limited_until.is_some_and(|u| u > now), "{client:?}: cooled");

        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(selected(&resp), good, "{client:?}");
        assert_eq!(text(client, true, resp).await, DEFAULT_CONTENT);
    }
    gw.stop().await;
}

#[tokio::test]
async fn repeated_mid_stream_drops_open_the_provider_breaker() {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    gw.without_cooldowns().await;
    let body = json!({"providerBreaker": {"apikey": {"failureThreshold": 2, "degradationThreshold": 1}}});
    assert_eq!(gw.api(reqwest::Method::PATCH, "/api/resilience").json(&body).send().await.unwrap().status(), 200);
    gw.add_connection("openai", "only", "sk-a", &base_url(&fake, "openai"), 0).await;
    fake.push_rule(Rule { drop_after_chunks: Some(2), ..Rule::default() });
    let model = "openai/gpt-4o-mini";
    for _ in 0..2 {
        let resp = post(&gw, Client::Chat, model, true, &ask(Client::Chat, model, true)).await;
        assert!(ends_with_error_event(Client::Chat, &sse_events(resp).await));
        // Network errors of one connection closer than 5 s count once.
        clock.advance(6_000);
    }
    let resp = post(&gw, Client::Chat, model, true, &ask(Client::Chat, model, true)).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["x-omniroute-provider-breaker"], "open");
    assert_eq!(fake.count("/v1/chat"), 2, "the open breaker kept the third request from the upstream");
    gw.stop().await;
}

#[tokio::test]
async fn a_relayed_529_carries_retry_after() {
    let (fake, gw) = start().await;
    let id = gw.add_connection("anthropic", "only", "sk-ant", &base_url(&fake, "anthropic"), 0).await;
    let model = "anthropic/claude-sonnet-4";
    fake.push_rule(Rule { times: Some(1), status: Some(529), ..Rule::default() });
    let resp = post(&gw, Client::Messages, model, false, &ask(Client::Messages, model, false)).await;
    assert_eq!((resp.status().as_u16(), &resp.headers()["retry-after"]), (529, &"3".parse().unwrap()));
    let overloaded =
        Rule { status: Some(529), headers: [("retry-after".into(), "7".into())].into(), ..Rule::default() };
    gw.state.engine.clear_connection(&id, false);
    fake.push_rule(Rule { times: Some(1), ..overloaded });
    let resp = post(&gw, Client::Messages, model, false, &ask(Client::Messages, model, false)).await;
    assert_eq!(
        (resp.status().as_u16(), &resp.headers()["retry-after"]),
        (529, &"7".parse().unwrap()),
        "the upstream's own"
    );
    gw.stop().await;
}

#[tokio::test]
async fn keepalives_arrive_while_the_first_event_is_late_and_a_late_failure_is_an_error_event() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.sse_heartbeat_interval = Duration::from_millis(100);
        c.stream_readiness_timeout = Duration::from_millis(1_000);
    })
    .await;
    for (client, up) in same_protocol_pairs() {
        let (key, id) = connect(&gw, &fake, up.provider, "only", 0).await;
        fake.push_rule(on_key(&key, Rule { times: Some(1), latency_ms: 450, ..Rule::default() }));
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(resp.status(), 200, "{client:?}: committed early");
        let raw = resp.text().await.unwrap();
        let keepalive = if matches!(client, Client::Messages) { "event: ping\n" } else { ": keepalive\n" };
        let first = raw.find(keepalive).unwrap_or(usize::MAX);
        assert!(first == 0 && raw.matches(keepalive).count() >= 3, "{client:?}: {raw}");
        assert!(raw.contains("Hello"), "{client:?}: then the stream itself: {raw}");

        // Nothing within the readiness budget: the answer is an error event.
        fake.push_rule(on_key(&key, Rule { times: Some(1), latency_ms: 5_000, ..Rule::default() }));
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(resp.status(), 200);
        let raw = resp.text().await.unwrap();
        assert!(raw.contains("STREAM_READINESS_TIMEOUT") || raw.contains("no non-ping SSE event"), "{client:?}: {raw}");
        let events = common::parse_sse(&raw);
        assert!(ends_with_error_event(client, &events), "{client:?}: {events:?}");
        gw.state.engine.clear_connection(&id, false);
    }
    gw.stop().await;
}

#[tokio::test]
async fn the_throughput_watchdog_setting_aborts_a_trickling_stream() {
    let (fake, gw) = start().await;
    let id = gw.add_connection("openai", "only", "sk-a", &base_url(&fake, "openai"), 0).await;
    // An answer long enough to be judged before the model stops.
    fake.push_rule(Rule { trickle_ms: 300, content: Some("word ".repeat(12)), ..Rule::default() });
    let model = "openai/gpt-4o-mini";
    let resp = post(&gw, Client::Chat, model, true, &ask(Client::Chat, model, true)).await;
    assert_eq!(text(Client::Chat, true, resp).await, "word ".repeat(12), "off by default: the trickle is served");

    let on = json!({"streamRecovery": {"throughputWatchdog": {"enabled": true, "warmupMs": 0, "windowMs": 1000, "minUsefulBytesPerSecond": 1000}}});
    assert_eq!(gw.api(reqwest::Method::PATCH, "/api/resilience").json(&on).send().await.unwrap().status(), 200);
    let resp = post(&gw, Client::Chat, model, true, &ask(Client::Chat, model, true)).await;
    let events = sse_events(resp).await;
    assert!(ends_with_error_event(Client::Chat, &events), "{events:?}");
    assert!(events.last().unwrap().1.to_string().contains("STREAM_THROUGHPUT_TOO_LOW"));
    let row = gw.logs().await.into_iter().next().unwrap();
    assert_eq!(row["errorKind"], "stream_throughput_too_low");
    assert_eq!(gw.state.engine.health(&id).rate_limited_until, None, "like a stall: recorded, not cooled");
    gw.stop().await;
}

#[tokio::test]
async fn with_stream_recovery_an_early_mid_stream_drop_is_invisible_to_every_client_protocol() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.stream_recovery = true).await;
    for (client, up) in same_protocol_pairs() {
        let (bad_key, _) = connect(&gw, &fake, up.provider, "bad", 0).await;
        let (_, good) = connect(&gw, &fake, up.provider, "good", 1).await;
        fake.push_rule(on_key(&bad_key, Rule { times: Some(1), drop_after_chunks: Some(2), ..Rule::default() }));
        let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        assert_eq!(selected(&resp), good, "{client:?}: the sibling served");
        assert_eq!(text(client, true, resp).await, DEFAULT_CONTENT, "{client:?}: once, no error event");
    }
    gw.stop().await;
}
