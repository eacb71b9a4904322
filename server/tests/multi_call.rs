//! The combos that make several calls (SPEC §R8), against two upstream
//! accounts on real sockets: `fusion` asks its panel in parallel (no
//! tools, not streamed) and has a judge write the answer from theirs,
//! with the reference's short cuts (tools → the judge alone; one answer →
//! that member; none → 503 naming each failure; stragglers dropped after
//! their grace); `pipeline` chains its steps, each with its prompt, the
//! last one streamed to the client, a transient step failure retried and a
//! lasting one ending the request with that step's status.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, sse_events, v1};
use fake_upstream::{FakeUpstream, RecordedRequest, Rule};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// Two providers on the fake, told apart by their keys, and a combo over them.
async fn two_targets(strategy: &str, config: Value, prompts: [Option<&str>; 2]) -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    let target = |model: &str, prompt: Option<&str>| match prompt {
        Some(p) => json!({"model": model, "prompt": p}),
        None => json!({"model": model}),
    };
    let combo = json!({"name": "panel", "strategy": strategy, "config": config, "targets": [
        target("openai/gpt-4o-mini", prompts[0]),
        target("deepseek/deepseek-chat", prompts[1]),
    ]});
    let resp = gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    (fake, gw)
}

fn answers(fake: &FakeUpstream, key: &str, content: &str, times: Option<u32>) {
    fake.push_rule(Rule { api_key: Some(key.into()), content: Some(content.into()), times, ..Rule::default() });
}

fn fails(fake: &FakeUpstream, key: &str, status: u16, times: Option<u32>) {
    fake.push_rule(Rule { api_key: Some(key.into()), status: Some(status), times, ..Rule::default() });
}

/// The chat requests the fake got with credential `key`, bodies parsed.
fn bodies(fake: &FakeUpstream, key: &str) -> Vec<Value> {
    let by = |r: &RecordedRequest| r.headers["authorization"] == format!("Bearer {key}");
    fake.requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/chat") && by(r))
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

async fn text_of(resp: reqwest::Response) -> String {
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    body["choices"][0]["message"]["content"].as_str().unwrap().to_owned()
}

fn with_tools(model: &str) -> Value {
    let tool = json!({"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}});
    json!({"model": model, "messages": [{"role": "user", "content": "Say hello"}], "tools": [tool]})
}

#[tokio::test]
async fn fusion_asks_the_panel_without_tools_and_the_judge_writes_the_answer() {
    let (fake, gw) = two_targets("fusion", json!({}), [None, None]).await;
    // The newest matching rule wins: the panel call takes the one-time answer.
    answers(&fake, "sk-o", "The judged answer.", None);
    answers(&fake, "sk-o", "Alpha thinks so.", Some(1));
    answers(&fake, "sk-d", "Beta disagrees.", None);
    let resp = gw.chat(chat_body("panel", false), None).await;
    assert_eq!(text_of(resp).await, "The judged answer.");

    let (first, second) = (bodies(&fake, "sk-o"), bodies(&fake, "sk-d"));
    assert_eq!((first.len(), second.len()), (2, 1), "two panel calls and one judge call (the first target)");
    for panel_call in [&first[0], &second[0]] {
        assert_ne!(panel_call["stream"], true, "panel calls are not streamed");
        assert!(panel_call.get("tools").is_none());
        assert_eq!(panel_call["messages"][0]["content"], "Say hello");
    }
    let judge = first[1]["messages"].to_string();
    for part in ["Say hello", "Source 1", "Source 2", "Alpha thinks so.", "Beta disagrees."] {
        assert!(judge.contains(part), "the judge sees {part:?}: {judge}");
    }
    let rows = gw.logs().await;
    assert_eq!(rows.len(), 3, "every call has its log row");
    let ids: std::collections::HashSet<_> = rows.iter().map(|r| r["requestId"].clone()).collect();
    assert_eq!(ids.len(), 1, "under the client's request id");
}

#[tokio::test]
async fn a_named_judge_streams_its_answer_to_a_messages_client() {
    let config = json!({"judgeModel": "deepseek/deepseek-chat"});
    let (fake, gw) = two_targets("fusion", config, [None, None]).await;
    answers(&fake, "sk-o", "Alpha.", None);
    answers(&fake, "sk-d", "Judged by deepseek.", None);
    answers(&fake, "sk-d", "Beta.", Some(1));
    let body = json!({"model": "panel", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "Say hello"}]});
    let resp = gw.http.post(format!("{}/v1/messages", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let text: String =
        sse_events(resp).await.iter().filter_map(|(_, d)| d["delta"]["text"].as_str().map(str::to_owned)).collect();
    assert_eq!(text, "Judged by deepseek.");
    let judge = bodies(&fake, "sk-d").pop().unwrap();
    assert_eq!(judge["stream"], true, "the judge keeps the client's stream");
    assert!(judge["messages"].to_string().contains("Alpha."));
}

#[tokio::test]
async fn a_request_offering_tools_goes_to_the_judge_alone() {
    let (fake, gw) = two_targets("fusion", json!({}), [None, None]).await;
    answers(&fake, "sk-o", "Judge only.", None);
    let resp = gw.chat(with_tools("panel"), None).await;
    assert_eq!(text_of(resp).await, "Judge only.");
    assert_eq!(bodies(&fake, "sk-d").len(), 0, "no panel call");
    assert_eq!(bodies(&fake, "sk-o")[0]["tools"][0]["function"]["name"], "lookup");
}

#[tokio::test]
async fn one_answer_without_a_named_judge_is_that_members_and_none_is_a_503() {
    let (fake, gw) = two_targets("fusion", json!({}), [None, None]).await;
    fails(&fake, "sk-o", 500, None);
    answers(&fake, "sk-d", "Only beta answered.", None);
    let resp = gw.chat(chat_body("panel", false), None).await;
    assert_eq!(text_of(resp).await, "Only beta answered.");
    let beta = bodies(&fake, "sk-d");
    assert_eq!(beta.len(), 2, "its panel call, then the original request");
    assert!(!beta[1]["messages"].to_string().contains("Source"));

    fake.clear_rules();
    fails(&fake, "sk-o", 500, None);
    fails(&fake, "sk-d", 400, None);
    let resp = gw.chat(chat_body("panel", false), None).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().contains_key("retry-after"));
    let body: Value = resp.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("All fusion panel models failed: openai/gpt-4o-mini=status_"), "{message}");
    assert!(message.contains("deepseek/deepseek-chat=status_400"), "{message}");
    assert_eq!(body["error"]["code"], "FUSION_PANEL_FAILED");
}

#[tokio::test]
async fn stragglers_get_only_their_grace_once_min_panel_answered() {
    let config = json!({"judgeModel": "openai/gpt-4o-mini", "fusionTuning": {"minPanel": 1, "stragglerGraceMs": 200}});
    let (fake, gw) = two_targets("fusion", config, [None, None]).await;
    answers(&fake, "sk-o", "Judged alone.", None);
    answers(&fake, "sk-o", "Fast alpha.", Some(1));
    fake.push_rule(Rule {
        api_key: Some("sk-d".into()),
        latency_ms: 5_000,
        content: Some("Too late.".into()),
        ..Rule::default()
    });
    let started = Instant::now();
    let resp = gw.chat(chat_body("panel", false), None).await;
    assert_eq!(text_of(resp).await, "Judged alone.");
    assert!(started.elapsed() < Duration::from_secs(3), "did not wait for the straggler: {:?}", started.elapsed());
    let judge = bodies(&fake, "sk-o")[1]["messages"].to_string();
    assert!(judge.contains("Source 1") && !judge.contains("Source 2"), "{judge}");
}

#[tokio::test]
async fn a_pipeline_chains_its_steps_and_streams_the_last() {
    let (fake, gw) = two_targets("pipeline", json!({}), [Some("Write a draft."), Some("Polish the draft.")]).await;
    answers(&fake, "sk-o", "A rough draft.", None);
    answers(&fake, "sk-d", "A polished answer.", None);
    let resp = gw
        .chat(
            with_tools("panel")
                .as_object()
                .cloned()
                .map(|mut b| {
                    b.insert("stream".into(), json!(true));
                    Value::Object(b)
                })
                .unwrap(),
            None,
        )
        .await;
    assert_eq!(resp.status(), 200);
    let text: String = sse_events(resp)
        .await
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "A polished answer.");
    let first = &bodies(&fake, "sk-o")[0];
    assert_eq!(first["messages"][0], json!({"role": "system", "content": "Write a draft."}));
    assert_eq!(first["messages"][1]["content"], "Say hello", "the first step gets the client's conversation");
    assert!(first.get("tools").is_none() && first["stream"] != true);
    let last = &bodies(&fake, "sk-d")[0];
    assert_eq!(last["messages"][0], json!({"role": "system", "content": "Polish the draft."}));
    assert_eq!(last["messages"][1], json!({"role": "user", "content": "A rough draft."}));
    assert_eq!(last["messages"].as_array().unwrap().len(), 2, "a fresh conversation");
    assert_eq!((last["stream"].clone(), last["tools"][0]["function"]["name"].clone()), (json!(true), json!("lookup")));
}

#[tokio::test]
async fn a_pipeline_step_is_retried_on_a_transient_failure_and_ends_the_request_on_a_lasting_one() {
    let (fake, gw) = two_targets("pipeline", json!({"maxRetries": 1, "retryDelayMs": 10}), [None, None]).await;
    gw.without_cooldowns().await;
    answers(&fake, "sk-o", "Draft.", None);
    fails(&fake, "sk-o", 503, Some(1));
    answers(&fake, "sk-d", "Final.", None);
    let resp = gw.chat(chat_body("panel", false), None).await;
    assert_eq!(text_of(resp).await, "Final.");
    assert_eq!(bodies(&fake, "sk-o").len(), 2, "tried again after the 503");

    fake.clear_rules();
    fake.clear_requests();
    fails(&fake, "sk-o", 400, None);
    let resp = gw.chat(chat_body("panel", false), None).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().starts_with("Pipeline step 1 (openai/gpt-4o-mini) failed"),
        "{body}"
    );
    assert_eq!(bodies(&fake, "sk-o").len(), 1, "a 400 is not retried");
    assert!(bodies(&fake, "sk-d").is_empty(), "the chain stops at the failed step");
}

#[tokio::test]
async fn a_responses_client_gets_the_last_steps_text_and_the_background_warning() {
    let (fake, gw) = two_targets("pipeline", json!({}), [Some("Draft."), None]).await;
    answers(&fake, "sk-o", "A draft.", None);
    answers(&fake, "sk-d", "The final answer.", None);
    let body = json!({"model": "panel", "input": "Say hello", "background": true});
    let resp = gw.http.post(format!("{}/v1/responses", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key("x-omniroute-warning"), "background ran synchronously, and says so");
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["output"][0]["content"][0]["text"], "The final answer.", "{answer}");
    let last = &bodies(&fake, "sk-d")[0];
    assert_eq!(last["messages"][0]["content"], "A draft.", "the first step's text, read from its Responses answer");
}

#[tokio::test]
async fn strategy_fields_and_plans_that_cannot_run_are_refused_naming_the_field() {
    let (_fake, gw) = two_targets("fusion", json!({}), [None, None]).await;
    let refused = |combo: Value| {
        let gw = &gw;
        async move {
            let resp = gw.api(Method::POST, "/api/combos").json(&combo).send().await.unwrap();
            assert_eq!(resp.status(), 400);
            let body: Value = resp.json().await.unwrap();
            body["error"]["details"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["field"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    let target = json!({"model": "openai/gpt-4o-mini"});
    let priority =
        json!({"name": "p", "strategy": "priority", "targets": [target], "config": {"judgeModel": "openai/gpt-4o"}});
    assert_eq!(refused(priority).await, ["config.judgeModel"]);
    let prompt = json!({"name": "p", "strategy": "weighted", "targets": [{"model": "openai/gpt-4o", "prompt": "x"}]});
    assert_eq!(refused(prompt).await, ["targets.0.prompt"]);
    let nests_panel = json!({"name": "p", "strategy": "priority", "targets": [{"model": "panel"}]});
    assert_eq!(refused(nests_panel).await, ["targets.0.model"], "a fusion combo is never flattened into a list");
    let own_judge =
        json!({"name": "self", "strategy": "fusion", "targets": [target], "config": {"judgeModel": "self"}});
    assert_eq!(refused(own_judge).await, ["config.judgeModel"]);
    let unknown_judge =
        json!({"name": "j", "strategy": "fusion", "targets": [target], "config": {"judgeModel": "nope/model"}});
    assert_eq!(refused(unknown_judge).await, ["config.judgeModel"]);
    assert_eq!(gw.get_json("/api/combos").await["combos"].as_array().unwrap().len(), 1, "nothing saved");
}
