//! Where each effective setting comes from. Precedence, lowest first:
//! built-in default < environment < persisted (`key_value`) < per
//! connection override. One exception the SPEC names: `RATE_LIMIT_AUTO_ENABLE`
//! beats the persisted value.
//!
//! The persisted layer is *sparse*: only what an operator changed is
//! stored, so a value still at its default keeps following the env.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{RequestQueueSettings, ResilienceSettings};
use crate::types::{RateLimitOverrides, validation::FieldError};

/// One environment variable that sets a field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvSource {
    /// Dotted camelCase path, as in field errors (`requestQueue.maxWaitMs`).
    pub field: String,
    pub variable: String,
    pub value: Value,
    /// The env value beats the persisted one; otherwise it only replaces
    /// the built-in default.
    pub wins: bool,
}

#[derive(Clone, Copy)]
enum EnvKind {
    Int,
    Bool,
    /// Comma-separated ids; `none`/`off`/`false`/`0` mean an empty list.
    List,
    /// The emergency fallback: `provider/model`; `none`/`off`/`false`/`0`
    /// mean off; `true`/`1`/`on`/`yes` (a migrated configuration's flag)
    /// turn on the target saved in the dashboard (see [`turns_on_saved`]).
    Target,
}

/// Every environment variable that feeds the resilience settings.
const ENV_BINDINGS: [(&str, &str, EnvKind); 22] = [
    ("OMNIROUTE_CIRCUIT_BREAKER_OAUTH_THRESHOLD", "providerBreaker.oauth.failureThreshold", EnvKind::Int),
    ("OMNIROUTE_CIRCUIT_BREAKER_OAUTH_RESET_MS", "providerBreaker.oauth.resetTimeoutMs", EnvKind::Int),
    ("OMNIROUTE_CIRCUIT_BREAKER_API_KEY_THRESHOLD", "providerBreaker.apikey.failureThreshold", EnvKind::Int),
    ("OMNIROUTE_CIRCUIT_BREAKER_API_KEY_RESET_MS", "providerBreaker.apikey.resetTimeoutMs", EnvKind::Int),
    ("OMNIROUTE_CIRCUIT_BREAKER_LOCAL_THRESHOLD", "providerBreaker.local.failureThreshold", EnvKind::Int),
    ("OMNIROUTE_CIRCUIT_BREAKER_LOCAL_RESET_MS", "providerBreaker.local.resetTimeoutMs", EnvKind::Int),
    (
        "OMNIROUTE_PROVIDER_BREAKER_OAUTH_FAILURE_THRESHOLD",
        "providerCooldown.oauth.providerFailureThreshold",
        EnvKind::Int,
    ),
    (
        "OMNIROUTE_PROVIDER_BREAKER_OAUTH_FAILURE_WINDOW_MS",
        "providerCooldown.oauth.providerFailureWindowMs",
        EnvKind::Int,
    ),
    ("OMNIROUTE_PROVIDER_BREAKER_OAUTH_COOLDOWN_MS", "providerCooldown.oauth.providerCooldownMs", EnvKind::Int),
    (
        "OMNIROUTE_PROVIDER_BREAKER_API_KEY_FAILURE_THRESHOLD",
        "providerCooldown.apikey.providerFailureThreshold",
        EnvKind::Int,
    ),
    (
        "OMNIROUTE_PROVIDER_BREAKER_API_KEY_FAILURE_WINDOW_MS",
        "providerCooldown.apikey.providerFailureWindowMs",
        EnvKind::Int,
    ),
    ("OMNIROUTE_PROVIDER_BREAKER_API_KEY_COOLDOWN_MS", "providerCooldown.apikey.providerCooldownMs", EnvKind::Int),
    ("PROVIDER_COOLDOWN_ENABLED", "providerCooldown.enabled", EnvKind::Bool),
    ("PROVIDER_COOLDOWN_MIN_MS", "providerCooldown.minRetryCooldownMs", EnvKind::Int),
    ("PROVIDER_COOLDOWN_MAX_MS", "providerCooldown.maxRetryCooldownMs", EnvKind::Int),
    ("RATE_LIMIT_MAX_WAIT_MS", "requestQueue.maxWaitMs", EnvKind::Int),
    ("RATE_LIMIT_EXECUTION_MAX_WAIT_MS", "requestQueue.executionMaxWaitMs", EnvKind::Int),
    ("RATE_LIMIT_MAX_QUEUE_DEPTH", "requestQueue.maxQueueDepth", EnvKind::Int),
    ("RATE_LIMIT_AUTO_ENABLE", "requestQueue.autoEnableApiKeyProviders", EnvKind::Bool),
    ("STREAM_THROUGHPUT_WATCHDOG_ENABLED", "streamRecovery.throughputWatchdog.enabled", EnvKind::Bool),
    ("OMNIROUTE_EGRESS_IP_LOCK_PROVIDERS", "egressIpLockProviders", EnvKind::List),
    ("OMNIROUTE_EMERGENCY_FALLBACK", "emergencyFallback", EnvKind::Target),
];

/// The one variable whose value beats the persisted setting (§R5).
const ENV_WINS: &str = "RATE_LIMIT_AUTO_ENABLE";

/// Reads every resilience variable `get` knows. A malformed value is an
/// error naming the variable, so a typo fails the start loudly.
pub fn read_env(get: impl Fn(&str) -> Option<String>) -> Result<Vec<EnvSource>, FieldError> {
    let mut sources = Vec::new();
    for (variable, field, kind) in ENV_BINDINGS {
        let Some(raw) = get(variable).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) else { continue };
        let value = match kind {
            EnvKind::Int => raw.parse::<u64>().ok().map(Value::from),
            EnvKind::Bool => parse_bool(&raw).map(Value::Bool),
            EnvKind::List => Some(parse_list(&raw)),
            EnvKind::Target => match parse_bool(&raw) {
                Some(on) => Some(if on { Value::Bool(true) } else { Value::from("") }),
                None if raw.eq_ignore_ascii_case("none") => Some(Value::from("")),
                None => super::rules::emergency_fallback_problem(&raw).is_none().then(|| Value::String(raw.clone())),
            },
        };
        let Some(value) = value else {
            let expected = match kind {
                EnvKind::Bool => "true/false",
                EnvKind::Target => {
                    "provider/model (e.g. ollama/llama3.2), true (the target saved in the dashboard) or off"
                }
                _ => "a non-negative integer",
            };
            return Err(FieldError::new(variable, format!("expected {expected}, got {raw:?}")));
        };
        sources.push(EnvSource { field: field.into(), variable: variable.into(), value, wins: variable == ENV_WINS });
    }
    Ok(sources)
}

/// `OMNIROUTE_EMERGENCY_FALLBACK=true`: no target of its own, it asks for
/// the one saved in the dashboard — the start fails when none is saved.
pub fn turns_on_saved(source: &EnvSource) -> bool {
    source.field == "emergencyFallback" && source.value == Value::Bool(true)
}

/// A boolean as the environment spells it: `true/1/on/yes`, `false/0/off/no`.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => Some(true),
        "false" | "0" | "off" | "no" => Some(false),
        _ => None,
    }
}

fn parse_list(raw: &str) -> Value {
    if matches!(raw.to_ascii_lowercase().as_str(), "none" | "off" | "false" | "0") {
        return Value::Array(Vec::new());
    }
    raw.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| Value::String(s.to_owned())).collect()
}

/// The effective settings: defaults, then `env`, then the sparse
/// `persisted` document, then the env values that win; normalized so a
/// stale or hand-edited stored value can never escape its range. A stored
/// field that no longer parses (unknown key, wrong type) is dropped, so it
/// falls back to the env/default value; the dropped fields are returned
/// for the log.
pub fn effective(env: &[EnvSource], persisted: &Value) -> (ResilienceSettings, Vec<FieldError>) {
    let mut persisted = persisted.clone();
    let mut dropped = Vec::new();
    loop {
        let mut doc = to_value(&ResilienceSettings::default());
        for source in env.iter().filter(|s| !s.wins && !turns_on_saved(s)) {
            set_path(&mut doc, &source.field, source.value.clone());
        }
        merge(&mut doc, &persisted);
        for source in env.iter().filter(|s| s.wins) {
            set_path(&mut doc, &source.field, source.value.clone());
        }
        match from_value(doc) {
            Ok(settings) => return (settings.normalize(), dropped),
            Err(mut errors) => {
                let bad = errors.remove(0);
                if !remove_path(&mut persisted, &bad.field) {
                    // Not from the stored document: env values are typed.
                    return (ResilienceSettings::default(), vec![bad]);
                }
                dropped.push(bad);
            }
        }
    }
}

/// Settings of the original that nothing here could honour, refused by
/// name with the reason (a stored copy is dropped like any unknown field).
const UNSUPPORTED: [(&str, &str); 2] = [
    ("connectionCooldown.oauth.useUpstream429BreakerHints", NO_429_BREAKER_HINTS),
    ("connectionCooldown.apikey.useUpstream429BreakerHints", NO_429_BREAKER_HINTS),
];

const NO_429_BREAKER_HINTS: &str = "is not supported: a 429 never counts against the provider breaker here, so its hints \
     cannot hold the breaker; a rate-limited or exhausted connection cools by its own retry hints \
     (useUpstreamRetryHints)";

/// `current` with a partial `patch` applied, if the result is valid. The
/// dashboard runs this on every keystroke and the server on every PATCH:
/// unknown keys, wrong types, out-of-range values, broken cross-field
/// rules and fields pinned by a winning env variable are all refused with
/// the field named.
pub fn apply_patch(
    current: &ResilienceSettings,
    patch: &Value,
    env: &[EnvSource],
) -> Result<ResilienceSettings, Vec<FieldError>> {
    match patch.as_object() {
        None => return Err(vec![FieldError::new("body", "must be a JSON object")]),
        Some(o) if o.is_empty() => return Err(vec![FieldError::new("body", "must change at least one setting")]),
        Some(_) => {}
    }
    let pinned: Vec<FieldError> = env
        .iter()
        .filter(|s| s.wins && get_path(patch, &s.field).is_some())
        .map(|s| FieldError::new(&s.field, format!("set by env {}; unset it to change this here", s.variable)))
        .collect();
    if !pinned.is_empty() {
        return Err(pinned);
    }
    let unsupported: Vec<FieldError> = UNSUPPORTED
        .iter()
        .filter(|(path, _)| get_path(patch, path).is_some())
        .map(|(path, why)| FieldError::new(*path, *why))
        .collect();
    if !unsupported.is_empty() {
        return Err(unsupported);
    }
    let mut doc = to_value(current);
    merge(&mut doc, patch);
    let next = from_value(doc)?;
    next.validate()?;
    Ok(next)
}

impl RequestQueueSettings {
    /// The queue settings of one connection: its `rateLimitOverrides`
    /// (rpm, min time, max concurrent, queue and execution waits) win over
    /// the global values, clamped into the same ranges.
    pub fn for_connection(&self, overrides: &RateLimitOverrides) -> Self {
        Self {
            requests_per_minute: overrides.rpm.map_or(self.requests_per_minute, u64::from),
            min_time_between_requests_ms: overrides
                .min_time_between_requests_ms
                .unwrap_or(self.min_time_between_requests_ms),
            concurrent_requests: overrides.max_concurrent.map_or(self.concurrent_requests, u64::from),
            max_wait_ms: overrides.max_wait_ms.unwrap_or(self.max_wait_ms),
            execution_max_wait_ms: overrides.execution_max_wait_ms.unwrap_or(self.execution_max_wait_ms),
            ..self.clone()
        }
        .normalized()
    }
}

/// Deep-merges `patch` into `target`: objects merge key by key; anything
/// else (numbers, lists, `null`) replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// Sets the dotted `path` in `doc`, creating objects on the way.
pub fn set_path(doc: &mut Value, path: &str, value: Value) {
    let mut slot = doc;
    for key in path.split('.') {
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(map) = slot else { return };
        slot = map.entry(key.to_owned()).or_insert(Value::Null);
    }
    *slot = value;
}

/// Removes the dotted `path` from `doc`; whether it was there.
fn remove_path(doc: &mut Value, path: &str) -> bool {
    let (parent, last) = match path.rsplit_once('.') {
        Some((parent, last)) => (parent.split('.').try_fold(&mut *doc, |v, key| v.get_mut(key)), last),
        None => (Some(doc), path),
    };
    parent.and_then(Value::as_object_mut).is_some_and(|o| o.remove(last).is_some())
}

/// The value at the dotted `path`, if present.
pub fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, key| v.get(key))
}

fn to_value(settings: &ResilienceSettings) -> Value {
    serde_json::to_value(settings).unwrap_or_default()
}

/// Strict conversion naming the offending field (unknown key, wrong type)
/// in the dotted form validation uses (`providerErrorRules.0.scope`).
#[cfg(not(target_arch = "wasm32"))]
fn from_value(doc: Value) -> Result<ResilienceSettings, Vec<FieldError>> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let message = e.inner().to_string();
        let mut field = match e.path().to_string() {
            p if p == "." || p == "?" => String::new(),
            p => p.replace('[', ".").replace(']', ""),
        };
        // serde names a missing field only in its message; put it in the path.
        if let Some(missing) = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()) {
            field = if field.is_empty() { missing.to_owned() } else { format!("{field}.{missing}") };
        }
        if field.is_empty() {
            field = "body".to_owned();
        }
        vec![FieldError::new(field, message)]
    })
}

/// In the browser a patch comes only from a card's form, which writes each
/// field with its type, so only [`ResilienceSettings::validate`]'s errors
/// (named by field) are expected; the server's strict conversion stays the
/// judge. Tracking the path here would add serde_path_to_error's
/// deserializers to the bundle (~20 KB gzipped) for no message a user sees.
#[cfg(target_arch = "wasm32")]
fn from_value(doc: Value) -> Result<ResilienceSettings, Vec<FieldError>> {
    serde_json::from_value(doc).map_err(|e| vec![FieldError::new("body", e.to_string())])
}
