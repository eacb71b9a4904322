//! Every range and cross-field rule of [`ResilienceSettings`], written once
//! and walked two ways: [`ResilienceSettings::validate`] reports each
//! violation as a field error (PATCH, dashboard forms), and
//! [`ResilienceSettings::normalize`] clamps it away (stored or env values
//! from an older or hand-edited source). Because both walk the same rules,
//! a value that validates is left unchanged by normalization.

use super::*;
use crate::types::validation::{Errors, FieldError};

/// Milliseconds in a day, the upper bound of most durations.
pub const DAY_MS: u64 = 86_400_000;
/// Operator error rules kept at most.
pub const MAX_PROVIDER_ERROR_RULES: usize = 50;
/// Egress-lock providers kept at most.
pub const MAX_EGRESS_PROVIDERS: usize = 50;
/// Longest `match` text of an operator rule.
pub const MAX_RULE_MATCH_CHARS: usize = 500;

/// One way of walking the rules.
trait Walker {
    /// `value` must lie in `min..=max`.
    fn range(&mut self, field: &str, value: &mut u64, min: u64, max: u64);
    /// `value` must be at least `floor`, another field's value.
    fn at_least(&mut self, field: &str, value: &mut u64, floor: u64, other: &str);
    /// `value` must be less than `ceiling`, another field's value.
    fn below(&mut self, field: &str, value: &mut u64, ceiling: u64, other: &str);
    /// Items for which `problem` says what is wrong are invalid.
    fn items<T>(&mut self, field: &str, items: &mut Vec<T>, problem: impl Fn(&T) -> Option<String>);
    /// No item may appear twice.
    fn unique<T: PartialEq>(&mut self, field: &str, items: &mut Vec<T>);
    /// At most `max` items.
    fn max_len<T>(&mut self, field: &str, items: &mut Vec<T>, max: usize);
    /// At least one item; normalization falls back to `default`.
    fn non_empty<T>(&mut self, field: &str, items: &mut Vec<T>, default: impl FnOnce() -> Vec<T>);
    /// A text `problem` finds fault with is invalid; normalization empties it.
    fn text(&mut self, field: &str, value: &mut String, problem: impl Fn(&str) -> Option<String>);
}

/// A bound as the field's input reads: a duration in its largest exact
/// unit (`10 min`, as it may be typed), anything else as a number.
fn shown(field: &str, n: u64) -> String {
    if super::is_duration(field) { super::human_ms(n) } else { n.to_string() }
}

/// Reports violations.
struct Check(Errors);

impl Walker for Check {
    fn range(&mut self, field: &str, value: &mut u64, min: u64, max: u64) {
        if *value < min || *value > max {
            self.0.push(field, format!("must be between {} and {}", shown(field, min), shown(field, max)));
        }
    }
    fn at_least(&mut self, field: &str, value: &mut u64, floor: u64, other: &str) {
        if *value < floor {
            self.0.push(field, format!("must be at least {other} ({})", shown(field, floor)));
        }
    }
    fn below(&mut self, field: &str, value: &mut u64, ceiling: u64, other: &str) {
        if *value >= ceiling {
            self.0.push(field, format!("must be less than {other} ({})", shown(field, ceiling)));
        }
    }
    fn items<T>(&mut self, field: &str, items: &mut Vec<T>, problem: impl Fn(&T) -> Option<String>) {
        for (i, item) in items.iter().enumerate() {
            if let Some(message) = problem(item) {
                self.0.push(&format!("{field}.{i}"), message);
            }
        }
    }
    fn unique<T: PartialEq>(&mut self, field: &str, items: &mut Vec<T>) {
        for (i, item) in items.iter().enumerate() {
            if items[..i].contains(item) {
                self.0.push(&format!("{field}.{i}"), "appears twice");
            }
        }
    }
    fn max_len<T>(&mut self, field: &str, items: &mut Vec<T>, max: usize) {
        if items.len() > max {
            self.0.push(field, format!("must have at most {max} entries"));
        }
    }
    fn non_empty<T>(&mut self, field: &str, items: &mut Vec<T>, _default: impl FnOnce() -> Vec<T>) {
        if items.is_empty() {
            self.0.push(field, "must not be empty");
        }
    }
    fn text(&mut self, field: &str, value: &mut String, problem: impl Fn(&str) -> Option<String>) {
        if let Some(message) = problem(value) {
            self.0.push(field, message);
        }
    }
}

/// Clamps violations away.
struct Clamp;

impl Walker for Clamp {
    fn range(&mut self, _: &str, value: &mut u64, min: u64, max: u64) {
        *value = (*value).clamp(min, max);
    }
    fn at_least(&mut self, _: &str, value: &mut u64, floor: u64, _: &str) {
        *value = (*value).max(floor);
    }
    fn below(&mut self, _: &str, value: &mut u64, ceiling: u64, _: &str) {
        *value = (*value).min(ceiling.saturating_sub(1));
    }
    fn items<T>(&mut self, _: &str, items: &mut Vec<T>, problem: impl Fn(&T) -> Option<String>) {
        items.retain(|item| problem(item).is_none());
    }
    fn unique<T: PartialEq>(&mut self, _: &str, items: &mut Vec<T>) {
        let mut kept: Vec<T> = Vec::with_capacity(items.len());
        for item in items.drain(..) {
            if !kept.contains(&item) {
                kept.push(item);
            }
        }
        *items = kept;
    }
    fn max_len<T>(&mut self, _: &str, items: &mut Vec<T>, max: usize) {
        items.truncate(max);
    }
    fn non_empty<T>(&mut self, _: &str, items: &mut Vec<T>, default: impl FnOnce() -> Vec<T>) {
        if items.is_empty() {
            *items = default();
        }
    }
    fn text(&mut self, _: &str, value: &mut String, problem: impl Fn(&str) -> Option<String>) {
        if problem(value).is_some() {
            value.clear();
        }
    }
}

impl ResilienceSettings {
    /// Every violated rule as a field error (camelCase JSON paths).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut check = Check(Errors::default());
        self.clone().walk(&mut check);
        check.0.into_result()
    }

    /// The nearest settings that validate: out-of-range numbers clamped,
    /// cross-field rules enforced, invalid list entries dropped.
    pub fn normalize(mut self) -> Self {
        self.walk(&mut Clamp);
        self
    }

    fn walk(&mut self, w: &mut impl Walker) {
        self.request_queue.walk(w, "requestQueue");
        for (class, p) in
            [("oauth", &mut self.connection_cooldown.oauth), ("apikey", &mut self.connection_cooldown.apikey)]
        {
            let f = |name: &str| format!("connectionCooldown.{class}.{name}");
            w.range(&f("baseCooldownMs"), &mut p.base_cooldown_ms, 0, DAY_MS);
            w.range(&f("maxBackoffSteps"), &mut p.max_backoff_steps, 0, 32);
        }
        let breakers = &mut self.provider_breaker;
        for (class, p) in
            [("oauth", &mut breakers.oauth), ("apikey", &mut breakers.apikey), ("local", &mut breakers.local)]
        {
            p.walk(w, &format!("providerBreaker.{class}"));
        }
        self.provider_cooldown.walk(w, "providerCooldown");
        self.model_lockout.walk(w, "modelLockout");
        let wait = &mut self.wait_for_cooldown;
        w.range("waitForCooldown.maxRetries", &mut wait.max_retries, 0, 10);
        w.range("waitForCooldown.maxRetryWaitSec", &mut wait.max_retry_wait_sec, 0, 300);
        w.range("waitForCooldown.budgetMs", &mut wait.budget_ms, 0, 300_000);
        let one_wait_ms = wait.max_retry_wait_sec * 1000;
        w.at_least("waitForCooldown.budgetMs", &mut wait.budget_ms, one_wait_ms, "maxRetryWaitSec × 1000");
        let combo = &mut self.combo_cooldown_wait;
        w.range("comboCooldownWait.maxWaitMs", &mut combo.max_wait_ms, 0, 300_000);
        w.range("comboCooldownWait.maxAttempts", &mut combo.max_attempts, 0, 10);
        w.range("comboCooldownWait.budgetMs", &mut combo.budget_ms, 0, 300_000);
        w.at_least("comboCooldownWait.budgetMs", &mut combo.budget_ms, combo.max_wait_ms, "maxWaitMs");
        let watchdog = &mut self.stream_recovery.throughput_watchdog;
        let f = |name: &str| format!("streamRecovery.throughputWatchdog.{name}");
        w.range(&f("warmupMs"), &mut watchdog.warmup_ms, 0, 600_000);
        w.range(&f("windowMs"), &mut watchdog.window_ms, 1_000, 600_000);
        w.range(&f("minUsefulBytesPerSecond"), &mut watchdog.min_useful_bytes_per_second, 1, 1_000_000);
        w.range(&f("minUsefulBytes"), &mut watchdog.min_useful_bytes, 1, 1_000_000);
        w.range("sessionAffinityTtlMs", &mut self.session_affinity_ttl_ms, 0, DAY_MS);
        w.items("providerErrorRules", &mut self.provider_error_rules, ProviderErrorRule::problem);
        w.max_len("providerErrorRules", &mut self.provider_error_rules, MAX_PROVIDER_ERROR_RULES);
        w.items("egressIpLockProviders", &mut self.egress_ip_lock_providers, |p| provider_id_problem(p));
        w.unique("egressIpLockProviders", &mut self.egress_ip_lock_providers);
        w.max_len("egressIpLockProviders", &mut self.egress_ip_lock_providers, MAX_EGRESS_PROVIDERS);
        w.text("emergencyFallback", &mut self.emergency_fallback, emergency_fallback_problem);
    }
}

impl RequestQueueSettings {
    fn walk(&mut self, w: &mut impl Walker, at: &str) {
        let f = |name: &str| format!("{at}.{name}");
        w.range(&f("requestsPerMinute"), &mut self.requests_per_minute, 1, 1_000_000);
        w.range(&f("minTimeBetweenRequestsMs"), &mut self.min_time_between_requests_ms, 0, 3_600_000);
        w.range(&f("concurrentRequests"), &mut self.concurrent_requests, 1, 10_000);
        w.range(&f("globalConcurrentRequests"), &mut self.global_concurrent_requests, 0, 10_000);
        w.range(&f("maxWaitMs"), &mut self.max_wait_ms, 1, DAY_MS);
        w.range(&f("executionMaxWaitMs"), &mut self.execution_max_wait_ms, 1, DAY_MS);
        w.range(&f("maxQueueDepth"), &mut self.max_queue_depth, 0, 100_000);
    }

    /// The same settings clamped into their ranges; the per-connection
    /// rung uses it so an override can never escape them.
    pub(super) fn normalized(mut self) -> Self {
        self.walk(&mut Clamp, "requestQueue");
        self
    }
}

impl BreakerProfile {
    fn walk(&mut self, w: &mut impl Walker, at: &str) {
        let f = |name: &str| format!("{at}.{name}");
        w.range(&f("failureThreshold"), &mut self.failure_threshold, 1, 1_000);
        if let Some(d) = &mut self.degradation_threshold {
            w.range(&f("degradationThreshold"), d, 1, 1_000);
            if self.failure_threshold > 1 {
                w.below(&f("degradationThreshold"), d, self.failure_threshold, "failureThreshold");
            } else {
                w.range(&f("degradationThreshold"), d, 1, 1);
            }
        }
        w.range(&f("resetTimeoutMs"), &mut self.reset_timeout_ms, 1_000, DAY_MS);
        w.range(&f("maxResetMultiplier"), &mut self.max_reset_multiplier, 1, 64);
        w.range(&f("escalateAfterCycles"), &mut self.escalate_after_cycles, 0, 100);
        w.range(&f("halfOpenRequests"), &mut self.half_open_requests, 1, 100);
    }
}

impl ProviderCooldownSettings {
    fn walk(&mut self, w: &mut impl Walker, at: &str) {
        let f = |name: &str| format!("{at}.{name}");
        w.range(&f("minRetryCooldownMs"), &mut self.min_retry_cooldown_ms, 0, 300_000);
        w.range(&f("maxRetryCooldownMs"), &mut self.max_retry_cooldown_ms, 0, 3_600_000);
        w.at_least(
            &f("maxRetryCooldownMs"),
            &mut self.max_retry_cooldown_ms,
            self.min_retry_cooldown_ms,
            "minRetryCooldownMs",
        );
        for (class, p) in [("oauth", &mut self.oauth), ("apikey", &mut self.apikey), ("local", &mut self.local)] {
            let f = |name: &str| format!("{at}.{class}.{name}");
            w.range(&f("providerFailureThreshold"), &mut p.provider_failure_threshold, 1, 1_000);
            w.range(&f("providerFailureWindowMs"), &mut p.provider_failure_window_ms, 1_000, DAY_MS);
            w.range(&f("providerCooldownMs"), &mut p.provider_cooldown_ms, 1_000, DAY_MS);
        }
    }
}

impl ModelLockoutSettings {
    fn walk(&mut self, w: &mut impl Walker, at: &str) {
        let f = |name: &str| format!("{at}.{name}");
        w.items(&f("errorCodes"), &mut self.error_codes, |c| status_problem(*c));
        w.unique(&f("errorCodes"), &mut self.error_codes);
        w.non_empty(&f("errorCodes"), &mut self.error_codes, || DEFAULT_LOCKOUT_ERROR_CODES.to_vec());
        w.range(&f("baseCooldownMs"), &mut self.base_cooldown_ms, 5_000, 600_000);
        w.range(&f("maxCooldownMs"), &mut self.max_cooldown_ms, 5_000, 3_600_000);
        w.at_least(&f("maxCooldownMs"), &mut self.max_cooldown_ms, self.base_cooldown_ms, "baseCooldownMs");
        w.range(&f("maxBackoffSteps"), &mut self.max_backoff_steps, 0, 20);
    }

    /// Whether `code` may be added to `errorCodes` (the chip editor).
    pub fn code_problem(code: u64) -> Option<String> {
        status_problem(code)
    }
}

impl ProviderErrorRule {
    /// What is wrong with this rule, if anything.
    pub fn problem(&self) -> Option<String> {
        if let Some(p) = provider_id_problem(&self.provider) {
            return Some(format!("provider {p}"));
        }
        if let Some(p) = status_problem(self.status) {
            return Some(format!("status {p}"));
        }
        let text = self.match_text.trim();
        if text.is_empty() {
            return Some("match must not be empty".into());
        }
        if text.chars().count() > MAX_RULE_MATCH_CHARS {
            return Some(format!("match must be at most {MAX_RULE_MATCH_CHARS} characters"));
        }
        match self.cooldown_ms {
            Some(ms) if !(1_000..=DAY_MS).contains(&ms) => {
                Some(format!("cooldownMs must be between 1000 and {DAY_MS}"))
            }
            _ => None,
        }
    }
}

fn status_problem(code: u64) -> Option<String> {
    (!(100..=599).contains(&code)).then(|| format!("must be an HTTP status between 100 and 599 (got {code})"))
}

/// Empty (off), or `provider/model` with a provider id and a model name.
pub(super) fn emergency_fallback_problem(target: &str) -> Option<String> {
    if target.is_empty() {
        return None;
    }
    let Some((provider, model)) = target.split_once('/') else {
        return Some("must be provider/model, e.g. ollama/llama3.2 (empty turns it off)".to_owned());
    };
    provider_id_problem(provider).map(|p| format!("the provider {p}")).or_else(|| {
        let ok = !model.is_empty() && model.len() <= 128 && !model.chars().any(|c| c.is_whitespace() || c.is_control());
        (!ok).then(|| "the model must be a name without spaces, at most 128 characters".to_owned())
    })
}

fn provider_id_problem(id: &str) -> Option<String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_' || b == b'.');
    (!ok).then(|| "must be a provider id (lowercase letters, digits, - _ .; at most 64)".to_owned())
}
