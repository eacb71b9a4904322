//! Token counts on every path ([N] item 1): each client protocol passed
//! through to the upstream that speaks it, and translated to another,
//! stream and not — the log row carries the upstream's input and output
//! counts (the fake states them in each protocol's own words).
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{UPSTREAMS, ask, base_url, post, same_protocol_pairs, text},
};
use fake_upstream::FakeUpstream;

/// The fake counts one output token per word of its answer.
const ANSWER_WORDS: i64 = 3;

#[tokio::test]
async fn every_protocol_stream_or_not_passed_through_or_translated_logs_its_tokens() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    for up in &UPSTREAMS {
        gw.add_connection(up.provider, up.provider, "sk-tokens", &base_url(&fake, up.provider), 0).await;
    }
    // Each client on its own upstream, and on the next one (translated).
    let pairs = same_protocol_pairs().into_iter().enumerate();
    for (client, up) in pairs.flat_map(|(i, (client, own))| [(client, own), (client, &UPSTREAMS[(i + 1) % 4])]) {
        for stream in [false, true] {
            let on = format!("{client:?} on {}, stream {stream}", up.provider);
            let resp = post(&gw, client, up.model, stream, &ask(client, up.model, stream)).await;
            assert_eq!(resp.status(), 200, "{on}");
            assert!(!text(client, stream, resp).await.is_empty(), "{on}");
            let row = gw.logs().await.into_iter().next().unwrap();
            assert_eq!(row["provider"], up.provider, "{on}");
            assert!(row["promptTokens"].as_i64().is_some_and(|n| n > 0), "{on}: {row}");
            assert_eq!(row["completionTokens"].as_i64(), Some(ANSWER_WORDS), "{on}: {row}");
        }
    }
    gw.stop().await;
}
