use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::*;
use crate::types::RateLimitOverrides;

fn with(changes: &[(&str, Value)]) -> ResilienceSettings {
    let mut doc = serde_json::to_value(ResilienceSettings::default()).unwrap();
    for (path, v) in changes {
        set_path(&mut doc, path, v.clone());
    }
    serde_json::from_value(doc).unwrap()
}

fn fields_in_error(s: &ResilienceSettings) -> Vec<String> {
    s.validate().err().unwrap_or_default().into_iter().map(|e| e.field).collect()
}

fn value_at(s: &ResilienceSettings, path: &str) -> Value {
    get_path(&serde_json::to_value(s).unwrap(), path).cloned().unwrap()
}

/// A numeric field: (path, min, max, other fields set so only this one's
/// range is tested).
type Range = (&'static str, u64, u64, &'static [(&'static str, u64)]);

const RANGES: &[Range] = &[
    ("requestQueue.requestsPerMinute", 1, 1_000_000, &[]),
    ("requestQueue.minTimeBetweenRequestsMs", 0, 3_600_000, &[]),
    ("requestQueue.concurrentRequests", 1, 10_000, &[]),
    ("requestQueue.globalConcurrentRequests", 0, 10_000, &[]),
    ("requestQueue.maxWaitMs", 1, 86_400_000, &[]),
    ("requestQueue.executionMaxWaitMs", 1, 86_400_000, &[]),
    ("requestQueue.maxQueueDepth", 0, 100_000, &[]),
    ("connectionCooldown.oauth.baseCooldownMs", 0, 86_400_000, &[]),
    ("connectionCooldown.apikey.baseCooldownMs", 0, 86_400_000, &[]),
    ("connectionCooldown.oauth.maxBackoffSteps", 0, 32, &[]),
    ("connectionCooldown.apikey.maxBackoffSteps", 0, 32, &[]),
    ("providerBreaker.oauth.failureThreshold", 1, 1_000, &[("providerBreaker.oauth.degradationThreshold", 1)]),
    ("providerBreaker.apikey.resetTimeoutMs", 1_000, 86_400_000, &[]),
    ("providerBreaker.local.failureThreshold", 1, 1_000, &[]),
    ("providerBreaker.local.maxResetMultiplier", 1, 64, &[]),
    ("providerBreaker.local.escalateAfterCycles", 0, 100, &[]),
    ("providerBreaker.oauth.halfOpenRequests", 1, 100, &[]),
    ("providerCooldown.minRetryCooldownMs", 0, 300_000, &[]),
    ("providerCooldown.maxRetryCooldownMs", 0, 3_600_000, &[("providerCooldown.minRetryCooldownMs", 0)]),
    ("providerCooldown.apikey.providerFailureThreshold", 1, 1_000, &[]),
    ("providerCooldown.oauth.providerFailureWindowMs", 1_000, 86_400_000, &[]),
    ("providerCooldown.local.providerCooldownMs", 1_000, 86_400_000, &[]),
    ("modelLockout.baseCooldownMs", 5_000, 600_000, &[]),
    ("modelLockout.maxCooldownMs", 5_000, 3_600_000, &[("modelLockout.baseCooldownMs", 5_000)]),
    ("modelLockout.maxBackoffSteps", 0, 20, &[]),
    ("waitForCooldown.maxRetries", 0, 10, &[]),
    ("waitForCooldown.maxRetryWaitSec", 0, 300, &[]),
    ("waitForCooldown.budgetMs", 0, 300_000, &[("waitForCooldown.maxRetryWaitSec", 0)]),
    ("comboCooldownWait.maxWaitMs", 0, 300_000, &[]),
    ("comboCooldownWait.maxAttempts", 0, 10, &[]),
    ("comboCooldownWait.budgetMs", 0, 300_000, &[("comboCooldownWait.maxWaitMs", 0)]),
    ("streamRecovery.throughputWatchdog.warmupMs", 0, 600_000, &[]),
    ("streamRecovery.throughputWatchdog.windowMs", 1_000, 600_000, &[]),
    ("streamRecovery.throughputWatchdog.minUsefulBytesPerSecond", 1, 1_000_000, &[]),
    ("streamRecovery.throughputWatchdog.minUsefulBytes", 1, 1_000_000, &[]),
    ("sessionAffinityTtlMs", 0, 86_400_000, &[]),
];

#[test]
fn defaults_are_the_spec_values_and_valid() {
    let d = ResilienceSettings::default();
    assert_eq!(d.validate(), Ok(()));
    assert_eq!(d.clone().normalize(), d);
    assert_eq!((d.request_queue.max_wait_ms, d.request_queue.execution_max_wait_ms), (30_000, 600_000));
    assert!(!d.stream_stall_cooldown.enabled);
    assert_eq!(d.model_lockout.error_codes, vec![403, 404, 429, 502, 503, 504]);
    assert!(!d.model_lockout.enabled);
    assert_eq!(
        (d.provider_breaker.apikey.failure_threshold, d.provider_breaker.apikey.degradation_threshold),
        (12, Some(7))
    );
    assert_eq!(d.provider_breaker.local.degradation_threshold, None);
    assert_eq!(d.connection_cooldown.apikey.base_cooldown_ms, 3_000);
    assert_eq!(d.provider_cooldown.apikey.provider_failure_window_ms, 30 * 60_000);
    assert_eq!(d.egress_ip_lock_providers, vec!["opencode-go", "opencode-cli"]);
}

#[test]
fn every_numeric_field_is_checked_and_clamped_at_both_ends() {
    for &(path, min, max, setup) in RANGES {
        let base: Vec<(&str, Value)> = setup.iter().map(|(p, v)| (*p, json!(v))).collect();
        for ok in [min, max] {
            let s = with(&[base.clone(), vec![(path, json!(ok))]].concat());
            assert_eq!(s.validate(), Ok(()), "{path}={ok} must be valid");
        }
        let mut bad = vec![(max + 1, max)];
        if min > 0 {
            bad.push((min - 1, min));
        }
        for (value, clamped) in bad {
            let s = with(&[base.clone(), vec![(path, json!(value))]].concat());
            assert!(fields_in_error(&s).contains(&path.to_owned()), "{path}={value} must be refused");
            assert_eq!(value_at(&s.normalize(), path), json!(clamped), "{path}={value} clamps");
        }
    }
}

#[test]
fn degradation_must_stay_below_the_failure_threshold() {
    let s = with(&[("providerBreaker.oauth.degradationThreshold", json!(8))]);
    assert_eq!(fields_in_error(&s), vec!["providerBreaker.oauth.degradationThreshold"]);
    assert_eq!(s.normalize().provider_breaker.oauth.degradation_threshold, Some(7));
    // A threshold of 1 leaves only 1 for degradation.
    let s = with(&[("providerBreaker.apikey.failureThreshold", json!(1))]);
    assert_eq!(fields_in_error(&s), vec!["providerBreaker.apikey.degradationThreshold"]);
    assert_eq!(s.normalize().provider_breaker.apikey.degradation_threshold, Some(1));
    // `null` means "degrade only when opening".
    let s = with(&[("providerBreaker.oauth.degradationThreshold", Value::Null)]);
    assert_eq!(s.validate(), Ok(()));
}

#[test]
fn cross_field_minimums_are_enforced() {
    let cases = [
        (("modelLockout.baseCooldownMs", 300_000), ("modelLockout.maxCooldownMs", 200_000), 300_000),
        (("providerCooldown.minRetryCooldownMs", 60_000), ("providerCooldown.maxRetryCooldownMs", 30_000), 60_000),
        (("comboCooldownWait.maxWaitMs", 120_000), ("comboCooldownWait.budgetMs", 100_000), 120_000),
        (("waitForCooldown.maxRetryWaitSec", 200), ("waitForCooldown.budgetMs", 150_000), 200_000),
    ];
    for ((floor_path, floor), (path, value), clamped) in cases {
        let s = with(&[(floor_path, json!(floor)), (path, json!(value))]);
        let errors = s.validate().unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, path);
        assert!(errors[0].message.contains("must be at least"), "{}", errors[0].message);
        assert_eq!(value_at(&s.normalize(), path), json!(clamped));
    }
}

#[test]
fn zero_limits_mean_off() {
    let s = with(&[("comboCooldownWait.maxWaitMs", json!(0)), ("waitForCooldown.maxRetries", json!(0))]);
    assert_eq!(s.validate(), Ok(()));
    assert!(!s.combo_cooldown_wait.is_active() && !s.wait_for_cooldown.is_active());
    assert!(ResilienceSettings::default().combo_cooldown_wait.is_active());
    let s = with(&[("comboCooldownWait.maxAttempts", json!(0)), ("waitForCooldown.maxRetryWaitSec", json!(0))]);
    assert!(!s.combo_cooldown_wait.is_active() && !s.wait_for_cooldown.is_active());
}

#[test]
fn lockout_error_codes_are_http_statuses_without_repeats() {
    let s = with(&[("modelLockout.errorCodes", json!([429, 99, 600, 429]))]);
    assert_eq!(
        fields_in_error(&s),
        vec!["modelLockout.errorCodes.1", "modelLockout.errorCodes.2", "modelLockout.errorCodes.3"]
    );
    assert_eq!(s.normalize().model_lockout.error_codes, vec![429]);
    let s = with(&[("modelLockout.errorCodes", json!([]))]);
    assert_eq!(fields_in_error(&s), vec!["modelLockout.errorCodes"]);
    assert_eq!(s.normalize().model_lockout.error_codes, DEFAULT_LOCKOUT_ERROR_CODES.to_vec());
    assert_eq!(ModelLockoutSettings::code_problem(100), None);
    assert!(ModelLockoutSettings::code_problem(600).is_some());
}

#[test]
fn operator_rules_are_checked_one_by_one() {
    let rule = |provider: &str, status: u64, m: &str, cooldown: Option<u64>| json!({"provider": provider, "status": status, "match": m, "scope": "model", "cooldownMs": cooldown});
    let s = with(&[(
        "providerErrorRules",
        json!([
            rule("glm", 400, "model is unavailable", Some(60_000)),
            rule("", 400, "x", None),
            rule("glm", 700, "x", None),
            rule("glm", 400, "  ", None),
            rule("glm", 400, "x", Some(10)),
        ]),
    )]);
    let errors = s.validate().unwrap_err();
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        ["providerErrorRules.1", "providerErrorRules.2", "providerErrorRules.3", "providerErrorRules.4"]
    );
    assert!(errors[0].message.starts_with("provider"));
    assert!(errors[1].message.starts_with("status"));
    assert_eq!(s.normalize().provider_error_rules.len(), 1);
    let many = Value::Array((0..51).map(|i| rule("glm", 400, &format!("m{i}"), None)).collect());
    let s = with(&[("providerErrorRules", many)]);
    assert_eq!(fields_in_error(&s), vec!["providerErrorRules"]);
    assert_eq!(s.normalize().provider_error_rules.len(), rules::MAX_PROVIDER_ERROR_RULES);
}

#[test]
fn egress_providers_are_ids() {
    let s = with(&[("egressIpLockProviders", json!(["opencode-go", "Bad Id", "opencode-go"]))]);
    assert_eq!(fields_in_error(&s), vec!["egressIpLockProviders.1", "egressIpLockProviders.2"]);
    assert_eq!(s.normalize().egress_ip_lock_providers, vec!["opencode-go"]);
}

#[test]
fn the_emergency_fallback_is_empty_or_provider_slash_model() {
    for ok in ["", "ollama/llama3.2", "openrouter/meta-llama/llama-3.3-70b"] {
        assert!(fields_in_error(&with(&[("emergencyFallback", json!(ok))])).is_empty(), "{ok}");
    }
    for bad in ["ollama", "Ollama/x", "ollama/", "ollama/two words", "/x"] {
        let s = with(&[("emergencyFallback", json!(bad))]);
        assert_eq!(fields_in_error(&s), vec!["emergencyFallback"], "{bad}");
        assert_eq!(s.normalize().emergency_fallback, "", "normalization turns a bad one off");
    }
}

#[test]
fn a_choice_field_takes_only_its_names() {
    let fields = [("fallbackStrategy", FieldKind::Choice(&ConnectionStrategy::NAMES))];
    let values = |v: &str| [("fallbackStrategy".to_owned(), v.to_owned())].into_iter().collect();
    assert_eq!(form_to_patch(&fields, &values("p2c")).unwrap(), json!({"fallbackStrategy": "p2c"}));
    let errors = form_to_patch(&fields, &values("cheapest")).unwrap_err();
    assert_eq!(errors[0].message, "must be one of fill-first, round-robin, p2c, random, least-used");
    for s in ConnectionStrategy::ALL {
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
}

/// Normalization yields valid settings, and leaves valid ones alone:
/// the PATCH check and the clamp can never disagree.
#[test]
fn normalize_and_validate_agree_on_random_settings() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..500 {
        let mut changes: Vec<(&str, Value)> = Vec::new();
        for &(path, _, max, _) in RANGES {
            if next() % 3 == 0 {
                changes.push((path, json!(next() % (max * 2 + 2))));
            }
        }
        let s = with(&changes);
        let n = s.clone().normalize();
        assert_eq!(n.validate(), Ok(()), "normalized {changes:?}");
        if s.validate().is_ok() {
            assert_eq!(n, s, "a valid document must not change: {changes:?}");
        }
    }
}

fn env(pairs: &[(&str, &str)]) -> Vec<EnvSource> {
    let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    read_env(|k| map.get(k).cloned()).unwrap()
}

/// The precedence ladder, one rung at a time, for one field of every group
/// the environment can set.
#[test]
fn precedence_default_then_env_then_persisted() {
    let cases: &[(&str, &str, &str, Value, Value)] = &[
        (
            "OMNIROUTE_CIRCUIT_BREAKER_OAUTH_THRESHOLD",
            "20",
            "providerBreaker.oauth.failureThreshold",
            json!(20),
            json!(30),
        ),
        (
            "OMNIROUTE_CIRCUIT_BREAKER_LOCAL_RESET_MS",
            "5000",
            "providerBreaker.local.resetTimeoutMs",
            json!(5_000),
            json!(9_000),
        ),
        (
            "OMNIROUTE_CIRCUIT_BREAKER_API_KEY_RESET_MS",
            "45000",
            "providerBreaker.apikey.resetTimeoutMs",
            json!(45_000),
            json!(9_000),
        ),
        (
            "OMNIROUTE_PROVIDER_BREAKER_API_KEY_COOLDOWN_MS",
            "120000",
            "providerCooldown.apikey.providerCooldownMs",
            json!(120_000),
            json!(7_000),
        ),
        (
            "OMNIROUTE_PROVIDER_BREAKER_OAUTH_FAILURE_WINDOW_MS",
            "60000",
            "providerCooldown.oauth.providerFailureWindowMs",
            json!(60_000),
            json!(7_000),
        ),
        ("PROVIDER_COOLDOWN_ENABLED", "on", "providerCooldown.enabled", json!(true), json!(false)),
        ("RATE_LIMIT_MAX_WAIT_MS", "15000", "requestQueue.maxWaitMs", json!(15_000), json!(20_000)),
        ("RATE_LIMIT_EXECUTION_MAX_WAIT_MS", "90000", "requestQueue.executionMaxWaitMs", json!(90_000), json!(20_000)),
        ("RATE_LIMIT_MAX_QUEUE_DEPTH", "50", "requestQueue.maxQueueDepth", json!(50), json!(7)),
        (
            "STREAM_THROUGHPUT_WATCHDOG_ENABLED",
            "true",
            "streamRecovery.throughputWatchdog.enabled",
            json!(true),
            json!(false),
        ),
        (
            "OMNIROUTE_EGRESS_IP_LOCK_PROVIDERS",
            "glm, minimax",
            "egressIpLockProviders",
            json!(["glm", "minimax"]),
            json!(["x"]),
        ),
    ];
    for (var, raw, field, env_value, stored_value) in cases {
        let default = value_at(&ResilienceSettings::default(), field);
        assert_ne!(&default, env_value, "{var}: the env value must differ from the default");
        // Rung 1: default.
        assert_eq!(value_at(&effective(&[], &json!({})).0, field), default, "{var}");
        // Rung 2: env beats the default.
        let e = env(&[(var, raw)]);
        assert_eq!(e[0].field, *field);
        assert!(!e[0].wins);
        assert_eq!(value_at(&effective(&e, &json!({})).0, field), *env_value, "{var}");
        // Rung 3: a persisted value beats env.
        let mut stored = json!({});
        set_path(&mut stored, field, stored_value.clone());
        assert_eq!(value_at(&effective(&e, &stored).0, field), *stored_value, "{var}");
    }
}

#[test]
fn auto_enable_env_beats_the_persisted_value() {
    let stored = json!({"requestQueue": {"autoEnableApiKeyProviders": true}});
    assert!(effective(&[], &stored).0.request_queue.auto_enable_api_key_providers);
    for (raw, expected) in [("false", false), ("0", false), ("off", false), ("1", true)] {
        let e = env(&[("RATE_LIMIT_AUTO_ENABLE", raw)]);
        assert!(e[0].wins);
        let stored = json!({"requestQueue": {"autoEnableApiKeyProviders": !expected}});
        assert_eq!(effective(&e, &stored).0.request_queue.auto_enable_api_key_providers, expected, "{raw}");
    }
    // …and a PATCH of it is refused while the variable is set.
    let e = env(&[("RATE_LIMIT_AUTO_ENABLE", "false")]);
    let current = effective(&e, &json!({})).0;
    let err = apply_patch(&current, &json!({"requestQueue": {"autoEnableApiKeyProviders": true}}), &e).unwrap_err();
    assert_eq!(err[0].field, "requestQueue.autoEnableApiKeyProviders");
    assert!(err[0].message.contains("RATE_LIMIT_AUTO_ENABLE"));
}

#[test]
fn egress_env_none_empties_the_list() {
    for raw in ["none", "off"] {
        let e = env(&[("OMNIROUTE_EGRESS_IP_LOCK_PROVIDERS", raw)]);
        assert!(effective(&e, &json!({})).0.egress_ip_lock_providers.is_empty());
    }
}

#[test]
fn env_values_out_of_range_are_clamped_and_typos_named() {
    let e = env(&[("OMNIROUTE_CIRCUIT_BREAKER_OAUTH_THRESHOLD", "3"), ("RATE_LIMIT_MAX_QUEUE_DEPTH", "999999999")]);
    let s = effective(&e, &json!({})).0;
    assert_eq!(s.request_queue.max_queue_depth, 100_000);
    // The default degradation (5) is pulled below the lower threshold.
    assert_eq!(s.provider_breaker.oauth.degradation_threshold, Some(2));
    let err = read_env(|k| (k == "PROVIDER_COOLDOWN_ENABLED").then(|| "maybe".to_owned())).unwrap_err();
    assert_eq!(err.field, "PROVIDER_COOLDOWN_ENABLED");
}

#[test]
fn the_emergency_fallback_variable_takes_a_target_or_a_flag_and_names_anything_else() {
    let target = |raw: &str| {
        let sources = read_env(|k| (k == "OMNIROUTE_EMERGENCY_FALLBACK").then(|| raw.to_owned()));
        sources.map(|s| effective(&s, &json!({"emergencyFallback": "ollama/saved"})).0.emergency_fallback)
    };
    let fresh = |raw: &str| effective(&env(&[("OMNIROUTE_EMERGENCY_FALLBACK", raw)]), &json!({})).0.emergency_fallback;
    assert_eq!(fresh("groq/llama-3.3-70b"), "groq/llama-3.3-70b");
    for off in ["off", "none", "false", "0"] {
        assert_eq!(fresh(off), "", "{off}");
    }
    // A migrated configuration's `true`: the saved target, never a silent off.
    let on = env(&[("OMNIROUTE_EMERGENCY_FALLBACK", "true")]);
    assert!(on.iter().any(turns_on_saved));
    assert_eq!(target("true").unwrap(), "ollama/saved");
    assert_eq!(fresh("true"), "", "nothing saved: load refuses to start on this");
    for unreadable in ["maybe", "ollama", "Ollama/x", "ollama/two words"] {
        let err = target(unreadable).unwrap_err();
        assert_eq!(err.field, "OMNIROUTE_EMERGENCY_FALLBACK", "{unreadable}");
        assert!(err.message.contains("provider/model"), "{}", err.message);
    }
}

#[test]
fn per_connection_overrides_beat_the_global_queue_settings() {
    let global = effective(&env(&[("RATE_LIMIT_MAX_WAIT_MS", "15000")]), &json!({})).0.request_queue;
    assert_eq!(global.for_connection(&RateLimitOverrides::default()), global);
    let o = RateLimitOverrides {
        max_wait_ms: Some(5_000),
        execution_max_wait_ms: Some(100_000_000),
        rpm: Some(10),
        max_concurrent: Some(2),
        min_time_between_requests_ms: Some(0),
        ..Default::default()
    };
    let c = global.for_connection(&o);
    assert_eq!((c.max_wait_ms, c.requests_per_minute, c.concurrent_requests), (5_000, 10, 2));
    assert_eq!(c.min_time_between_requests_ms, 0);
    assert_eq!(c.execution_max_wait_ms, rules::DAY_MS, "clamped into the global range");
}

#[test]
fn a_stored_document_that_no_longer_fits_is_normalized() {
    let stored = json!({"modelLockout": {"baseCooldownMs": 1, "errorCodes": []}});
    let s = effective(&[], &stored).0;
    assert_eq!(s.model_lockout.base_cooldown_ms, 5_000);
    assert_eq!(s.model_lockout.error_codes, DEFAULT_LOCKOUT_ERROR_CODES.to_vec());
}

#[test]
fn an_unreadable_stored_field_falls_back_alone() {
    let stored = json!({"comboCooldownWait": {"maxWaitMs": "soon", "maxAttempts": 3}, "retired": {"x": 1}});
    let (s, dropped) = effective(&env(&[]), &stored);
    assert_eq!((s.combo_cooldown_wait.max_wait_ms, s.combo_cooldown_wait.max_attempts), (90_000, 3));
    let fields: Vec<&str> = dropped.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["comboCooldownWait.maxWaitMs", "retired"]);
}

/// Reference §5 items 16, 35 and 40, in this schema.
#[test]
fn reference_normalization_cases() {
    let merged = effective(
        &[],
        &json!({"providerBreaker": {"oauth": {"failureThreshold": 5, "degradationThreshold": 9}, "apikey": {"failureThreshold": 1, "degradationThreshold": 9}}}),
    )
    .0;
    assert_eq!(merged.provider_breaker.oauth.degradation_threshold, Some(4));
    assert_eq!(merged.provider_breaker.apikey.degradation_threshold, Some(1));
    let breaker = |ft: u64, dt: u64| {
        with(&[
            ("providerBreaker.oauth.failureThreshold", json!(ft)),
            ("providerBreaker.oauth.degradationThreshold", json!(dt)),
        ])
        .validate()
        .is_ok()
    };
    assert!(!breaker(5, 5));
    assert!(breaker(1000, 999));
    assert!(!breaker(1001, 5));
    let lockout = effective(
        &[],
        &json!({"modelLockout": {"baseCooldownMs": 1000, "maxCooldownMs": 2000, "maxBackoffSteps": 25, "errorCodes": [99, 700, 429]}}),
    )
    .0
    .model_lockout;
    assert_eq!((lockout.base_cooldown_ms, lockout.max_cooldown_ms, lockout.max_backoff_steps), (5_000, 5_000, 20));
    assert_eq!(lockout.error_codes, vec![429]);
    let combo = |doc: Value| effective(&[], &json!({"comboCooldownWait": doc})).0.combo_cooldown_wait;
    assert_eq!(combo(json!({"maxWaitMs": 999_999})).max_wait_ms, 300_000);
    assert_eq!(combo(json!({"maxWaitMs": 5_000, "budgetMs": 100})).budget_ms, 5_000);
    assert!(!combo(json!({"maxWaitMs": 0})).is_active());
    let garbage = combo(json!({"maxWaitMs": "x", "maxAttempts": null, "budgetMs": []}));
    assert_eq!((garbage.max_wait_ms, garbage.max_attempts, garbage.budget_ms), (90_000, 5, 300_000));
}

#[test]
fn patches_are_partial_strict_and_validated() {
    let current = ResilienceSettings::default();
    let next = apply_patch(&current, &json!({"requestQueue": {"maxQueueDepth": 10}}), &[]).unwrap();
    assert_eq!(next.request_queue.max_queue_depth, 10);
    assert_eq!(next.request_queue.max_wait_ms, 30_000, "untouched fields keep their value");
    let field = |patch: Value| apply_patch(&current, &patch, &[]).unwrap_err()[0].field.clone();
    assert_eq!(field(json!({"requestQueue": {"maxQueueDepht": 1}})), "requestQueue.maxQueueDepht");
    assert_eq!(field(json!({"bogus": 1})), "bogus");
    assert_eq!(field(json!({"requestQueue": {"maxWaitMs": "soon"}})), "requestQueue.maxWaitMs");
    assert_eq!(field(json!({"requestQueue": {"maxWaitMs": -1}})), "requestQueue.maxWaitMs");
    assert_eq!(field(json!({"requestQueue": {"maxWaitMs": 0}})), "requestQueue.maxWaitMs");
    assert_eq!(
        field(json!({"providerErrorRules": [{"provider": "glm", "status": 400, "match": "x", "scope": "everything"}]})),
        "providerErrorRules.0.scope"
    );
    assert_eq!(field(json!({})), "body");
    assert_eq!(field(json!([1])), "body");
    // `null` unsets an optional field.
    let unset = json!({"providerBreaker": {"apikey": {"degradationThreshold": null}}});
    assert_eq!(apply_patch(&current, &unset, &[]).unwrap().provider_breaker.apikey.degradation_threshold, None);
    // A setting of the original that means nothing here is refused by name, with why.
    let hints = json!({"connectionCooldown": {"oauth": {"useUpstream429BreakerHints": true}}});
    let refused = apply_patch(&current, &hints, &[]).unwrap_err();
    assert_eq!(refused[0].field, "connectionCooldown.oauth.useUpstream429BreakerHints");
    assert!(refused[0].message.contains("never counts against the provider breaker"), "{}", refused[0].message);
}

const LOCKOUT_FORM: [(&str, FieldKind); 3] = [
    ("modelLockout.enabled", FieldKind::Bool),
    ("modelLockout.errorCodes", FieldKind::Codes),
    ("modelLockout.baseCooldownMs", FieldKind::Int),
];

#[test]
fn form_text_round_trips_through_a_patch() {
    let doc = serde_json::to_value(ResilienceSettings::default()).unwrap();
    let mut values = form_values(&LOCKOUT_FORM, &doc);
    assert_eq!(values["modelLockout.errorCodes"], "403, 404, 429, 502, 503, 504");
    assert_eq!(values["modelLockout.enabled"], "false");
    assert_eq!(values["modelLockout.baseCooldownMs"], "2 min");
    values.insert("modelLockout.enabled".into(), "true".into());
    values.insert("modelLockout.errorCodes".into(), "429 503".into());
    let patch = form_to_patch(&LOCKOUT_FORM, &values).unwrap();
    assert_eq!(patch, json!({"modelLockout": {"enabled": true, "errorCodes": [429, 503], "baseCooldownMs": 120000}}));
    // An unchecked checkbox is simply absent.
    values.remove("modelLockout.enabled");
    assert_eq!(form_to_patch(&LOCKOUT_FORM, &values).unwrap()["modelLockout"]["enabled"], json!(false));
}

#[test]
fn form_text_that_is_not_a_number_is_named() {
    let mut values = BTreeMap::new();
    values.insert("modelLockout.errorCodes".to_owned(), "429, abc".to_owned());
    values.insert("modelLockout.baseCooldownMs".to_owned(), "".to_owned());
    let errors = form_to_patch(&LOCKOUT_FORM, &values).unwrap_err();
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["modelLockout.errorCodes", "modelLockout.baseCooldownMs"]);
}

#[test]
fn rule_rows_become_rules_and_blank_rows_are_skipped() {
    const RULES: [(&str, FieldKind); 1] = [("providerErrorRules", FieldKind::Rules)];
    let rules = json!({"providerErrorRules": [
        {"provider": "glm", "status": 400, "match": "unavailable", "scope": "model", "reason": "server_error", "cooldownMs": 60000}
    ]});
    let mut values = form_values(&RULES, &rules);
    assert_eq!(rule_rows("providerErrorRules", &values), 1);
    for key in ["provider", "status", "match", "scope", "reason", "cooldownMs"] {
        values.insert(format!("providerErrorRules.1.{key}"), String::new());
    }
    assert_eq!(rule_rows("providerErrorRules", &values), 2);
    assert_eq!(form_to_patch(&RULES, &values).unwrap(), rules);
    values.insert("providerErrorRules.1.provider".into(), "openrouter".into());
    values.insert("providerErrorRules.1.status".into(), "4o2".into());
    assert_eq!(form_to_patch(&RULES, &values).unwrap_err()[0].field, "providerErrorRules.1.status");
}

#[test]
fn durations_are_typed_with_units_and_shown_in_the_largest_exact_one() {
    assert_eq!(duration_ms("30000"), Ok(30_000));
    assert_eq!(duration_ms("30 s"), Ok(30_000));
    assert_eq!(duration_ms("1.5s"), Ok(1_500));
    assert_eq!(duration_ms("10 min"), Ok(600_000));
    assert_eq!(duration_ms("2 h"), Ok(7_200_000));
    assert_eq!(duration_ms("250 ms"), Ok(250));
    assert!(duration_ms("3 weeks").unwrap_err().contains("unknown unit"));
    assert!(duration_ms("1.5").is_err(), "a fraction of a millisecond");
    assert_eq!(duration_ms(".25 s"), Ok(250));
    assert_eq!(duration_ms("1.0005 min"), Ok(60_030));
    assert!(duration_ms("1.0005 s").unwrap_err().contains("whole number of milliseconds"));
    assert!(duration_ms("1.2.3 s").is_err() && duration_ms(". s").is_err());
    assert!(duration_ms("99999999999999999 d").is_err(), "beyond u64");
    assert!(duration_ms("").is_err());
    assert_eq!(
        [0, 1_500, 30_000, 600_000, 7_200_000, 86_400_000].map(human_ms),
        ["0", "1500 ms", "30 s", "10 min", "2 h", "1 d"]
    );
    // A card's form takes the unit too.
    let fields = [("requestQueue.maxWaitMs", FieldKind::Int), ("requestQueue.requestsPerMinute", FieldKind::Int)];
    let values = [("requestQueue.maxWaitMs", "2 min"), ("requestQueue.requestsPerMinute", "60")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    assert_eq!(
        form_to_patch(&fields, &values).unwrap(),
        json!({"requestQueue": {"maxWaitMs": 120000, "requestsPerMinute": 60}})
    );
    let values = [("requestQueue.requestsPerMinute", "1 min")].map(|(k, v)| (k.to_owned(), v.to_owned())).into();
    assert!(form_to_patch(&fields[1..], &values).is_err(), "only durations take units");
}
