//! The resilience engine through the real server (SPEC §R1–§R3, §R7):
//! cooldowns steer traffic away from a failing key, the provider breaker
//! opens and recovers on a driven clock, terminal states answer 401,
//! model lockouts answer `model_cooldown`, operator rules work for 400,
//! restatement hides a mis-stated quota error, settings changes apply to
//! the next request.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, new_conversation, v1};
use fake_upstream::{FakeUpstream, Rule};
use reqwest::Method;
use serde_json::{Value, json};

/// Upstream calls made with this API key.
fn calls_with(fake: &FakeUpstream, key: &str) -> usize {
    let bearer = format!("Bearer {key}");
    fake.requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/chat") && r.headers.get("authorization") == Some(&bearer))
        .count()
}

async fn start() -> (FakeUpstream, Gateway, std::sync::Arc<server::resilience::clock::ManualClock>) {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    (fake, gw, clock)
}

async fn patch(gw: &Gateway, body: Value) {
    let resp = gw.api(Method::PATCH, "/api/resilience").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

fn rule(key: &str, status: u16, body: Value) -> Rule {
    Rule { api_key: Some(key.into()), status: Some(status), body: Some(body), ..Default::default() }
}

#[tokio::test]
async fn a_rate_limited_key_cools_and_traffic_moves_to_the_next_until_it_recovers() {
    let (fake, gw, clock) = start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(Rule { times: Some(1), ..rule("sk-a", 429, json!({"error": {"message": "slow down"}})) });

    let first = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(first.headers()["x-omniroute-selected-connection-id"], b.as_str());
    let health = gw.state.engine.health(&a);
    assert_eq!((health.backoff_level, health.error_code.as_deref()), (1, Some("429")));
    // a cools for the API-key ladder's first rung (3 s): no call reaches it.
    let second = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(second.headers()["x-omniroute-selected-connection-id"], b.as_str());
    assert_eq!(calls_with(&fake, "sk-a"), 1);
    clock.advance(3_000);
    // The first conversation stays pinned to b (§R2.2); a new one goes to a.
    let third = gw.chat(new_conversation("openai/gpt-4o-mini", "Another task"), None).await;
    assert_eq!(third.headers()["x-omniroute-selected-connection-id"], a.as_str(), "back after its cooldown");
    assert_eq!(gw.state.engine.health(&a), Default::default(), "a success clears every error field");
    gw.stop().await;
}

#[tokio::test]
async fn the_provider_breaker_opens_answers_503_and_closes_after_a_good_probe() {
    let (fake, gw, clock) = start().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    patch(&gw, json!({"providerBreaker": {"apikey": {"failureThreshold": 2, "degradationThreshold": 1, "resetTimeoutMs": 10_000}}})).await;
    fake.push_rule(rule("sk-a", 503, json!({"error": {"message": "overloaded"}})));
    for _ in 0..2 {
        assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 503);
    }
    let calls = calls_with(&fake, "sk-a");
    let open = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(open.status(), 503);
    assert_eq!(open.headers()["x-omniroute-provider-breaker"], "open");
    assert_eq!(open.headers()["retry-after"], "10");
    let body: Value = open.json().await.unwrap();
    assert_eq!(body["error"]["code"], "provider_circuit_open");
    assert_eq!(body["error"]["provider"], "openai");
    assert_eq!(body["error"]["message"], "Provider openai circuit breaker is open");
    assert_eq!(calls_with(&fake, "sk-a"), calls, "no upstream call while open");

    clock.advance(10_000);
    fake.clear_rules();
    let probe = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(probe.status(), 200, "the half-open probe goes through");
    assert!(
        gw.state.engine.breakers(&gw.state.resilience.current(), server::upstream::catalog::category_of).is_empty(),
        "closed again"
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_400_or_429_never_opens_the_breaker() {
    let (fake, gw, _clock) = start().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.without_cooldowns().await;
    patch(&gw, json!({"providerBreaker": {"apikey": {"failureThreshold": 1, "degradationThreshold": null}}})).await;
    fake.push_rule(rule("sk-a", 429, json!({"error": {"message": "slow down"}})));
    for _ in 0..3 {
        assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);
    }
    assert!(
        gw.state.engine.breakers(&gw.state.resilience.current(), server::upstream::catalog::category_of).is_empty()
    );
    gw.stop().await;
}

#[tokio::test]
async fn credits_exhaustion_is_terminal_and_answers_401_until_reset() {
    let (fake, gw, clock) = start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    fake.push_rule(rule("sk-a", 402, json!({"error": {"message": "Your credit balance is too low"}})));
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 402);
    clock.advance(86_400_000);
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "[openai] All 1 connection(s) credits exhausted — please reconnect in the dashboard"
    );
    assert_eq!(calls_with(&fake, "sk-a"), 1);
    assert!(!gw.state.engine.clear_connection(&a, false), "a transient clear keeps a terminal state");
    assert!(gw.state.engine.clear_connection(&a, true));
    fake.clear_rules();
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200);
    gw.stop().await;
}

/// One connection `a`, model lockout on for 60 s (no waiting: the answer
/// says when to come back), and a 404 for `gpt-4o` (`times` times, or
/// always) that locks it.
async fn lock_gpt_4o(fake: &FakeUpstream, gw: &Gateway, times: Option<u32>) {
    gw.add_connection("openai", "a", "sk-a", &v1(fake), 0).await;
    patch(
        gw,
        json!({"modelLockout": {"enabled": true, "baseCooldownMs": 60_000}, "waitForCooldown": {"enabled": false}}),
    )
    .await;
    fake.push_rule(Rule {
        model: Some("gpt-4o".into()),
        times,
        ..rule("sk-a", 404, json!({"error": {"message": "The model does not exist"}}))
    });
    assert_eq!(gw.chat(chat_body("openai/gpt-4o", false), None).await.status(), 404);
}

#[tokio::test]
async fn a_locked_model_answers_model_cooldown_while_other_models_serve() {
    let (fake, gw, clock) = start().await;
    lock_gpt_4o(&fake, &gw, None).await;
    let locked = gw.chat(chat_body("openai/gpt-4o", false), None).await;
    assert_eq!(locked.status(), 429);
    assert_eq!(locked.headers()["retry-after"], "60");
    let body: Value = locked.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_cooldown");
    assert_eq!((body["error"]["model"].as_str(), body["error"]["reset_seconds"].as_u64()), (Some("gpt-4o"), Some(60)));
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 200, "other models serve");
    clock.advance(60_000);
    fake.clear_rules();
    assert_eq!(gw.chat(chat_body("openai/gpt-4o", false), None).await.status(), 200, "the lock expires");
    gw.stop().await;
}

#[tokio::test]
async fn a_single_instance_loses_its_model_lockouts_on_restart() {
    let (fake, gw, _clock) = start().await;
    lock_gpt_4o(&fake, &gw, Some(1)).await;
    assert_eq!(gw.chat(chat_body("openai/gpt-4o", false), None).await.status(), 429, "locked");
    let dir = gw.stop().await;
    // The same wall time (the manual clock starts where it did): only the restart lifts it (SPEC §R3).
    let (gw, _clock) = Gateway::start_with_clock(dir).await;
    assert_eq!(gw.chat(chat_body("openai/gpt-4o", false), None).await.status(), 200);
    gw.stop().await;
}

#[tokio::test]
async fn an_operator_rule_for_status_400_fails_over_and_cools() {
    let (fake, gw, _clock) = start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(rule("sk-a", 400, json!({"error": {"message": "upstream: model is unavailable"}})));
    // Without a rule a 400 is the client's fault and passes through.
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 400);
    let rule = json!({"provider": "openai", "status": 400, "match": "model is unavailable", "scope": "connection", "reason": "server_error", "cooldownMs": 60_000});
    patch(&gw, json!({"providerErrorRules": [rule]})).await;
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    assert_eq!(gw.state.engine.health(&a).last_error_type.as_deref(), Some("server_error"));
    assert_eq!(gw.state.engine.health(&a).remaining_ms(gw.state.engine.now()), 60_000);
    gw.stop().await;
}

#[tokio::test]
async fn an_operator_rule_with_provider_scope_cools_every_connection_of_the_provider() {
    let (fake, gw, clock) = start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    let other = gw.add_connection("groq", "g", "sk-g", &v1(&fake), 0).await;
    let org_wide = json!({"provider": "openai", "status": 429, "match": "organization limit", "scope": "provider", "reason": "quota_exhausted", "cooldownMs": 60_000});
    patch(&gw, json!({"providerErrorRules": [org_wide]})).await;
    fake.push_rule(Rule {
        times: Some(1),
        ..rule("sk-a", 429, json!({"error": {"message": "You hit your organization limit"}}))
    });

    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 429, "b shares the organization's limit: not tried");
    assert_eq!(calls_with(&fake, "sk-b"), 0);
    let now = gw.state.engine.now();
    let (ha, hb) = (gw.state.engine.health(&a), gw.state.engine.health(&b));
    assert_eq!(ha.remaining_ms(now), 60_000);
    assert_eq!(hb.rate_limited_until, ha.rate_limited_until, "the sibling cools as long as the failing one");
    assert_eq!((hb.backoff_level, hb.error_code.as_deref()), (0, Some("429")));
    assert!(hb.last_error.as_deref().is_some_and(|e| e.contains("provider-wide rule")), "{hb:?}");
    assert_eq!(gw.state.engine.health(&other), Default::default(), "another provider is left alone");

    clock.advance(60_000);
    let resp = gw.chat(new_conversation("openai/gpt-4o-mini", "Later"), None).await;
    assert_eq!(resp.status(), 200, "served once the cooldown ends");
    gw.stop().await;
}

#[tokio::test]
async fn a_misstated_agentrouter_quota_error_is_restated_and_routed_around() {
    let (fake, gw, _clock) = start().await;
    let a = gw.add_connection("agentrouter", "a", "sk-a", &v1(&fake), 0).await;
    let b = gw.add_connection("agentrouter", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(rule("sk-a", 403, json!({"error": {"message": "用户额度不足"}})));
    let resp = gw.chat(chat_body("agentrouter/claude-sonnet-4", false), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-omniroute-selected-connection-id"], b.as_str());
    let logs = gw.logs().await;
    let failed = logs.iter().find(|r| r["connectionId"] == a.as_str()).unwrap();
    assert_eq!((failed["status"].as_i64(), failed["errorKind"].as_str()), (Some(429), Some("quota_exhausted")));
    let h = gw.state.engine.health(&a);
    assert!(h.terminal.is_none() && h.remaining_ms(gw.state.engine.now()) > 0, "cooled, never terminal");
    gw.stop().await;
}

#[tokio::test]
async fn a_settings_change_applies_to_the_next_request() {
    let (fake, gw, _clock) = start().await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    gw.add_connection("openai", "b", "sk-b", &v1(&fake), 1).await;
    fake.push_rule(rule("sk-a", 503, json!({"error": {"message": "down"}})));
    gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert!(gw.state.engine.health(&a).remaining_ms(gw.state.engine.now()) > 0, "default: the failure cools a");
    gw.state.engine.clear_connection(&a, false);
    gw.without_cooldowns().await;
    gw.chat(new_conversation("openai/gpt-4o-mini", "Another task"), None).await;
    assert_eq!(gw.state.engine.health(&a).remaining_ms(gw.state.engine.now()), 0, "base 0 now: no cooldown");
    assert_eq!(calls_with(&fake, "sk-a"), 2);
    gw.stop().await;
}

#[tokio::test]
async fn an_open_breaker_a_cooldown_and_a_terminal_state_survive_a_restart() {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, _clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    let a = gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let d = gw.add_connection("deepseek", "d", "sk-d", &v1(&fake), 0).await;
    patch(&gw, json!({"providerBreaker": {"apikey": {"failureThreshold": 1, "degradationThreshold": null}}})).await;
    fake.push_rule(rule("sk-a", 503, json!({"error": {"message": "down"}})));
    fake.push_rule(rule("sk-d", 402, json!({"error": {"message": "payment required"}})));
    gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    gw.chat(chat_body("deepseek/deepseek-chat", false), None).await;
    let cooling_until = gw.state.engine.health(&a).rate_limited_until;
    assert!(cooling_until.is_some());

    let (gw, _clock) = Gateway::start_with_clock(gw.stop().await).await;
    let calls = fake.count("/v1/chat");
    let open = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(open.status(), 503);
    assert_eq!(open.headers()["x-omniroute-provider-breaker"], "open");
    assert_eq!(gw.state.engine.health(&a).rate_limited_until, cooling_until);
    assert_eq!(gw.chat(chat_body("deepseek/deepseek-chat", false), None).await.status(), 401);
    assert_eq!(fake.count("/v1/chat"), calls, "nothing reached the upstream after the restart");
    let view = gw.get_json(&format!("/api/providers/{d}")).await;
    assert_eq!(view["connection"]["terminalStatus"], "credits_exhausted");
    assert_eq!(view["connection"]["status"], "terminal");
    gw.stop().await;
}

#[tokio::test]
async fn when_every_connection_is_cooling_the_request_waits_for_the_first() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    let limited = |secs: &str| Rule {
        times: Some(1),
        headers: [("retry-after".to_owned(), secs.to_owned())].into(),
        ..rule("sk-a", 429, json!({"error": {"message": "slow down"}}))
    };
    fake.push_rule(limited("1"));
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);
    let cooled_until =
        gw.state.engine.health(&gw.state.routing.connections.snapshot().candidates("openai")[0].id).rate_limited_until;
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 200, "waited for the 1 s cooldown, then served");
    assert!(gw.state.engine.now() >= cooled_until.unwrap(), "not before the cooldown ended");
    assert_eq!(fake.count("/v1/chat"), 2, "one call before the wait, one after");

    // A cooldown longer than one allowed wait (90 s) is answered at once.
    fake.push_rule(limited("120"));
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);
    let started = tokio::time::Instant::now();
    let resp = gw.chat(chat_body("openai/gpt-4o-mini", false), None).await;
    assert_eq!(resp.status(), 429);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "no wait");
    assert_eq!(resp.headers()["retry-after"], "120");
    gw.stop().await;
}

#[tokio::test]
async fn a_quota_429_cools_the_siblings_that_share_its_egress_ip_even_after_a_restart() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    // Everything leaves through 127.0.0.1 here: one egress bucket.
    let go2 = gw.add_connection("opencode-go", "go-2", "sk-go2", &v1(&fake), 1).await;
    let cli = gw.add_connection("opencode-cli", "cli", "sk-cli", &v1(&fake), 0).await;
    let openai = gw.add_connection("openai", "plain", "sk-openai", &v1(&fake), 0).await;
    for model in ["opencode-go/m", "opencode-cli/m", "openai/gpt-4o-mini"] {
        assert_eq!(gw.chat(chat_body(model, false), None).await.status(), 200);
    }
    let logs = gw.logs().await;
    assert!(logs.iter().all(|r| r["egressIp"] == "127.0.0.1"), "every attempt logs its egress IP: {logs:?}");

    // The process restarts: the egress IPs come back from proxy_logs.
    let go1 = gw.add_connection("opencode-go", "go-1", "sk-go1", &v1(&fake), 0).await;
    let gw = Gateway::start_in(gw.stop().await).await;
    fake.push_rule(rule("sk-go1", 429, json!({"error": {"message": "You have reached your daily quota"}})));
    let resp = gw.chat(chat_body("opencode-go/m", false), None).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(calls_with(&fake, "sk-go2"), 1, "go-2 shares the exhausted bucket: not tried after go-1's 429");

    let now = gw.state.engine.now();
    let until = |id: &str| gw.state.engine.health(id).rate_limited_until;
    assert!(until(&go1).is_some_and(|u| u > now));
    assert_eq!(until(&go2), until(&go1), "the sibling cools as long as the failing connection");
    assert_eq!(until(&cli), until(&go1), "across allow-listed providers");
    assert_eq!(until(&openai), None, "a provider outside the list is left alone");
    let sibling = gw.state.engine.health(&go2);
    assert_eq!((sibling.backoff_level, sibling.terminal), (0, None), "never escalated, never terminal");
    assert_eq!(gw.chat(chat_body("opencode-cli/m", false), None).await.status(), 429);
    assert_eq!(calls_with(&fake, "sk-cli"), 1, "the cooled sibling is skipped");
    gw.stop().await;
}

#[tokio::test]
async fn a_client_that_leaves_during_a_cooldown_wait_is_logged_as_499() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    gw.add_connection("openai", "a", "sk-a", &v1(&fake), 0).await;
    fake.push_rule(Rule {
        times: Some(1),
        headers: [("retry-after".to_owned(), "30".to_owned())].into(),
        ..rule("sk-a", 429, json!({"error": {"message": "slow down"}}))
    });
    assert_eq!(gw.chat(chat_body("openai/gpt-4o-mini", false), None).await.status(), 429);

    // The next request waits up to 30 s for the cooldown; the client gives up first.
    let impatient = reqwest::Client::builder().timeout(std::time::Duration::from_millis(300)).build().unwrap();
    let gone = impatient
        .post(format!("{}/v1/chat/completions", gw.url))
        .json(&chat_body("openai/gpt-4o-mini", false))
        .send()
        .await;
    assert!(gone.is_err_and(|e| e.is_timeout()));

    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let row = loop {
        let logs = gw.logs().await;
        if let Some(row) = logs.into_iter().find(|r| r["status"] == 499) {
            break row;
        }
        assert!(tokio::time::Instant::now() < deadline, "no 499 row was written");
        tokio::task::yield_now().await;
    };
    assert_eq!(row["errorKind"], "client_disconnected");
    assert_eq!(row["provider"], "openai");
    assert_eq!(row["connectionId"], Value::Null, "no connection was tried");
    assert_eq!(fake.count("/v1/chat"), 1, "the cooling connection was never called again");
    gw.stop().await;
}
