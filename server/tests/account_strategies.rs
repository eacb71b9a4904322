//! The strategies that read what the gateway knows of models and accounts
//! (SPEC §R8), on real sockets: `cost-optimized` and `context-optimized`
//! by the model facts, and the per-account strategies by the rate-limit
//! headers the upstream sent — each target spread over its provider's
//! connections.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, chat_keys, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::json;
use std::collections::BTreeMap;

async fn combo(gw: &Gateway, strategy: &str, models: &[&str]) {
    let targets: Vec<_> = models.iter().map(|m| json!({"model": m})).collect();
    let body = json!({"name": "pick", "strategy": strategy, "targets": targets});
    let resp = gw.api(Method::POST, "/api/combos").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
}

async fn send(gw: &Gateway, n: usize) {
    for _ in 0..n {
        let resp = gw.chat(chat_body("pick", false), None).await;
        assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    }
}

#[tokio::test]
async fn cost_and_context_optimized_lead_by_the_model_facts() {
    let (fake, gw) = Gateway::with_fake().await;
    gw.add_connection("openai", "o", "sk-o", &v1(&fake), 0).await;
    gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    // gpt-4o costs 2.50 $/M input, deepseek-chat 0.28: the cheaper leads.
    combo(&gw, "cost-optimized", &["openai/gpt-4o", "deepseek/deepseek-chat"]).await;
    send(&gw, 2).await;
    assert_eq!(chat_keys(&fake), ["sk-d", "sk-d"]);
    // gpt-4.1 has a 1M-token window, deepseek-chat 128k: the larger leads.
    let body = json!({"name": "pick", "strategy": "context-optimized", "targets": [{"model": "deepseek/deepseek-chat"}, {"model": "openai/gpt-4.1"}]});
    let resp = gw.api(Method::PUT, "/api/combos/pick").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    send(&gw, 1).await;
    assert_eq!(chat_keys(&fake)[2], "sk-o");
}

/// OpenAI's rate-limit headers: `remaining` of 100 requests, reset after `reset`.
fn limit_headers(remaining: u32, reset: &str) -> BTreeMap<String, String> {
    [
        ("x-ratelimit-limit-requests", "100".to_owned()),
        ("x-ratelimit-remaining-requests", remaining.to_string()),
        ("x-ratelimit-reset-requests", reset.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Two accounts of one provider on the fake, answering with these
/// rate-limit headers: `(remaining of 100 requests, reset)`.
async fn two_accounts(strategy: &str, a: (u32, &str), b: (u32, &str)) -> (FakeUpstream, Gateway) {
    let (fake, gw) = Gateway::with_fake().await;
    for (key, (remaining, reset)) in [("sk-a", a), ("sk-b", b)] {
        gw.add_connection("openai", key, key, &v1(&fake), 0).await;
        let headers = limit_headers(remaining, reset);
        fake.push_rule(Rule { api_key: Some(key.into()), headers, ..Rule::default() });
    }
    combo(&gw, strategy, &["openai/gpt-4o-mini"]).await;
    (fake, gw)
}

#[tokio::test]
async fn headroom_moves_to_the_account_furthest_from_its_limit_once_it_has_seen_both() {
    let (fake, gw) = two_accounts("headroom", (50, "1m"), (90, "1m")).await;
    send(&gw, 4).await;
    // Both unknown: as listed. Then the unseen account (counted untouched),
    // then the one with 90 % left, every time.
    assert_eq!(chat_keys(&fake), ["sk-a", "sk-b", "sk-b", "sk-b"]);
    // The Combos page names the account that served by its name, not its id.
    let status = server::services::combos::status(&gw.state);
    assert_eq!(status.combos[0].last_served.as_deref(), Some("openai/gpt-4o-mini @ sk-b"));
}

#[tokio::test]
async fn reset_window_leads_with_the_account_whose_window_resets_soonest() {
    let (fake, gw) = two_accounts("reset-window", (90, "50m"), (10, "5s")).await;
    gw.without_cooldowns().await;
    // The first answer of sk-a fails (with its headers): sk-b serves, and
    // from then on both resets are known.
    let headers = limit_headers(90, "50m");
    fake.push_rule(Rule {
        api_key: Some("sk-a".into()),
        status: Some(500),
        times: Some(1),
        headers,
        ..Rule::default()
    });
    send(&gw, 3).await;
    assert_eq!(chat_keys(&fake), ["sk-a", "sk-b", "sk-b", "sk-b"]);
}

#[tokio::test]
async fn cache_optimized_keeps_each_conversation_on_its_own_account() {
    let (fake, gw) = Gateway::with_fake().await;
    for key in ["sk-a", "sk-b", "sk-c"] {
        gw.add_connection("openai", key, key, &v1(&fake), 0).await;
    }
    combo(&gw, "cache-optimized", &["openai/gpt-4o-mini"]).await;
    let mut accounts = std::collections::HashSet::new();
    for conversation in 0..12 {
        let first = format!("conversation {conversation}");
        for turn in 0..3 {
            let resp = gw.chat(common::new_conversation("pick", &first), None).await;
            assert_eq!(resp.status(), 200, "turn {turn}");
        }
        let keys = chat_keys(&fake);
        let turns = &keys[keys.len() - 3..];
        assert!(turns.iter().all(|k| *k == turns[0]), "{first}: {turns:?}");
        accounts.insert(turns[0].clone());
    }
    assert!(accounts.len() >= 2, "conversations spread over the accounts: {accounts:?}");
}
