//! Status restatement (SPEC §R7 stage 1): some upstreams report a quota
//! problem under the wrong status. A rule rewrites the status *before*
//! anything classifies it, so every consumer sees the corrected one.
//! `excludeMarkers` veto a rule so a permanent error is never restated.

/// One restatement rule.
pub struct RestatementRule {
    pub id: &'static str,
    pub provider: &'static str,
    pub from_statuses: &'static [u16],
    pub to_status: u16,
    /// Any of these (case-insensitive) in the error text triggers the rule…
    pub text_markers: &'static [&'static str],
    /// …unless any of these is there too.
    pub exclude_markers: &'static [&'static str],
    /// `Retry-After` for the client when the upstream gave none.
    pub default_retry_after_ms: u64,
}

/// The built-in registry.
pub const RULES: [RestatementRule; 1] = [RestatementRule {
    id: "agentrouter-quota-misstatus",
    provider: "agentrouter",
    from_statuses: &[403, 400],
    to_status: 429,
    text_markers: &["额度不足"],
    exclude_markers: &["无权访问"],
    default_retry_after_ms: 60_000,
}];

/// The status every later stage sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restated {
    pub status: u16,
    pub retry_after_ms: Option<u64>,
    /// The rule that fired, if any.
    pub rule_id: Option<&'static str>,
}

/// Applies the first matching rule to a non-OK upstream response.
pub fn restate(provider: &str, status: u16, text: &str, retry_after_ms: Option<u64>) -> Restated {
    let haystack = text.to_lowercase();
    let rule = RULES.iter().find(|r| {
        r.provider.eq_ignore_ascii_case(provider)
            && r.from_statuses.contains(&status)
            && r.text_markers.iter().any(|m| haystack.contains(&m.to_lowercase()))
            && !r.exclude_markers.iter().any(|m| haystack.contains(&m.to_lowercase()))
    });
    match rule {
        None => Restated { status, retry_after_ms, rule_id: None },
        Some(r) => Restated {
            status: r.to_status,
            retry_after_ms: retry_after_ms.filter(|ms| *ms > 0).or(Some(r.default_retry_after_ms)),
            rule_id: Some(r.id),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference §5 item 46.
    #[test]
    fn agentrouter_quota_misstatus() {
        let r = restate("agentrouter", 403, "用户额度不足", None);
        assert_eq!(
            r,
            Restated { status: 429, retry_after_ms: Some(60_000), rule_id: Some("agentrouter-quota-misstatus") }
        );
        assert_eq!(restate("agentrouter", 403, "无权访问模型 claude-x, 额度不足", None).status, 403);
        let body_only = r#"{"error":{"message":"upstream error","detail":"用户额度不足"}}"#;
        assert_eq!(restate("agentrouter", 403, body_only, None).status, 429);
        assert_eq!(restate("agentrouter", 403, "用户额度不足", Some(5_000)).retry_after_ms, Some(5_000));
        assert_eq!(restate("agentrouter", 400, "额度不足", None).status, 429);
        assert_eq!(restate("agentrouter", 403, "Invalid API key", None).status, 403);
        assert_eq!(restate("openai", 403, "用户额度不足", None).status, 403);
        let untouched = restate("agentrouter", 429, "用户额度不足", Some(7_000));
        assert_eq!(untouched, Restated { status: 429, retry_after_ms: Some(7_000), rule_id: None });
    }
}
