//! Provider error rules (SPEC §R7): per-provider knowledge of what an
//! upstream error means — "this text is a monthly quota", "this header
//! says the model's quota is gone". Operator rules (`providerErrorRules`)
//! are checked first and see the full error text; built-in rules see the
//! full text only for `FULL_TEXT_RULE_PROVIDERS`, otherwise just the
//! structured `{code, type}` of the error. Any status may match, 400
//! included (the original's 400 branch returned before rules ran).

use app::types::settings::{ErrorReason, ProviderErrorRule, RuleScope};
use http::HeaderMap;

/// Providers whose built-in rules see the whole error text.
pub const FULL_TEXT_RULE_PROVIDERS: [&str; 1] = ["agentrouter"];
/// Providers whose rule `scope` is honoured end to end (elsewhere the
/// scope is informative and the connection cooldown applies).
pub const HONORS_RULE_LOCK_SCOPE_PROVIDERS: [&str; 4] = ["agentrouter", "opencode-zen", "opencode-go", "opencode-cli"];

/// The rule that decided a verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleMatch {
    pub id: String,
    pub reason: ErrorReason,
    pub scope: RuleScope,
    /// Fixed cooldown; the ladder (or hint) when absent.
    pub cooldown_ms: Option<u64>,
    /// Take the cooldown from the upstream's reset hint when there is one.
    pub parse_hint: bool,
    /// Whether `scope` is honoured for this provider.
    pub honored_scope: bool,
}

/// What a built-in rule looks for.
enum Signal {
    /// Every marker appears in the visible text.
    Text(&'static [&'static str]),
    /// Any marker appears in the visible text.
    AnyText(&'static [&'static str]),
    /// One of these headers holds exactly this value.
    HeaderIs(&'static [&'static str], &'static str),
    /// One of these headers holds a value containing this.
    HeaderContains(&'static [&'static str], &'static str),
    /// Only the status.
    Status,
}

struct BuiltinRule {
    id: &'static str,
    providers: &'static [&'static str],
    /// Empty = any status.
    statuses: &'static [u16],
    signal: Signal,
    reason: ErrorReason,
    scope: RuleScope,
    cooldown_ms: Option<u64>,
    parse_hint: bool,
}

const OPENCODE: &[&str] = &["opencode-zen", "opencode-go", "opencode-cli"];

const BUILTIN: [BuiltinRule; 10] = [
    BuiltinRule {
        id: "opencode-endpoint-unavailable",
        providers: OPENCODE,
        statuses: &[400, 429],
        signal: Signal::Text(&["endpoint is unavailable"]),
        reason: ErrorReason::ServerError,
        scope: RuleScope::Model,
        cooldown_ms: Some(300_000),
        parse_hint: false,
    },
    BuiltinRule {
        id: "opencode-monthly-limit",
        providers: OPENCODE,
        statuses: &[],
        signal: Signal::Text(&["monthly usage limit reached"]),
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Connection,
        cooldown_ms: None,
        parse_hint: true,
    },
    BuiltinRule {
        id: "opencode-remaining-zero",
        providers: OPENCODE,
        statuses: &[],
        signal: Signal::HeaderIs(&["x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens"], "0"),
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Connection,
        cooldown_ms: None,
        parse_hint: true,
    },
    BuiltinRule {
        id: "opencode-account-quota",
        providers: OPENCODE,
        statuses: &[],
        signal: Signal::AnyText(&["organization_quota_exceeded", "account_quota_exceeded", "plan_limit_reached"]),
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Connection,
        cooldown_ms: None,
        parse_hint: true,
    },
    BuiltinRule {
        id: "opencode-model-unavailable",
        providers: OPENCODE,
        statuses: &[400],
        signal: Signal::Text(&["upstream request failed: model is unavailable."]),
        reason: ErrorReason::ServerError,
        scope: RuleScope::Model,
        cooldown_ms: Some(3_600_000),
        parse_hint: false,
    },
    BuiltinRule {
        id: "minimax-model-quota",
        providers: &["minimax"],
        statuses: &[],
        signal: Signal::HeaderContains(&["x-model-quota-remaining"], "=0"),
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Model,
        cooldown_ms: None,
        parse_hint: true,
    },
    BuiltinRule {
        id: "cloudflare-daily-allocation",
        providers: &["cloudflare-ai"],
        statuses: &[],
        signal: Signal::Text(&["daily free allocation"]),
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Connection,
        cooldown_ms: None,
        parse_hint: true,
    },
    BuiltinRule {
        id: "openrouter-payment-required",
        providers: &["openrouter"],
        statuses: &[402],
        signal: Signal::Status,
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Connection,
        cooldown_ms: Some(120_000),
        parse_hint: false,
    },
    BuiltinRule {
        id: "agentrouter-user-quota-exhausted",
        providers: &["agentrouter"],
        statuses: &[400, 403, 429],
        signal: Signal::Text(&["额度不足"]),
        reason: ErrorReason::QuotaExhausted,
        scope: RuleScope::Connection,
        cooldown_ms: None,
        parse_hint: true,
    },
    BuiltinRule {
        id: "agentrouter-model-access-denied",
        providers: &["agentrouter"],
        statuses: &[403],
        signal: Signal::Text(&["无权访问模型"]),
        reason: ErrorReason::AuthError,
        scope: RuleScope::Model,
        cooldown_ms: Some(21_600_000),
        parse_hint: false,
    },
];

fn is_in(list: &[&str], provider: &str) -> bool {
    list.iter().any(|p| p.eq_ignore_ascii_case(provider))
}

/// Whether a rule's scope is honoured for `provider`: built-in allow-list,
/// or any provider an operator wrote a rule for.
pub fn honors_scope(provider: &str, operator: &[ProviderErrorRule]) -> bool {
    is_in(&HONORS_RULE_LOCK_SCOPE_PROVIDERS, provider)
        || operator.iter().any(|r| r.provider.eq_ignore_ascii_case(provider))
}

/// The structured part of an error body: its `code` and `type`.
fn structured(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else { return String::new() };
    let error = v.get("error").unwrap_or(&v);
    ["code", "type"]
        .iter()
        .filter_map(|k| error.get(*k))
        .map(|c| c.as_str().map(str::to_owned).unwrap_or_else(|| c.to_string()))
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The reason an operator rule without one gets, from its status.
fn reason_for_status(status: u16) -> ErrorReason {
    match status {
        429 => ErrorReason::RateLimited,
        401 => ErrorReason::AuthError,
        402 => ErrorReason::QuotaExhausted,
        403 => ErrorReason::Forbidden,
        404 => ErrorReason::NotFound,
        408 => ErrorReason::Timeout,
        s if s >= 500 => ErrorReason::ServerError,
        _ => ErrorReason::BadRequest,
    }
}

/// The first rule matching this upstream error, operator rules first.
pub fn find(
    provider: &str,
    status: u16,
    headers: &HeaderMap,
    body: &str,
    operator: &[ProviderErrorRule],
) -> Option<RuleMatch> {
    let full = body.to_lowercase();
    let honored = honors_scope(provider, operator);
    let op = operator.iter().enumerate().find(|(_, r)| {
        r.provider.eq_ignore_ascii_case(provider)
            && u64::from(status) == r.status
            && full.contains(&r.match_text.trim().to_lowercase())
    });
    if let Some((i, r)) = op {
        return Some(RuleMatch {
            id: format!("operator-{i}"),
            reason: r.reason.unwrap_or(reason_for_status(status)),
            scope: r.scope,
            cooldown_ms: r.cooldown_ms,
            parse_hint: r.cooldown_ms.is_none(),
            honored_scope: true,
        });
    }
    let visible = if is_in(&FULL_TEXT_RULE_PROVIDERS, provider) { full } else { structured(body) };
    let header = |names: &[&str], test: &dyn Fn(&str) -> bool| {
        names.iter().any(|n| headers.get(*n).and_then(|v| v.to_str().ok()).is_some_and(|v| test(v.trim())))
    };
    BUILTIN
        .iter()
        .filter(|r| is_in(r.providers, provider) && (r.statuses.is_empty() || r.statuses.contains(&status)))
        .find(|r| match r.signal {
            Signal::Text(markers) => markers.iter().all(|m| visible.contains(m)),
            Signal::AnyText(markers) => markers.iter().any(|m| visible.contains(m)),
            Signal::HeaderIs(names, value) => header(names, &|v| v == value),
            Signal::HeaderContains(names, needle) => header(names, &|v| v.contains(needle)),
            Signal::Status => true,
        })
        .map(|r| RuleMatch {
            id: r.id.to_owned(),
            reason: r.reason,
            scope: r.scope,
            cooldown_ms: r.cooldown_ms,
            parse_hint: r.parse_hint,
            honored_scope: honored,
        })
}

#[cfg(test)]
mod tests;
