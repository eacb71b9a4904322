//! What a request that nothing served comes to. The dispatch loop keeps
//! a [`Trail`] — every failed attempt per target, every target skipped
//! before an attempt and why — and ends with a [`DispatchError`] carrying
//! it; `From<DispatchError> for ProxyError` is the one place that turns it
//! into a status and an error body (the edge puts it in the client's
//! envelope).
//!
//! A single model: its last failure, else 404 `no_credentials`, 503
//! `provider_circuit_open`, or the §R2 outcomes of its excluded
//! connections. A combo: the last target's failure, else (nothing could
//! even be tried) `503 all_targets_cooling_down` when a timer will end an
//! exclusion, `503 ALL_ACCOUNTS_INACTIVE` when every target's accounts are
//! terminal, `404 no_executable_targets` when no target has a usable
//! connection at all, and `503 ALL_TARGETS_SKIPPED` for a mix of the two.

use app::types::combo::Combo;
use axum::http::StatusCode;
use serde_json::json;
use std::sync::Arc;

use super::{
    call::{Failure, Unserved},
    gates::{Skip, SkipReason},
};
use crate::{
    proxy::errors::ProxyError,
    resilience::{connection_health::TerminalStatus, engine::Exclusion},
    routing::plan::{Plan, Planned},
};

/// A target skipped before any attempt.
#[derive(Clone)]
pub struct Skipped {
    pub provider: &'static str,
    /// The target as planned (`provider/model`), and its model part.
    pub spec: String,
    pub model: String,
    pub skip: Skip,
}

/// Everything the dispatch loop learned about a request it could not serve.
#[derive(Default)]
pub struct Trail {
    /// The targets attempted, in order: provider and failed attempts.
    pub tried: Vec<(&'static str, Vec<Failure>)>,
    pub skipped: Vec<Skipped>,
    /// The connections excluded before an attempt.
    pub excluded: Vec<Exclusion>,
    /// A combo that skipped every target while some connection was
    /// rate-limited for a transient reason: how long until the first such
    /// lock ends, and when (epoch ms, on the engine's clock).
    pub rate_limited: Option<(u64, i64)>,
}

impl Trail {
    pub fn skip(&mut self, planned: &Planned, skip: Skip) {
        let (provider, model) =
            planned.target.as_ref().map_or(("", String::new()), |t| (t.provider.id, t.model.clone()));
        let model = if model.is_empty() { planned.spec.clone() } else { model };
        self.skipped.push(Skipped { provider, spec: planned.spec.clone(), model, skip });
    }

    /// A target whose connections were tried (or all excluded).
    pub fn unserved(&mut self, planned: &Planned, provider: &'static str, u: Unserved) {
        if u.failures.is_empty() {
            self.skip(planned, Skip::from_exclusions(&u.excluded));
        } else {
            self.tried.push((provider, u.failures));
        }
        self.excluded.extend(u.excluded);
    }
}

#[derive(Debug)]
pub enum DispatchError {
    /// The answer is known without (more) upstream calls: the body does
    /// not translate, or nothing could be tried (already logged).
    Request(ProxyError),
    /// Nothing served a single-model request.
    Target(Trail),
    /// Nothing served a combo.
    Combo(Arc<Combo>, Trail),
    /// The combo's `comboTimeoutMs` (the last field) passed before a target served.
    ComboTimeout(Arc<Combo>, Trail, u64),
    /// The request's shared deadline (`OMNIROUTE_REQUEST_DEADLINE_MS`, the
    /// last field) passed with targets or connections still untried.
    RequestDeadline(Trail, u64),
}

impl std::fmt::Debug for Trail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trail").field("tried", &self.tried.len()).field("skipped", &self.skipped.len()).finish()
    }
}

impl DispatchError {
    pub fn exhausted(plan: &Plan, trail: Trail) -> Self {
        match &plan.combo {
            Some(c) => Self::Combo(c.clone(), trail),
            None => Self::Target(trail),
        }
    }
}

impl From<DispatchError> for ProxyError {
    fn from(e: DispatchError) -> Self {
        match e {
            DispatchError::Request(e) => e,
            DispatchError::Target(mut trail) => match trail.tried.pop() {
                Some((provider, failures)) => all_failed(provider, failures, trail.excluded.len()),
                None => unattempted_target(&trail),
            },
            DispatchError::Combo(combo, mut trail) => match trail.tried.pop() {
                Some((provider, failures)) => all_failed(provider, failures, 0),
                None => nothing_executable(&combo, &trail),
            },
            DispatchError::ComboTimeout(combo, trail, ms) => combo_timeout(&combo, &trail, ms),
            DispatchError::RequestDeadline(trail, ms) => deadline_exceeded(&trail, ms),
        }
    }
}

/// A single model whose target was skipped.
fn unattempted_target(trail: &Trail) -> ProxyError {
    let Some(s) = trail.skipped.first() else {
        return ProxyError::new(StatusCode::BAD_GATEWAY, "server_error", "upstream_error", "no attempt was made");
    };
    match s.skip.reason {
        SkipReason::NoConnection => ProxyError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "no_credentials",
            format!("No active credentials for provider: {}", s.provider),
        ),
        SkipReason::NotAllowed => ProxyError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            "connection_not_allowed",
            format!(
                "This API key may not use any connection of provider {}: its allowed connections name none of them (Keys in the dashboard)",
                s.provider
            ),
        ),
        SkipReason::CircuitOpen => ProxyError::circuit_open(s.provider, s.skip.retry_after_ms.unwrap_or(1_000)),
        _ => all_excluded(s.provider, &s.model, &trail.excluded),
    }
}

/// `504 COMBO_TIMEOUT`: the combo's time ran out with targets left.
fn combo_timeout(combo: &Combo, trail: &Trail, ms: u64) -> ProxyError {
    let pool = combo.targets.len();
    let attempted = trail.tried.len();
    let message = format!("Combo global timeout ({ms}ms) after {attempted}/{pool} targets | tried: {}", tried(trail));
    tracing::warn!(combo = %combo.name, timeout_ms = ms, attempted, "combo timed out");
    let code = "COMBO_TIMEOUT";
    ProxyError::new(StatusCode::GATEWAY_TIMEOUT, "server_error", code, message)
        .with(
            "diagnostics",
            json!({"poolSize": pool, "attempted": attempted, "terminalReason": "combo_timeout",
                   "attemptOrder": combo.targets.iter().map(|t| t.model.clone()).collect::<Vec<_>>()}),
        )
        .with(
            "recovery_hint",
            json!({"action": "retry", "next_step": "Retry the request, or raise the combo's comboTimeoutMs"}),
        )
        .header("x-omniroute-combo-pool-size", pool)
        .header("x-omniroute-combo-attempted", attempted)
        .header("x-omniroute-combo-terminal-reason", "combo_timeout")
}

/// `504 REQUEST_DEADLINE_EXCEEDED`: the request's time budget ran out
/// with targets or connections left.
fn deadline_exceeded(trail: &Trail, ms: u64) -> ProxyError {
    let attempts: usize = trail.tried.iter().map(|(_, failures)| failures.len()).sum();
    let message = format!(
        "The request's time budget ({ms}ms, OMNIROUTE_REQUEST_DEADLINE_MS) ran out after {attempts} attempt(s) | tried: {}",
        tried(trail)
    );
    ProxyError::new(StatusCode::GATEWAY_TIMEOUT, "server_error", "REQUEST_DEADLINE_EXCEEDED", message)
}

/// The targets tried, each with its last status: `openai (429), glm (no answer)`.
fn tried(trail: &Trail) -> String {
    let tried: Vec<String> = trail
        .tried
        .iter()
        .map(|(provider, failures)| {
            let status = failures.last().and_then(|f| f.status).map_or("no answer".to_owned(), |s| s.to_string());
            format!("{provider} ({status})")
        })
        .collect();
    let shown = tried.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    let more = if tried.len() > 5 { format!(", ... (+{})", tried.len() - 5) } else { String::new() };
    format!("{shown}{more}")
}

/// `x-omniroute-combo-excluded`: each excluded `provider/model:reason`,
/// joined by `,`, whole entries up to 900 characters.
fn excluded_header(reasons: &[String]) -> String {
    let mut header = String::new();
    for r in reasons {
        if header.len() + r.len() + 1 > 900 {
            break;
        }
        if !header.is_empty() {
            header.push(',');
        }
        header.push_str(r);
    }
    header
}

/// Every connection tried failed (`excluded` more were not tried):
/// answer with the last failure.
fn all_failed(provider: &str, failures: Vec<Failure>, excluded: usize) -> ProxyError {
    let mut tried: Vec<&str> = failures.iter().map(|f| f.connection_id.as_str()).collect();
    tried.sort_unstable();
    tried.dedup();
    let tried = tried.len();
    let Some(last) = failures.into_iter().next_back() else {
        return ProxyError::new(StatusCode::BAD_GATEWAY, "server_error", "upstream_error", "no attempt was made");
    };
    let which = match (tried, excluded) {
        (1, 0) => "The only usable connection".to_owned(),
        (n, 0) => format!("All {n} connections"),
        (1, x) => format!("The one connection tried ({x} more cooling, locked or unusable)"),
        (n, x) => format!("The {n} connections tried ({x} more cooling, locked or unusable)"),
    };
    let message = match last.code {
        // The gateway's own refusal says exactly what happened.
        Some(c) if c.is_local() => last.message,
        _ => format!("{which} of provider {provider} failed; last error: {}", last.message),
    };
    let (status, kind, code) = match (last.code, last.status) {
        (Some(c), _) => c.answer(),
        (None, Some(429)) => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "rate_limited"),
        (None, Some(401)) => (StatusCode::UNAUTHORIZED, "authentication_error", "upstream_auth_error"),
        (None, Some(403)) => (StatusCode::FORBIDDEN, "permission_error", "upstream_forbidden"),
        (None, Some(404)) => (StatusCode::NOT_FOUND, "invalid_request_error", "model_not_found"),
        // A redirect is never handed on: the client could not follow it.
        (None, Some(s)) if s < 400 => (StatusCode::BAD_GATEWAY, "server_error", "upstream_error"),
        (None, Some(s)) => {
            (StatusCode::from_u16(s).unwrap_or(StatusCode::BAD_GATEWAY), "server_error", "upstream_error")
        }
        (None, None) => (StatusCode::BAD_GATEWAY, "server_error", "upstream_unavailable"),
    };
    let mut err = ProxyError::new(status, kind, code, message);
    err.retry_after = last.retry_after;
    err.connection_id = Some(last.connection_id.into());
    err
}

/// No connection could even be tried (SPEC §R2 outcomes): all terminal →
/// 401; every usable one blocked only by model lockouts → 429
/// `model_cooldown`; otherwise cooling → 429 when they cooled for rate
/// limits, else 503, with "(reset after Ns)". `Retry-After` is the
/// earliest lapse.
fn all_excluded(provider: &str, model: &str, excluded: &[Exclusion]) -> ProxyError {
    let terminal: Vec<TerminalStatus> =
        excluded.iter().filter_map(|e| if let Exclusion::Terminal(t) = e { Some(*t) } else { None }).collect();
    if terminal.len() == excluded.len() {
        let why = match terminal.first() {
            Some(TerminalStatus::Banned) => "banned by upstream",
            Some(TerminalStatus::CreditsExhausted) => "credits exhausted",
            _ => "authentication expired",
        };
        return ProxyError::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "connections_unusable",
            format!("[{provider}] All {} connection(s) {why} — please reconnect in the dashboard", terminal.len()),
        );
    }
    let soonest = excluded.iter().filter_map(Exclusion::remaining_ms).min().unwrap_or(1_000);
    let secs = soonest.div_ceil(1000).max(1);
    let locked = excluded.iter().filter(|e| matches!(e, Exclusion::ModelLocked { .. })).count();
    let cooling: Vec<(Option<u16>, Option<&String>)> = excluded
        .iter()
        .filter_map(|e| match e {
            Exclusion::Cooling { error_code, last_error, .. } => Some((*error_code, last_error.as_ref())),
            _ => None,
        })
        .collect();
    let mut err = if cooling.is_empty() {
        ProxyError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "model_cooldown",
            format!("All credentials for model {model} are cooling down"),
        )
        .with("model", model)
        .with("reset_seconds", secs)
        .with("credentials_cooling", locked)
    } else {
        let rate_limited = cooling.iter().all(|(code, _)| *code == Some(429));
        let last_error = cooling.iter().find_map(|(_, e)| *e).map_or("connections are cooling down", String::as_str);
        let message = format!("[{provider}/{model}] {last_error} (reset after {secs}s)");
        if rate_limited {
            ProxyError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "connection_cooldown", message)
        } else {
            ProxyError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", "connection_cooldown", message)
        }
    };
    err.retry_after = Some(secs);
    err
}

/// The answer when no combo target could even be tried.
fn nothing_executable(combo: &Combo, trail: &Trail) -> ProxyError {
    let skipped = &trail.skipped;
    let soonest = skipped.iter().filter_map(|s| s.skip.retry_after_ms).min();
    let secs = soonest.map(|ms| ms.div_ceil(1000).max(1));
    let all = |r: SkipReason| skipped.iter().all(|s| s.skip.reason == r);
    let (status, kind, code) = if trail.rate_limited.is_some() {
        (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "all_targets_cooling_down")
    } else if secs.is_some() {
        (StatusCode::SERVICE_UNAVAILABLE, "server_error", "all_targets_cooling_down")
    } else if all(SkipReason::NoConnection) {
        (StatusCode::NOT_FOUND, "invalid_request_error", "no_executable_targets")
    } else if all(SkipReason::NotAllowed) {
        (StatusCode::FORBIDDEN, "permission_error", "connection_not_allowed")
    } else if all(SkipReason::Inactive) {
        (StatusCode::SERVICE_UNAVAILABLE, "service_unavailable", "ALL_ACCOUNTS_INACTIVE")
    } else if all(SkipReason::ToolLimit) {
        (StatusCode::BAD_REQUEST, "invalid_request_error", "tool_limit_exceeded")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "server_error", "ALL_TARGETS_SKIPPED")
    };
    // A transient rate limit answers for when it ends (SPEC §R4).
    let secs = trail.rate_limited.map(|(ms, _)| ms.div_ceil(1000).max(1)).or(secs);
    let excluded: Vec<_> = skipped
        .iter()
        .map(|s| {
            json!({"provider": s.provider, "model": s.model, "reason": s.skip.reason.as_str(),
                   "retryAfterSeconds": s.skip.retry_after_ms.map(|ms| ms.div_ceil(1000).max(1))})
        })
        .collect();
    let reasons: Vec<String> = skipped.iter().map(|s| format!("{}:{}", s.spec, s.skip.reason.as_str())).collect();
    tracing::warn!(combo = %combo.name, terminal_reason = code, excluded = %reasons.join(", "), "no combo target could run");
    let diagnostics = json!({
        "poolSize": combo.targets.len(),
        "attempted": 0,
        "excluded": excluded,
        "attemptOrder": combo.targets.iter().map(|t| t.model.clone()).collect::<Vec<_>>(),
        "terminalReason": code,
    });
    let n = combo.targets.len();
    let (hint, message) = match (secs, code) {
        (Some(s), _) => (
            json!({"action": "wait", "retry_after_seconds": s,
                   "next_step": format!("Retry after {s} s, when the first target is back, or switch to another combo")}),
            format!("All {n} target(s) of combo {} are cooling down (reset after {s}s)", combo.name),
        ),
        (None, "ALL_ACCOUNTS_INACTIVE") => (
            json!({"action": "switch-combo",
                   "next_step": "Every account of this combo is banned, expired or out of credits: reconnect them in the dashboard (Providers), or use another combo"}),
            format!("All accounts of combo {} are inactive: {}", combo.name, reasons.join(", ")),
        ),
        (None, "tool_limit_exceeded") => (
            json!({"action": "switch-combo",
                   "next_step": "Send fewer tools, or add a target to this combo that accepts this many"}),
            format!(
                "Every target of combo {} refuses requests with this many tools (as each said when it last refused): {}",
                combo.name,
                reasons.join(", ")
            ),
        ),
        (None, _) => (
            json!({"action": "switch-combo",
                   "next_step": "No target has a usable connection: add or enable connections, or use another combo"}),
            format!("No target of combo {} can run: {}", combo.name, reasons.join(", ")),
        ),
    };
    let mut err = ProxyError::new(status, kind, code, message)
        .with("diagnostics", diagnostics)
        .with("recovery_hint", hint)
        .header("x-omniroute-combo-pool-size", n)
        .header("x-omniroute-combo-attempted", 0)
        .header("x-omniroute-combo-excluded", excluded_header(&reasons))
        .header("x-omniroute-combo-terminal-reason", code);
    err.retry_after = secs;
    if let Some((s, (_, at_ms))) = secs.zip(trail.rate_limited) {
        let reset_at = chrono::DateTime::from_timestamp_millis(at_ms).map(|t| t.to_rfc3339());
        err = err.with("retry_after", s).with("reset_at", reset_at);
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::dispatch::FailureCode;

    fn failure(status: Option<u16>, id: &str, code: Option<FailureCode>) -> Failure {
        Failure {
            connection_id: id.into(),
            status,
            retry_after: Some(7),
            message: "boom".into(),
            code,
            timed_out: false,
        }
    }

    #[test]
    fn all_failed_reports_the_last_failure() {
        let e = all_failed("openai", vec![failure(None, "a", None), failure(Some(429), "b", None)], 0);
        assert_eq!((e.status, e.code, e.retry_after), (StatusCode::TOO_MANY_REQUESTS, "rate_limited", Some(7)));
        assert!(e.message.starts_with("All 2 connections of provider openai failed"), "{}", e.message);
        let once = all_failed("openai", vec![failure(None, "a", None)], 0);
        assert_eq!(once.status, StatusCode::BAD_GATEWAY);
        assert!(once.message.starts_with("The only usable connection of provider openai failed"), "{}", once.message);
        // Tried twice on one connection while another was cooling: not "All 2".
        let again = all_failed("openai", vec![failure(Some(401), "a", None), failure(Some(401), "a", None)], 1);
        let says = "The one connection tried (1 more cooling, locked or unusable) of provider openai failed";
        assert!(again.message.starts_with(says), "{}", again.message);
        let redirected = all_failed("openai", vec![failure(Some(307), "a", None)], 0);
        assert_eq!((redirected.status, redirected.code), (StatusCode::BAD_GATEWAY, "upstream_error"));
    }

    fn skipped(reason: SkipReason, retry_after_ms: Option<u64>) -> Skipped {
        Skipped {
            provider: "openai",
            spec: "openai/m".into(),
            model: "m".into(),
            skip: Skip::new(reason, retry_after_ms),
        }
    }

    #[test]
    fn a_combo_that_could_try_nothing_says_why() {
        let combo = Combo {
            name: "c".into(),
            strategy: app::types::combo::Strategy::Priority,
            targets: vec![],
            config: Default::default(),
        };
        let code = |s: &[Skipped]| {
            let trail = Trail { skipped: s.to_vec(), ..Trail::default() };
            let e = nothing_executable(&combo, &trail);
            (e.status.as_u16(), e.code)
        };
        use SkipReason::*;
        assert_eq!(
            code(&[skipped(NoConnection, None), skipped(CircuitOpen, Some(1))]),
            (503, "all_targets_cooling_down")
        );
        assert_eq!(code(&[skipped(NoConnection, None), skipped(NoConnection, None)]), (404, "no_executable_targets"));
        assert_eq!(code(&[skipped(Inactive, None), skipped(Inactive, None)]), (503, "ALL_ACCOUNTS_INACTIVE"));
        assert_eq!(code(&[skipped(Inactive, None), skipped(NoConnection, None)]), (503, "ALL_TARGETS_SKIPPED"));
        assert_eq!(code(&[skipped(ToolLimit, None), skipped(ToolLimit, None)]), (400, "tool_limit_exceeded"));
        assert_eq!(code(&[skipped(NotAllowed, None)]), (403, "connection_not_allowed"));
        let rate_limited = Trail {
            skipped: vec![skipped(ConnectionCooldown, Some(30_000))],
            rate_limited: Some((2_500, 1_700_000_002_500)),
            ..Trail::default()
        };
        let e = nothing_executable(&combo, &rate_limited);
        assert_eq!(
            (e.status.as_u16(), e.kind, e.retry_after),
            (429, "rate_limit_error", Some(3)),
            "the transient lock's end"
        );
        let fields = &e.extra.unwrap().fields;
        assert_eq!(fields["reset_at"], "2023-11-14T22:13:22.500+00:00");
    }

    #[test]
    fn a_stream_that_never_became_ready_names_why() {
        let e = all_failed("openai", vec![failure(None, "a", Some(FailureCode::ReadinessTimeout))], 0);
        assert_eq!((e.status, e.code), (StatusCode::GATEWAY_TIMEOUT, "STREAM_READINESS_TIMEOUT"));
        let e = all_failed("openai", vec![failure(None, "a", Some(FailureCode::EarlyEof))], 0);
        assert_eq!((e.status, e.code, e.kind), (StatusCode::BAD_GATEWAY, "STREAM_EARLY_EOF", "stream_early_eof"));
    }
}
