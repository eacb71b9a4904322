//! Reference §5 item 47, operator rules, and the 400 gap closed.

use super::*;
use http::HeaderValue;

fn rule(provider: &str, status: u64, m: &str, scope: RuleScope) -> ProviderErrorRule {
    ProviderErrorRule {
        provider: provider.into(),
        status,
        match_text: m.into(),
        scope,
        reason: None,
        cooldown_ms: None,
    }
}

#[test]
fn agentrouter_rules() {
    let h = HeaderMap::new();
    let quota = find("agentrouter", 429, &h, "用户额度不足", &[]).unwrap();
    assert_eq!(
        (quota.reason, quota.scope, quota.id.as_str()),
        (ErrorReason::QuotaExhausted, RuleScope::Connection, "agentrouter-user-quota-exhausted")
    );
    let denied = find("agentrouter", 403, &h, "无权访问模型 claude-opus", &[]).unwrap();
    assert_eq!(
        (denied.reason, denied.scope, denied.cooldown_ms),
        (ErrorReason::AuthError, RuleScope::Model, Some(21_600_000))
    );
    assert!(denied.honored_scope);
}

#[test]
fn which_providers_honour_rule_scopes() {
    for p in ["agentrouter", "AgentRouter", "opencode-zen", "opencode-go", "opencode-cli"] {
        assert!(honors_scope(p, &[]), "{p}");
    }
    for p in ["opencode", "openrouter", ""] {
        assert!(!honors_scope(p, &[]), "{p}");
    }
    assert!(honors_scope("glm", &[rule("glm", 400, "x", RuleScope::Model)]), "an operator rule opts a provider in");
}

#[test]
fn built_in_rules_see_only_code_and_type_outside_the_full_text_list() {
    let h = HeaderMap::new();
    let text = r#"{"error":{"message":"plan_limit_reached for this org","code":"rate_limited"}}"#;
    assert_eq!(find("opencode-go", 429, &h, text, &[]), None, "the marker is only in the message");
    let coded = r#"{"error":{"message":"limit","code":"plan_limit_reached"}}"#;
    assert_eq!(find("opencode-go", 429, &h, coded, &[]).unwrap().id, "opencode-account-quota");
    let mut h = HeaderMap::new();
    h.insert("x-ratelimit-remaining-requests", HeaderValue::from_static("0"));
    assert_eq!(find("opencode-cli", 429, &h, "", &[]).unwrap().id, "opencode-remaining-zero");
    h.insert("x-ratelimit-remaining-requests", HeaderValue::from_static("10"));
    assert_eq!(find("opencode-cli", 429, &h, "", &[]), None);
    let mut h = HeaderMap::new();
    h.insert("x-model-quota-remaining", HeaderValue::from_static("abab6.5s=0"));
    assert_eq!(find("minimax", 429, &h, "", &[]).unwrap().scope, RuleScope::Model);
    assert_eq!(find("openrouter", 402, &HeaderMap::new(), "", &[]).unwrap().cooldown_ms, Some(120_000));
}

#[test]
fn operator_rules_come_first_see_full_text_and_work_for_400() {
    let h = HeaderMap::new();
    let rules = [ProviderErrorRule {
        reason: Some(ErrorReason::ServerError),
        cooldown_ms: Some(60_000),
        ..rule("glm", 400, "Model Is Unavailable", RuleScope::Model)
    }];
    let m = find("glm", 400, &h, r#"{"error":{"message":"the model is unavailable right now"}}"#, &rules).unwrap();
    assert_eq!(
        (m.id.as_str(), m.reason, m.scope, m.cooldown_ms),
        ("operator-0", ErrorReason::ServerError, RuleScope::Model, Some(60_000))
    );
    assert!(m.honored_scope);
    assert_eq!(find("glm", 429, &h, "model is unavailable", &rules), None, "the status must match");
    assert_eq!(find("openai", 400, &h, "model is unavailable", &rules), None, "the provider must match");
    // Without a reason the status decides; it also beats a built-in rule.
    let over = [rule("agentrouter", 429, "额度", RuleScope::Provider)];
    let m = find("agentrouter", 429, &h, "用户额度不足", &over).unwrap();
    assert_eq!((m.id.as_str(), m.reason, m.scope), ("operator-0", ErrorReason::RateLimited, RuleScope::Provider));
}
