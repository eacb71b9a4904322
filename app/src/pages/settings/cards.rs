//! The settings cards: which fields each edits, how they are labelled, and
//! what the card does (scope / trigger / effect), in SPEC §S order.

use crate::types::settings::{ConnectionStrategy, FieldKind, ResilienceView};

/// One editable input of a card.
pub struct Field {
    /// JSON path of the setting; also the input's name and error key.
    pub path: &'static str,
    pub label: &'static str,
    pub kind: FieldKind,
}

/// One card: a titled group of fields saved together.
pub struct Card {
    pub id: &'static str,
    pub title: &'static str,
    /// Scope, trigger and effect in a sentence or two.
    pub explain: &'static str,
    /// The page the card lives on.
    pub page: &'static str,
    pub fields: &'static [Field],
}

impl Card {
    /// The fields a save may change: all but those a winning env variable
    /// pins (they are shown, read-only).
    pub fn editable(&self, view: &ResilienceView) -> Vec<(&'static str, FieldKind)> {
        self.fields.iter().filter(|f| !view.env_for(f.path).is_some_and(|s| s.wins)).map(|f| (f.path, f.kind)).collect()
    }
}

const fn f(path: &'static str, label: &'static str, kind: FieldKind) -> Field {
    Field { path, label, kind }
}

use FieldKind::{Bool, Choice, Codes, Int, OptInt, Rules, Text, TextList};

const RESILIENCE: &str = "/settings/resilience";

/// The cards of Settings → Resilience, in page order.
pub static RESILIENCE_CARDS: [Card; 14] = [
    Card {
        id: "request-queue",
        title: "Request queue",
        explain: "Scope: each protected connection (per model for providers with per-model quotas, such as Gemini); a connection is protected when its Rate-limit protection (Providers) is On, or Automatic while \"protect every API-key connection\" is on and it uses an API key. Trigger: a request to it. Effect: requests start at most the requests per minute, at least the min time apart, and at most the concurrent number at once until their answer (a stream's first event); the upstream's x-ratelimit-remaining/-reset-requests headers and a 429 that says how long to wait (within the queue wait) hold it back further. A request that cannot start within the max queue wait fails with 503 RATE_LIMIT_QUEUE_TIMEOUT; one that finds max depth already waiting (0 = unbounded) with 429 RATE_LIMIT_QUEUE_FULL before any upstream call; an answer slower than the max execution time (never less than the fetch timeout) with 504 RATE_LIMIT_EXECUTION_TIMEOUT. None of these cools a connection or trips a breaker. A connection's own rate-limit overrides win over these values. Global concurrent requests (0 = no limit) caps what is in flight across all connections, protected or not, to the last byte of a stream: beyond it a request waits (up to 30 s, at most 20 waiting) and then fails with 429 SEMAPHORE_TIMEOUT or SEMAPHORE_QUEUE_FULL.",
        page: RESILIENCE,
        fields: &[
            f("requestQueue.autoEnableApiKeyProviders", "Protect every API-key connection automatically", Bool),
            f("requestQueue.requestsPerMinute", "Requests per minute", Int),
            f("requestQueue.minTimeBetweenRequestsMs", "Min time between requests", Int),
            f("requestQueue.concurrentRequests", "Concurrent requests", Int),
            f("requestQueue.globalConcurrentRequests", "Global concurrent requests (0 = no limit)", Int),
            f("requestQueue.maxWaitMs", "Max queue wait", Int),
            f("requestQueue.executionMaxWaitMs", "Max execution time", Int),
            f("requestQueue.maxQueueDepth", "Max queue depth (0 = unbounded)", Int),
        ],
    },
    Card {
        id: "connection-cooldown",
        title: "Connection cooldown",
        explain: "Scope: one connection (account or key). Trigger: that connection fails (429, auth, 5xx). Effect: it is skipped for base × 2^level, up to max backoff steps; other connections of the provider keep serving. Upstream retry hints replace the ladder when enabled.",
        page: RESILIENCE,
        fields: &[
            f("connectionCooldown.oauth.baseCooldownMs", "OAuth · base cooldown", Int),
            f("connectionCooldown.oauth.useUpstreamRetryHints", "OAuth · use upstream retry hints", Bool),
            f("connectionCooldown.oauth.maxBackoffSteps", "OAuth · max backoff steps", Int),
            f("connectionCooldown.apikey.baseCooldownMs", "API key · base cooldown", Int),
            f("connectionCooldown.apikey.useUpstreamRetryHints", "API key · use upstream retry hints", Bool),
            f("connectionCooldown.apikey.maxBackoffSteps", "API key · max backoff steps", Int),
        ],
    },
    Card {
        id: "provider-breaker",
        title: "Provider circuit breaker",
        explain: "Scope: a whole provider. Trigger: provider-level failures only (408, 500, 502, 503, 504, network errors). Effect: DEGRADED at the degradation threshold (traffic still flows), OPEN at the failure threshold (provider skipped, direct calls get 503 provider_circuit_open) until the reset time, then one half-open probe.",
        page: RESILIENCE,
        fields: &[
            f("providerBreaker.oauth.failureThreshold", "OAuth · failure threshold", Int),
            f("providerBreaker.oauth.degradationThreshold", "OAuth · degradation threshold", OptInt),
            f("providerBreaker.oauth.resetTimeoutMs", "OAuth · reset time", Int),
            f("providerBreaker.oauth.maxResetMultiplier", "OAuth · max re-open multiplier", Int),
            f("providerBreaker.oauth.escalateAfterCycles", "OAuth · escalate after cycles", Int),
            f("providerBreaker.oauth.halfOpenRequests", "OAuth · half-open probes", Int),
            f("providerBreaker.apikey.failureThreshold", "API key · failure threshold", Int),
            f("providerBreaker.apikey.degradationThreshold", "API key · degradation threshold", OptInt),
            f("providerBreaker.apikey.resetTimeoutMs", "API key · reset time", Int),
            f("providerBreaker.apikey.maxResetMultiplier", "API key · max re-open multiplier", Int),
            f("providerBreaker.apikey.escalateAfterCycles", "API key · escalate after cycles", Int),
            f("providerBreaker.apikey.halfOpenRequests", "API key · half-open probes", Int),
            f("providerBreaker.local.failureThreshold", "Local · failure threshold", Int),
            f(
                "providerBreaker.local.degradationThreshold",
                "Local · degradation threshold (empty = at failure)",
                OptInt,
            ),
            f("providerBreaker.local.resetTimeoutMs", "Local · reset time", Int),
            f("providerBreaker.local.maxResetMultiplier", "Local · max re-open multiplier", Int),
            f("providerBreaker.local.escalateAfterCycles", "Local · escalate after cycles", Int),
            f("providerBreaker.local.halfOpenRequests", "Local · half-open probes", Int),
        ],
    },
    Card {
        id: "provider-cooldown",
        title: "Provider cooldown (window gate)",
        explain: "Scope: a provider across requests, off by default; not the breaker. Trigger: the class's failure threshold reached inside its window. Effect: combos skip the provider for its cooldown; a success clears the window. Connection-level entries back off from min to max retry cooldown.",
        page: RESILIENCE,
        fields: &[
            f("providerCooldown.enabled", "Enabled", Bool),
            f("providerCooldown.minRetryCooldownMs", "Min retry cooldown", Int),
            f("providerCooldown.maxRetryCooldownMs", "Max retry cooldown", Int),
            f("providerCooldown.oauth.providerFailureThreshold", "OAuth · failures", Int),
            f("providerCooldown.oauth.providerFailureWindowMs", "OAuth · window", Int),
            f("providerCooldown.oauth.providerCooldownMs", "OAuth · cooldown", Int),
            f("providerCooldown.apikey.providerFailureThreshold", "API key · failures", Int),
            f("providerCooldown.apikey.providerFailureWindowMs", "API key · window", Int),
            f("providerCooldown.apikey.providerCooldownMs", "API key · cooldown", Int),
            f("providerCooldown.local.providerFailureThreshold", "Local · failures", Int),
            f("providerCooldown.local.providerFailureWindowMs", "Local · window", Int),
            f("providerCooldown.local.providerCooldownMs", "Local · cooldown", Int),
        ],
    },
    Card {
        id: "wait-for-cooldown",
        title: "Wait for cooldown",
        explain: "Scope: single-model requests. Trigger: every connection of the provider is cooling down. Effect: the gateway waits for the earliest one and retries instead of failing, within the attempt, per-wait and total budgets (0 attempts or 0 s = off).",
        page: RESILIENCE,
        fields: &[
            f("waitForCooldown.enabled", "Enabled", Bool),
            f("waitForCooldown.maxRetries", "Max attempts", Int),
            f("waitForCooldown.maxRetryWaitSec", "Max wait per attempt (s)", Int),
            f("waitForCooldown.budgetMs", "Total budget", Int),
        ],
    },
    Card {
        id: "combo-cooldown-wait",
        title: "Combo cooldown wait",
        explain: "Scope: combo requests. Trigger: every target was skipped before an attempt, or the last attempt answered 429, while a target is held back by a short rate-limit, overload or server-error lock (a connection cooldown, a model lockout, an open breaker). Effect: the request waits for the lock that ends first (its remaining time or the upstream's Retry-After, whichever is longer, plus 50 ms) and is dispatched again — each wait at most the max wait, at most max attempts waits and the total budget per request. Quota, auth and not-found locks are never waited for; a client that leaves while waiting is logged as 499. Without a wait, a combo that skipped every target while a connection was rate-limited answers 429 rate_limit_error with retry_after and reset_at of the first lock to end; otherwise 503 all_targets_cooling_down with Retry-After, or the last error. Max wait or max attempts 0 = off.",
        page: RESILIENCE,
        fields: &[
            f("comboCooldownWait.enabled", "Enabled", Bool),
            f("comboCooldownWait.maxWaitMs", "Max wait", Int),
            f("comboCooldownWait.maxAttempts", "Max attempts", Int),
            f("comboCooldownWait.budgetMs", "Total budget", Int),
        ],
    },
    Card {
        id: "quota-share",
        title: "Quota-share per-connection concurrency",
        explain: "Scope: combo requests to a connection with Max concurrent set (several keys sharing one upstream account). Trigger: that many requests are already in flight on it. Effect: the request waits for a slot (up to 30 s, at most 20 waiting); when none frees it goes ahead without one rather than failing. Off: combo requests ignore the connection's Max concurrent. Direct requests always respect it and, past the wait, fail with SEMAPHORE_TIMEOUT or SEMAPHORE_QUEUE_FULL (429).",
        page: RESILIENCE,
        fields: &[f("quotaShareConcurrencyLimit.enabled", "Enabled", Bool)],
    },
    Card {
        id: "stream-stall",
        title: "Stream stall cooldown",
        explain: "Scope: the connection that served a stalled or too-slow stream. Trigger: the content-stall watchdog (no model output for STREAM_IDLE_TIMEOUT_MS) or the throughput watchdog gives up on a stream. Effect: off (default) records the error only; on also cools the connection.",
        page: RESILIENCE,
        fields: &[f("streamStallCooldown.enabled", "Cool the connection after a stall", Bool)],
    },
    Card {
        id: "throughput-watchdog",
        title: "Stream throughput watchdog",
        explain: "Scope: one streaming attempt. Trigger: after the warm-up, useful text over a full window stays below the minimum rate (judgement waits while a tool call or reasoning is streaming). Effect: the stream ends with STREAM_THROUGHPUT_TOO_LOW as the client protocol's error event; the connection gets the error recorded, and cools only when stream stall cooldown is on.",
        page: RESILIENCE,
        fields: &[
            f("streamRecovery.throughputWatchdog.enabled", "Enabled", Bool),
            f("streamRecovery.throughputWatchdog.warmupMs", "Warm-up", Int),
            f("streamRecovery.throughputWatchdog.windowMs", "Window", Int),
            f("streamRecovery.throughputWatchdog.minUsefulBytesPerSecond", "Min useful bytes per second", Int),
            f("streamRecovery.throughputWatchdog.minUsefulBytes", "Min useful bytes per window", Int),
        ],
    },
    Card {
        id: "session-affinity",
        title: "Session affinity",
        explain: "Scope: one client session on one provider — named by its session header (x-codex-session-id, X-Session-Id, x-omniroute-session, X-Claude-Code-Session-Id, session-id, x-session-affinity), else the body's metadata.session_id, conversation_id, session_id or prompt_cache_key, else its first user message; kept only as a hash. Trigger: a request served by a provider with more than one usable connection. Effect: the session is pinned to the connection that served it, which goes first for its later requests — ahead of priority and strategy order — keeping prompt caches and subscription sessions warm. A pinned connection that is cooling, locked, terminal, leased by another session, at its concurrency or queue limit, or not allowed for the key is passed over and the pin moves to the one that serves; a 429 or a terminal error there unpins. A pin lasts this long after the session's last request and survives a restart; 0 disables.",
        page: RESILIENCE,
        fields: &[f("sessionAffinityTtlMs", "Pin lifetime", Int)],
    },
    Card {
        id: "connection-order",
        title: "Connection order",
        explain: "Scope: the connections of one provider serving one target — a model asked for directly, or a combo target not pinned to a connection. Trigger: every request. Effect: fill-first (default) tries them in priority order, so the first takes everything until it fails or is excluded; round-robin starts each request at the next connection; p2c leads with the healthier of two drawn at random (success rate, then latency); random shuffles them; least-used leads with the one that took the fewest requests since the gateway started. A session's pinned connection (session affinity) still goes first, and excluded connections (cooling, locked, terminal) are still skipped. Counts and the rotation start fresh after a restart.",
        page: RESILIENCE,
        fields: &[f("fallbackStrategy", "Order", Choice(&ConnectionStrategy::NAMES))],
    },
    Card {
        id: "require-api-key",
        title: "Require an API key",
        explain: "Scope: every /v1 request. While no API key exists, requests without a key are served only when they come from this machine (a loopback address), send JSON and address the gateway by a local name. Once a key exists: on (default) every request needs a valid key with the inference scope; off keeps that anonymous local use allowed beside the keys.",
        page: RESILIENCE,
        fields: &[f("requireApiKey", "Require a key once one exists", Bool)],
    },
    Card {
        id: "provider-error-rules",
        title: "Provider error rules",
        explain: "Scope: one provider's upstream errors. Trigger: an error with the rule's status whose text contains its match. Effect: the rule's reason and scope decide what is locked — the model on that connection, the connection, or every connection of the provider (each cools as long as the failing one) — checked before the built-in rules; at most 50. Egress-lock providers cool every connection sharing the failing one's egress IP on a quota 429.",
        page: RESILIENCE,
        fields: &[
            f("providerErrorRules", "Rules", Rules),
            f("egressIpLockProviders", "Egress-lock providers (comma-separated)", TextList),
        ],
    },
    Card {
        id: "emergency-fallback",
        title: "Feature flags · Emergency fallback",
        explain: "Scope: every request. Trigger: no target could serve it — each was excluded (breaker open, cooling, locked, no usable connection) or failed — and no cooldown wait applies. Effect: the request is tried once more on this provider/model, through the same gates, and its answer carries x-omniroute-emergency-fallback; if that fails too, the original error is answered. A request for that very model, or a combo that lists it, does not try it twice. Empty: off. OMNIROUTE_EMERGENCY_FALLBACK set to a provider/model sets the starting value; set to true (a migrated configuration's flag) it uses the target saved here, and the gateway refuses to start while none is saved. A value saved here replaces the variable's at once, without a restart.",
        page: RESILIENCE,
        fields: &[f("emergencyFallback", "Last-resort target (provider/model)", Text)],
    },
];

/// Settings → Model Lockout.
pub static MODEL_LOCKOUT_CARD: Card = Card {
    id: "model-lockout",
    title: "Model lockout",
    explain: "Scope: one model on one connection. Trigger: an upstream error with one of the listed statuses. Effect: that model is skipped on that connection for the base cooldown, growing exponentially with repeated failures up to the max; other models and connections keep serving. Off by default.",
    page: "/settings/model-lockout",
    fields: &[
        f("modelLockout.enabled", "Enabled", Bool),
        f("modelLockout.errorCodes", "Error codes", Codes),
        f("modelLockout.baseCooldownMs", "Base cooldown (5 s–10 min)", Int),
        f("modelLockout.maxCooldownMs", "Max cooldown (≥ base, ≤ 1 h)", Int),
        f("modelLockout.useExponentialBackoff", "Exponential backoff", Bool),
        f("modelLockout.maxBackoffSteps", "Max backoff steps (0–20)", Int),
    ],
};

/// The cooldown rules edited inline on the Cooldown Manager (the same
/// settings as on Settings → Resilience, gathered where they matter).
pub static COOLDOWN_RULES_CARD: Card = Card {
    id: "cooldown-rules",
    title: "Cooldown rules",
    explain: "Scope: every connection. Trigger: a failure of that connection. Effect: it cools for the base cooldown, doubling per repeated failure up to the max backoff steps; a stalled stream only cools it when stall cooldown is on.",
    page: "/monitoring/cooldowns",
    fields: &[
        f("streamStallCooldown.enabled", "Cool the connection after a stream stall", Bool),
        f("connectionCooldown.oauth.baseCooldownMs", "OAuth · base cooldown", Int),
        f("connectionCooldown.oauth.maxBackoffSteps", "OAuth · max backoff steps", Int),
        f("connectionCooldown.apikey.baseCooldownMs", "API key · base cooldown", Int),
        f("connectionCooldown.apikey.maxBackoffSteps", "API key · max backoff steps", Int),
    ],
};

/// The card with this id.
pub fn find(id: &str) -> Option<&'static Card> {
    RESILIENCE_CARDS.iter().chain([&MODEL_LOCKOUT_CARD, &COOLDOWN_RULES_CARD]).find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::settings::{ResilienceSettings, get_path};
    use serde_json::Value;

    fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    leaves(child, if at.is_empty() { k.clone() } else { format!("{at}.{k}") }, out);
                }
            }
            _ => out.push(at),
        }
    }

    fn all_cards() -> impl Iterator<Item = &'static Card> {
        RESILIENCE_CARDS.iter().chain(std::iter::once(&MODEL_LOCKOUT_CARD))
    }

    /// Every setting has exactly one input, and every input a setting.
    #[test]
    fn the_cards_cover_every_setting_once() {
        let doc = serde_json::to_value(ResilienceSettings::default()).unwrap();
        let mut settings = Vec::new();
        leaves(&doc, String::new(), &mut settings);
        let mut inputs: Vec<String> = all_cards().flat_map(|c| c.fields.iter().map(|f| f.path.to_owned())).collect();
        for path in &inputs {
            assert!(get_path(&doc, path).is_some(), "{path} is not a setting");
        }
        settings.sort();
        inputs.sort();
        assert_eq!(settings, inputs);
        for f in COOLDOWN_RULES_CARD.fields {
            assert!(get_path(&doc, f.path).is_some(), "{} is not a setting", f.path);
        }
        let ids: Vec<&str> = all_cards().chain([&COOLDOWN_RULES_CARD]).map(|c| c.id).collect();
        assert!(ids.iter().all(|id| find(id).is_some_and(|c| c.id == *id)));
        assert!(find("nope").is_none());
    }
}
