//! Integrity under faults ([P]): a stream is complete only when its
//! upstream said so. Through the real server and fake-upstream, for every
//! client protocol on an OpenAI-protocol upstream (passed through for Chat
//! clients, translated for the others): a stream cut short or turned to
//! garbage after commit ends with the client's error event — never its
//! normal end — and is logged as such; a role chunk does not commit a
//! stream; the upstream's terminator ends the client's stream at once.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{
        CLIENTS, Client, UPSTREAMS, ask, base_url, ends_normally, ends_with_error_event, leading_metadata, post, text,
    },
    parse_sse,
};
use fake_upstream::{DEFAULT_CONTENT, FakeUpstream, Garble, Rule};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

const BUDGET: Duration = Duration::from_millis(400);
const MODEL: &str = "openai/gpt-4o-mini";

async fn start() -> (FakeUpstream, Gateway) {
    Gateway::with_fake_and_budgets(BUDGET).await
}

/// The log row of the newest request.
async fn last_row(gw: &Gateway) -> Value {
    gw.logs().await.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_stream_cut_short_or_garbled_after_commit_ends_with_the_error_event_never_the_normal_end() {
    let (fake, gw) = start().await;
    let key = "sk-only";
    gw.add_connection("openai", "only", key, &base_url(&fake, "openai"), 0).await;
    // Frames: the role chunk, then a word per chunk; chunk 1 commits the
    // stream, the fault strikes at chunk 3 (20 ms apart, so after commit).
    let faults: [(&str, Rule, &str); 4] = [
        ("a clean early end", Rule { end_after_chunks: Some(3), ..Rule::default() }, "stream_truncated"),
        ("a line that is not JSON", Rule { garble_after_chunks: Some(3), ..Rule::default() }, "stream_malformed"),
        (
            "a 2 MB line",
            Rule { garble_after_chunks: Some(3), garble: Garble::Oversize, ..Rule::default() },
            "stream_malformed",
        ),
        (
            "bare-CR framing",
            Rule { garble_after_chunks: Some(3), garble: Garble::BareCr, ..Rule::default() },
            "stream_malformed",
        ),
    ];
    for client in CLIENTS {
        for (what, rule, kind) in &faults {
            fake.push_rule(Rule { api_key: Some(key.into()), times: Some(1), trickle_ms: 20, ..rule.clone() });
            let resp = post(&gw, client, MODEL, true, &ask(client, MODEL, true)).await;
            assert_eq!(resp.status(), 200, "{client:?}, {what}: committed before the fault");
            let raw = resp.text().await.unwrap();
            let events = parse_sse(&raw);
            assert!(!ends_normally(client, &events, &raw), "{client:?}, {what}: called complete: {raw}");
            assert!(ends_with_error_event(client, &events), "{client:?}, {what}: {raw}");
            assert!(!raw.contains("<html>") && !raw.contains("xxxxxxxx"), "{client:?}, {what}: garbage relayed");
            let row = last_row(&gw).await;
            assert_eq!(row["errorKind"], *kind, "{client:?}, {what}: {row}");
            gw.state.engine.clear_connection(row["connectionId"].as_str().unwrap(), false);
        }
    }
    gw.stop().await;
}

/// An OpenAI upstream's first chunk names only the role: a stall after it
/// is a stream that never became ready, and fails over unseen.
#[tokio::test]
async fn a_role_chunk_then_silence_fails_over_to_the_sibling() {
    let (fake, gw) = start().await;
    let stalling = gw.add_connection("openai", "stalls", "sk-stalls", &base_url(&fake, "openai"), 0).await;
    let good = gw.add_connection("openai", "good", "sk-good", &base_url(&fake, "openai"), 1).await;
    for client in CLIENTS {
        let stalls =
            Rule { api_key: Some("sk-stalls".into()), times: Some(1), stall_after_chunks: Some(1), ..Rule::default() };
        fake.push_rule(stalls);
        let started = Instant::now();
        let resp = post(&gw, client, MODEL, true, &ask(client, MODEL, true)).await;
        assert_eq!(resp.status(), 200, "{client:?}");
        assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], good.as_str(), "{client:?}");
        assert_eq!(text(client, true, resp).await, DEFAULT_CONTENT, "{client:?}: the whole answer, from the sibling");
        assert!(started.elapsed() < BUDGET * 5, "{client:?}: {:?}", started.elapsed());
        // The stalled one cooled on its readiness timeout: clear it for the next round.
        gw.state.engine.clear_connection(&stalling, false);
    }
    gw.stop().await;
}

/// After `[DONE]` the upstream keeps its connection open and sends more:
/// the client's stream ends at the terminator, with nothing after it.
#[tokio::test]
async fn the_upstreams_terminator_ends_the_clients_stream_at_once() {
    let (fake, gw) = start().await;
    gw.add_connection("openai", "only", "sk-only", &base_url(&fake, "openai"), 0).await;
    for client in CLIENTS {
        fake.push_rule(Rule { times: Some(1), linger: true, ..Rule::default() });
        let started = Instant::now();
        let resp = post(&gw, client, MODEL, true, &ask(client, MODEL, true)).await;
        assert_eq!(resp.status(), 200, "{client:?}");
        let raw = tokio::time::timeout(BUDGET * 2, resp.text()).await.expect("the stream ended").unwrap();
        assert!(started.elapsed() < BUDGET, "{client:?}: held {:?}", started.elapsed());
        let events = parse_sse(&raw);
        assert!(ends_normally(client, &events, &raw) && !ends_with_error_event(client, &events), "{client:?}: {raw}");
        assert!(!raw.contains("LATE"), "{client:?}: data after the terminator relayed: {raw}");
        let row = last_row(&gw).await;
        assert_eq!((row["status"].as_i64(), row["errorKind"].as_str()), (Some(200), None), "{client:?}: {row}");
    }
    gw.stop().await;
}

/// With stream recovery on, an error the upstream sends inside the
/// stream's first moments is hidden from every client protocol alike: the
/// request goes to the sibling and the client sees only its answer.
#[tokio::test]
async fn stream_recovery_hides_an_early_in_band_error_from_every_client_protocol() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| c.stream_recovery = true).await;
    // Each case must meet the flaky connection first: no pin to the good one.
    let off = json!({"sessionAffinityTtlMs": 0});
    assert_eq!(gw.api(reqwest::Method::PATCH, "/api/resilience").json(&off).send().await.unwrap().status(), 200);
    for up in &UPSTREAMS {
        let key = format!("sk-flaky-{}", up.provider);
        let flaky = gw.add_connection(up.provider, "flaky", &key, &base_url(&fake, up.provider), 0).await;
        let good = gw.add_connection(up.provider, "good", "sk-good", &base_url(&fake, up.provider), 1).await;
        // The error first, after the metadata, after the first output — at
        // once, and with the frames 100 ms apart (still inside the window).
        let lead = leading_metadata(up);
        let cases = [(0, 0), (lead, 0), (lead + 1, 0), (lead + 1, 100)];
        let mut met = 0;
        for (client, (error_after, trickle_ms)) in CLIENTS.into_iter().flat_map(|c| cases.map(|n| (c, n))) {
            let on = format!("{client:?} on {}, error after {error_after} frames {trickle_ms} ms apart", up.provider);
            let rule = Rule {
                api_key: Some(key.clone()),
                times: Some(1),
                error_after_chunks: Some(error_after),
                trickle_ms,
                ..Rule::default()
            };
            fake.push_rule(rule);
            let resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
            assert_eq!(resp.status(), 200, "{on}");
            assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], good.as_str(), "{on}");
            let raw = resp.text().await.unwrap();
            let events = parse_sse(&raw);
            assert!(!ends_with_error_event(client, &events) && !raw.contains("verloaded"), "{on}: {raw}");
            assert!(ends_normally(client, &events, &raw), "{on}: {raw}");
            let rows = gw.logs().await;
            let failed = rows.iter().filter(|r| r["connectionId"] == flaky.as_str() && r["errorKind"].is_string());
            met += 1;
            assert_eq!(failed.count(), met, "{on}: the flaky connection was tried first");
            // The flaky one starts the next case clean.
            gw.state.engine.clear_connection(&flaky, false);
        }
    }
    gw.stop().await;
}

/// A non-stream 2xx passed through in the client's own protocol must be an
/// answer; a redirect is never handed on. Each fails over to the sibling,
/// and alone comes to a 502.
#[tokio::test]
async fn a_2xx_that_is_no_answer_and_a_redirect_fail_over() {
    let (fake, gw) = start().await;
    let faulty = gw.add_connection("openai", "faulty", "sk-faulty", &base_url(&fake, "openai"), 0).await;
    let good = gw.add_connection("openai", "good", "sk-good", &base_url(&fake, "openai"), 1).await;
    let html =
        Rule { body: Some(Value::String("<html><body>Service Unavailable</body></html>".into())), ..Rule::default() };
    let error = Rule { body: Some(serde_json::json!({"error": {"message": "model overloaded"}})), ..Rule::default() };
    let redirect = Rule {
        status: Some(307),
        headers: [("location".to_owned(), "https://elsewhere.example/v1".to_owned())].into(),
        body: Some(Value::String(String::new())),
        ..Rule::default()
    };
    for (what, rule) in [("an HTML page", html), ("an error object", error), ("a redirect", redirect)] {
        let on_faulty = Rule { api_key: Some("sk-faulty".into()), ..rule.clone() };
        fake.push_rule(Rule { times: Some(1), ..on_faulty.clone() });
        let resp = post(&gw, Client::Chat, MODEL, false, &ask(Client::Chat, MODEL, false)).await;
        assert_eq!(resp.status(), 200, "{what}");
        assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], good.as_str(), "{what}");
        assert_eq!(text(Client::Chat, false, resp).await, DEFAULT_CONTENT, "{what}");
        gw.state.engine.clear_connection(&faulty, false);

        // Alone: every connection answers so.
        fake.push_rule(Rule { times: Some(1), ..rule.clone() });
        fake.push_rule(Rule { times: Some(1), ..on_faulty });
        let resp = post(&gw, Client::Chat, MODEL, false, &ask(Client::Chat, MODEL, false)).await;
        assert_eq!(resp.status(), 502, "{what}");
        assert!(resp.headers().get("location").is_none(), "{what}");
        for id in [&faulty, &good] {
            gw.state.engine.clear_connection(id, false);
        }
        fake.clear_rules();
    }
    gw.stop().await;
}

/// A non-stream answer that stops arriving is bounded like a stream: no
/// byte for the idle budget fails over, long before the fetch timeout.
#[tokio::test]
async fn a_non_stream_body_that_stops_arriving_fails_over_at_the_idle_budget() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
        c.fetch_timeout = Duration::from_secs(30);
        c.stream_idle_timeout = BUDGET;
    })
    .await;
    gw.add_connection("openai", "stalls", "sk-stalls", &base_url(&fake, "openai"), 0).await;
    let good = gw.add_connection("openai", "good", "sk-good", &base_url(&fake, "openai"), 1).await;
    // Half the JSON body, then silence with the connection open.
    fake.push_rule(Rule { api_key: Some("sk-stalls".into()), stall_after_chunks: Some(1), ..Rule::default() });
    let started = Instant::now();
    let resp = post(&gw, Client::Chat, MODEL, false, &ask(Client::Chat, MODEL, false)).await;
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], good.as_str());
    assert_eq!(text(Client::Chat, false, resp).await, DEFAULT_CONTENT);
    assert!(started.elapsed() < BUDGET * 5, "{:?}", started.elapsed());
    let stalled = gw.logs().await.into_iter().find(|r| r["errorKind"] == "body_stalled");
    assert!(stalled.is_some(), "the stalled attempt is logged as such");
    gw.stop().await;
}

/// A client that hangs up as soon as it has read the answer's last event
/// (Codex does) leaves a served answer served: the row is a 200 without
/// an error, and the connection is not marked.
#[tokio::test]
async fn a_client_that_hangs_up_right_after_the_final_event_leaves_a_success() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    // The upstream keeps its connection open after the terminator: only
    // the terminator can end the attempt before the client hangs up.
    fake.push_rule(Rule { linger: true, ..Rule::default() });
    for (client, up) in [(Client::Chat, &UPSTREAMS[0]), (Client::Responses, &UPSTREAMS[2])] {
        let id = gw.add_connection(up.provider, up.provider, "sk-hangs-up", &base_url(&fake, up.provider), 0).await;
        let last = if client == Client::Chat { "[DONE]" } else { "response.completed" };
        let mut resp = post(&gw, client, up.model, true, &ask(client, up.model, true)).await;
        let mut seen = String::new();
        while !seen.contains(last) {
            let chunk = resp.chunk().await.unwrap().expect("the stream ended before its last event");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        drop(resp);
        let row = last_row(&gw).await;
        assert_eq!((row["status"].as_i64(), &row["errorKind"]), (Some(200), &Value::Null), "{client:?}: {row}");
        assert_eq!(gw.state.engine.health(&id), Default::default(), "{client:?}");
    }
    gw.stop().await;
}
