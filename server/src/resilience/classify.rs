//! Classification (SPEC §R7 stage 2): an upstream failure — status,
//! headers, body — becomes a [`Verdict`]: why it failed, whether another
//! connection should be tried, how long this connection cools, whether the
//! provider breaker may count it, and whether the account is terminally
//! unusable. Restatement (stage 1) has already corrected the status.
//!
//! Order matters and follows reference §2.3: provider rules (operator
//! rules first), ban text, Gemini `RetryInfo`, credit exhaustion, quota
//! text (daily → local midnight, weekly → 24 h, 5-hour subscription → 1 h
//! or the hint), context overflow and model access, concurrency limits,
//! then the status. Rate-limit-like failures go through the ladder unless
//! an upstream hint replaces it.

use app::types::settings::{ConnectionCooldownProfile, ErrorReason, RuleScope};
use chrono::{Local, TimeZone};
use http::HeaderMap;

use super::{retry_hints, rules::RuleMatch};

/// An account state only an operator (or new credentials) can undo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Terminal {
    Banned,
    CreditsExhausted,
}

impl Terminal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Banned => "banned",
            Self::CreditsExhausted => "credits_exhausted",
        }
    }
}

/// What one failure means for the connection and the provider.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub reason: ErrorReason,
    /// Try the next connection/target (else answer the client now).
    pub should_fallback: bool,
    /// How long this connection should cool; 0 = not at all.
    pub cooldown_ms: u64,
    /// The connection's backoff level after this failure.
    pub backoff_level: u32,
    pub used_upstream_hint: bool,
    /// The provider breaker must not count this failure.
    pub skip_provider_breaker: bool,
    pub terminal: Option<Terminal>,
    /// Set when a provider rule decided the verdict.
    pub rule: Option<RuleMatch>,
}

impl Verdict {
    /// A rule with `scope: "provider"`, honoured here, decided a cooldown:
    /// the whole provider cools, not just the failing connection.
    pub fn cools_provider(&self) -> bool {
        self.cooldown_ms > 0
            && self.terminal.is_none()
            && self.rule.as_ref().is_some_and(|r| r.honored_scope && r.scope == RuleScope::Provider)
    }

    /// A verdict without hint, rule or terminal state.
    pub fn new(reason: ErrorReason, should_fallback: bool, cooldown_ms: u64, backoff_level: u32) -> Self {
        Self {
            reason,
            should_fallback,
            cooldown_ms,
            backoff_level,
            used_upstream_hint: false,
            skip_provider_breaker: false,
            terminal: None,
            rule: None,
        }
    }

    fn terminal(reason: ErrorReason, terminal: Terminal, level: u32) -> Self {
        Self { terminal: Some(terminal), skip_provider_breaker: true, ..Self::new(reason, true, 0, level) }
    }
}

/// Statuses that count against the provider breaker (with transport errors).
pub const BREAKER_TRIP_STATUSES: [u16; 5] = [408, 500, 502, 503, 504];

/// Whether this failure may count against the provider breaker.
pub fn trips_breaker(status: Option<u16>, verdict: &Verdict) -> bool {
    !verdict.skip_provider_breaker && status.is_none_or(|s| BREAKER_TRIP_STATUSES.contains(&s))
}

/// Everything the classifier looks at.
pub struct Failure<'a> {
    /// `None` for transport errors (connect, reset, timeout).
    pub status: Option<u16>,
    pub headers: &'a HeaderMap,
    pub body: &'a str,
    /// The connection's current backoff level.
    pub backoff_level: u32,
    /// Ladder and hint settings of the connection's auth class.
    pub profile: &'a ConnectionCooldownProfile,
    /// Cap of the ladder: the model-lockout `maxCooldownMs`.
    pub max_cooldown_ms: u64,
    /// The provider rule that matched, if any (see `rules`).
    pub rule: Option<RuleMatch>,
    pub now_ms: i64,
}

/// Fixed cooldown of a concurrency-limit 429 (the account is only busy).
pub const CONCURRENCY_LIMIT_COOLDOWN_MS: u64 = 1_000;
/// Cooldown of a single "request not allowed" refusal.
pub const REQUEST_REJECTED_COOLDOWN_MS: u64 = 5_000;
const HOUR_MS: u64 = 3_600_000;
/// A typed retry delay longer than this means quota, not rate.
const RATE_LIMIT_DELAY_MAX_MS: u64 = 60_000;

const BAN: &[&str] = &[
    "account has been deactivated",
    "account has been disabled",
    "account has been suspended",
    "account is suspended",
    "account has been banned",
    "account is banned",
    "organization has been disabled",
    "account deactivated",
];
const CREDITS: &[&str] = &[
    "insufficient_quota",
    "exceeded your current quota",
    "insufficient balance",
    "insufficient credits",
    "credit balance is too low",
    "billing hard limit",
    "out of credits",
    "余额不足",
];
/// Words that make a typed-delay 429 a billing matter.
const BILLING: &[&str] = &["insufficient", "billing", "credit", "balance"];
const DAILY: &[&str] = &["today's quota", "daily quota", "try again tomorrow", "daily limit", "daily rate limit"];
const WEEKLY: &[&str] = &["weekly limit", "weekly quota", "weekly usage limit"];
const SUBSCRIPTION: &[&str] = &["5-hour", "5 hour limit", "five-hour"];
const CONTEXT: &[&str] = &[
    "prompt is too long",
    "context length",
    "context_length_exceeded",
    "maximum context",
    "too many tokens",
    "input is too long",
];
const MODEL_ACCESS: &[&str] = &[
    "model_not_found",
    "does not have access to model",
    "do not have access to the model",
    "model not found",
    "not_found_error",
    "无权访问模型",
];
const CONCURRENCY: &[&str] =
    &["too many concurrent requests", "concurrency limit", "parallel request limit", "并发数过高"];
const RATE_TEXT: &[&str] =
    &["rate limit", "rate_limit", "too many requests", "high-frequency", "high frequency", "频繁"];
const OVERLOAD: &[&str] = &["overloaded", "capacity", "high demand"];

fn any(haystack: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| haystack.contains(n))
}

/// The verdict for one failure.
pub fn classify(f: &Failure<'_>) -> Verdict {
    let text = f.body.to_lowercase();
    let level = f.backoff_level;
    if let Some(rule) = &f.rule {
        return rule_verdict(f, rule.clone());
    }
    if any(&text, BAN) {
        return Verdict::terminal(ErrorReason::Banned, Terminal::Banned, level);
    }
    if f.status == Some(503)
        && f.headers.get("x-omni-fallback-hint").is_some_and(|v| v.as_bytes() == b"connection_cooldown")
    {
        return Verdict { skip_provider_breaker: true, ..Verdict::new(ErrorReason::ServerError, true, 5_000, 0) };
    }
    if f.status == Some(429)
        && let Some(delay) = typed_retry_delay(f.body)
    {
        let reason = if delay > RATE_LIMIT_DELAY_MAX_MS || any(&text, BILLING) {
            ErrorReason::QuotaExhausted
        } else {
            ErrorReason::RateLimited
        };
        return Verdict { used_upstream_hint: true, ..Verdict::new(reason, true, delay, 0) };
    }
    if f.status == Some(402) || any(&text, CREDITS) {
        return Verdict::terminal(ErrorReason::CreditsExhausted, Terminal::CreditsExhausted, level);
    }
    if let Some(v) = quota_text(f, &text) {
        return v;
    }
    if any(&text, CONTEXT) {
        return Verdict::new(ErrorReason::ContextOverflow, true, 0, level);
    }
    if any(&text, MODEL_ACCESS) {
        return Verdict::new(ErrorReason::ModelAccessDenied, true, 0, level);
    }
    if any(&text, CONCURRENCY) {
        let hint = hint_ms(f);
        return Verdict {
            skip_provider_breaker: true,
            used_upstream_hint: hint.is_some(),
            ..Verdict::new(ErrorReason::ConcurrencyLimited, true, hint.unwrap_or(CONCURRENCY_LIMIT_COOLDOWN_MS), level)
        };
    }
    match f.status {
        None => retryable(f, ErrorReason::Timeout),
        Some(403) if text.contains("not authorized for this route") => {
            Verdict::new(ErrorReason::Forbidden, false, 0, level)
        }
        Some(403) if text.contains("request not allowed") => {
            Verdict::new(ErrorReason::RequestRejected, true, REQUEST_REJECTED_COOLDOWN_MS, level)
        }
        Some(401) => retryable(f, ErrorReason::AuthError),
        Some(403) => Verdict::new(ErrorReason::Forbidden, true, 0, level),
        Some(404) => Verdict::new(ErrorReason::NotFound, true, 0, level),
        Some(408) => retryable(f, ErrorReason::Timeout),
        // The gateway follows no redirect: a moved or misconfigured
        // endpoint is the upstream's fault, not the request's.
        Some(300..=399) => retryable(f, ErrorReason::ServerError),
        Some(429) => retryable(f, ErrorReason::RateLimited),
        Some(s) if s >= 500 => retryable(f, ErrorReason::ServerError),
        Some(_) if any(&text, RATE_TEXT) => retryable(f, ErrorReason::RateLimited),
        Some(_) if any(&text, OVERLOAD) => retryable(f, ErrorReason::ServerError),
        Some(_) => Verdict::new(ErrorReason::BadRequest, false, 0, level),
    }
}

/// The reason alone of a failure, where no connection's ladder or rule is
/// concerned: what a whole request's error answer (`status`, `body`) says
/// about the request, for callers that decide whether asking again helps.
pub fn reason_of(status: Option<u16>, body: &str) -> ErrorReason {
    let profile =
        ConnectionCooldownProfile { base_cooldown_ms: 0, use_upstream_retry_hints: false, max_backoff_steps: 0 };
    let headers = HeaderMap::new();
    let failure = Failure {
        status,
        headers: &headers,
        body,
        backoff_level: 0,
        profile: &profile,
        max_cooldown_ms: 0,
        rule: None,
        now_ms: 0,
    };
    classify(&failure).reason
}

/// Whether a failure for `reason` may pass if the same request is sent
/// again shortly: the upstream was busy, limited for the moment, failing
/// or slow — not refusing the request, the account or the model.
pub fn is_transient(reason: ErrorReason) -> bool {
    matches!(
        reason,
        ErrorReason::RateLimited | ErrorReason::ConcurrencyLimited | ErrorReason::ServerError | ErrorReason::Timeout
    )
}

/// Quota text: daily → local midnight, weekly → 24 h, 5-hour
/// subscription window → the hint or 1 h; all retryable, none terminal.
fn quota_text(f: &Failure<'_>, text: &str) -> Option<Verdict> {
    let cooldown = if any(text, DAILY) {
        until_local_midnight(f.now_ms)
    } else if any(text, WEEKLY) {
        24 * HOUR_MS
    } else if any(text, SUBSCRIPTION) {
        hint_ms(f).unwrap_or(HOUR_MS)
    } else {
        return None;
    };
    Some(Verdict::new(ErrorReason::QuotaExhausted, true, cooldown, 0))
}

/// The ladder, or the upstream hint when the profile trusts hints.
fn retryable(f: &Failure<'_>, reason: ErrorReason) -> Verdict {
    if f.profile.use_upstream_retry_hints
        && let Some(hint) = hint_ms(f)
    {
        return Verdict { used_upstream_hint: true, ..Verdict::new(reason, true, hint, 0) };
    }
    let steps = u32::try_from(f.profile.max_backoff_steps).unwrap_or(u32::MAX);
    let (cooldown, next) = ladder(f.profile.base_cooldown_ms, f.backoff_level, steps, f.max_cooldown_ms);
    Verdict::new(reason, true, cooldown, next)
}

/// `min(base · 2^min(level, steps), cap)` and the next level.
pub fn ladder(base_ms: u64, level: u32, max_steps: u32, cap_ms: u64) -> (u64, u32) {
    let exp = level.min(max_steps).min(63);
    let cooldown = base_ms.saturating_mul(1_u64 << exp).min(cap_ms);
    (cooldown, level.saturating_add(1).min(max_steps))
}

fn hint_ms(f: &Failure<'_>) -> Option<u64> {
    retry_hints::from_headers(f.headers, f.now_ms).or_else(|| retry_hints::from_body(f.body, f.now_ms))
}

/// A Gemini `RetryInfo.retryDelay` (the typed, trustworthy kind).
fn typed_retry_delay(body: &str) -> Option<u64> {
    body.contains("RetryInfo").then(|| retry_hints::from_body(body, 0)).flatten()
}

/// Milliseconds until the next local midnight (at most a day).
pub fn until_local_midnight(now_ms: i64) -> u64 {
    let day = retry_hints::DAY_MS;
    let Some(now) = Local.timestamp_millis_opt(now_ms).single() else { return day };
    let next = now.date_naive().succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0));
    let at = next.and_then(|n| Local.from_local_datetime(&n).earliest()).map(|t| t.timestamp_millis());
    at.map_or(day, |at| u64::try_from(at - now_ms).unwrap_or(day).min(day))
}

/// A provider rule's verdict: its reason, its cooldown (or the ladder).
fn rule_verdict(f: &Failure<'_>, rule: RuleMatch) -> Verdict {
    let mut v = match rule.cooldown_ms {
        Some(ms) => Verdict::new(rule.reason, true, ms, f.backoff_level),
        None => retryable(f, rule.reason),
    };
    if rule.cooldown_ms.is_none()
        && rule.parse_hint
        && let Some(hint) = hint_ms(f)
    {
        v.cooldown_ms = hint;
        v.used_upstream_hint = true;
    }
    v.skip_provider_breaker = true;
    v.rule = Some(rule);
    v
}

/// The breaker kind of a failure (SPEC §R1 `cooldownByKind`): a 429 is a
/// rate limit unless its text says the quota or plan is used up.
pub fn failure_kind(status: Option<u16>, body: &str) -> Option<super::breaker::FailureKind> {
    use super::breaker::FailureKind;
    if status != Some(429) {
        return None;
    }
    let text = body.to_lowercase();
    let structured = serde_json::from_str::<serde_json::Value>(body).ok().and_then(|v| {
        v.get("error").map(|e| e.as_str().map(str::to_lowercase).unwrap_or_else(|| e.to_string().to_lowercase()))
    });
    let quota = ["plan limit reached", "quota exceeded", "quota exhausted", "insufficient_quota"];
    if any(&text, &quota) || any(&text, DAILY) || structured.is_some_and(|e| e.contains("usage limit reached")) {
        Some(FailureKind::QuotaExhausted)
    } else {
        Some(FailureKind::RateLimit)
    }
}

#[cfg(test)]
mod tests;
