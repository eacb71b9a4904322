//! The fake's HTTP control API and protocol answers, as the browser tests
//! and benches use them.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use fake_upstream::FakeUpstream;
use serde_json::{Value, json};

#[tokio::test]
async fn rules_scripted_over_http_shape_the_next_answers() {
    let fake = FakeUpstream::start().await.unwrap();
    let http = reqwest::Client::new();
    let rule = json!({"path": "/v1/chat/completions", "apiKey": "k1", "status": 429, "times": 1, "headers": {"retry-after": "7"}});
    let added = http.post(format!("{}/_control/rules", fake.url())).json(&rule).send().await.unwrap();
    assert_eq!(added.status(), 204);
    let chat = |key: &'static str| {
        http.post(format!("{}/v1/chat/completions", fake.url()))
            .bearer_auth(key)
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
            .send()
    };
    let limited = chat("k1").await.unwrap();
    assert_eq!((limited.status().as_u16(), limited.headers()["retry-after"].to_str().unwrap()), (429, "7"));
    assert_eq!(chat("k1").await.unwrap().status(), 200, "times: 1 expired the rule");
    assert_eq!(chat("k2").await.unwrap().status(), 200);

    let log: Vec<Value> =
        http.get(format!("{}/_control/requests", fake.url())).send().await.unwrap().json().await.unwrap();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0]["headers"]["authorization"], "Bearer k1");
    http.delete(format!("{}/_control/requests", fake.url())).send().await.unwrap();
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn each_protocol_answers_json_and_sse() {
    let fake = FakeUpstream::start().await.unwrap();
    let http = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", fake.url());
    let anthropic: Value = http
        .post(url("/v1/messages"))
        .json(&json!({"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(anthropic["content"][0]["text"], fake_upstream::DEFAULT_CONTENT);
    let sse = http
        .post(url("/v1/messages"))
        .json(&json!({"model": "claude", "stream": true, "messages": []}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(sse.starts_with("event: message_start") && sse.contains("event: message_stop"));
    let responses = http.post(url("/v1/responses")).json(&json!({"model": "m", "stream": true})).send().await.unwrap();
    assert!(responses.text().await.unwrap().contains("event: response.completed"));
    let gemini: Value = http
        .post(url("/v1beta/models/gemini-x:generateContent"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(gemini["candidates"][0]["content"]["parts"][0]["text"], fake_upstream::DEFAULT_CONTENT);
    let gemini_sse =
        http.post(url("/v1beta/models/gemini-x:streamGenerateContent?alt=sse")).json(&json!({})).send().await.unwrap();
    assert!(gemini_sse.text().await.unwrap().contains("finishReason"));
    let models: Value = http.get(url("/v1/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["data"][0]["id"], "fake-model");
}

#[tokio::test]
async fn stalls_hold_the_stream_open_after_n_chunks() {
    let fake = FakeUpstream::start().await.unwrap();
    fake.push_rule(fake_upstream::Rule { stall_after_chunks: Some(1), ..Default::default() });
    let mut resp = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", fake.url()))
        .json(&json!({"model": "m", "stream": true, "messages": []}))
        .send()
        .await
        .unwrap();
    assert!(resp.chunk().await.unwrap().is_some());
    let next = tokio::time::timeout(std::time::Duration::from_millis(200), resp.chunk()).await;
    assert!(next.is_err(), "no second chunk arrives while stalled");
}
