//! `ResilienceSettings`: every knob of Settings → Resilience (SPEC §S) in
//! one typed schema. The dashboard validates its forms with these types in
//! the browser, the server validates `PATCH /api/resilience` with the very
//! same functions, and the engine reads the normalized result — so the
//! three can never disagree about a range.
//!
//! Units are in the field names (`…Ms`, `…Sec`). Where a zero means "off"
//! the field says so. Ranges and cross-field rules live in [`rules`];
//! precedence (default < env < persisted < per connection) in [`layers`].

pub mod form;
pub mod layers;
pub mod rules;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use form::*;
pub use layers::*;

/// The whole settings document, as `GET /api/resilience` returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResilienceSettings {
    pub request_queue: RequestQueueSettings,
    pub connection_cooldown: PerAuthClass<ConnectionCooldownProfile>,
    pub provider_breaker: BreakerProfiles,
    pub provider_cooldown: ProviderCooldownSettings,
    pub model_lockout: ModelLockoutSettings,
    pub wait_for_cooldown: WaitForCooldownSettings,
    pub combo_cooldown_wait: ComboCooldownWaitSettings,
    pub quota_share_concurrency_limit: Toggle,
    pub stream_stall_cooldown: Toggle,
    pub stream_recovery: StreamRecoverySettings,
    /// How long a client session stays pinned to one connection (§R2.2);
    /// `0` disables affinity.
    pub session_affinity_ttl_ms: u64,
    /// Operator rules checked before the built-in provider rules (§R7).
    pub provider_error_rules: Vec<ProviderErrorRule>,
    /// Providers whose 429 quota verdicts cool every connection sharing the
    /// failing one's egress IP (§R7); empty turns the lock off.
    pub egress_ip_lock_providers: Vec<String>,
    /// Once any API key exists, `/v1` requests need one (§P). Off keeps
    /// anonymous *local* use allowed beside the keys; while no key exists
    /// anonymous local use is always allowed.
    pub require_api_key: bool,
    /// The order a target's connections are tried in.
    pub fallback_strategy: ConnectionStrategy,
    /// `provider/model` tried when no target could serve a request
    /// (`OMNIROUTE_EMERGENCY_FALLBACK`); empty is off.
    pub emergency_fallback: String,
}

/// The order the connections of one target are tried in (the original's
/// `fallbackStrategy`); combo strategies order the targets themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionStrategy {
    /// Priority order: the first takes everything until it fails or is excluded.
    #[default]
    FillFirst,
    /// Each request starts at the next connection.
    RoundRobin,
    /// The healthier of two drawn at random (success rate, latency).
    P2c,
    /// A fresh shuffle per request.
    Random,
    /// The one that took the fewest requests since the start.
    LeastUsed,
}

impl ConnectionStrategy {
    pub const ALL: [Self; 5] = [Self::FillFirst, Self::RoundRobin, Self::P2c, Self::Random, Self::LeastUsed];
    /// Every name, as the settings form offers them.
    pub const NAMES: [&'static str; 5] = ["fill-first", "round-robin", "p2c", "random", "least-used"];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl Default for ResilienceSettings {
    fn default() -> Self {
        Self {
            request_queue: RequestQueueSettings::default(),
            connection_cooldown: PerAuthClass {
                oauth: ConnectionCooldownProfile {
                    base_cooldown_ms: 5_000,
                    use_upstream_retry_hints: false,
                    max_backoff_steps: 8,
                },
                apikey: ConnectionCooldownProfile {
                    base_cooldown_ms: 3_000,
                    use_upstream_retry_hints: true,
                    max_backoff_steps: 5,
                },
            },
            provider_breaker: BreakerProfiles::default(),
            provider_cooldown: ProviderCooldownSettings::default(),
            model_lockout: ModelLockoutSettings::default(),
            wait_for_cooldown: WaitForCooldownSettings::default(),
            combo_cooldown_wait: ComboCooldownWaitSettings::default(),
            quota_share_concurrency_limit: Toggle { enabled: true },
            stream_stall_cooldown: Toggle { enabled: false },
            stream_recovery: StreamRecoverySettings::default(),
            session_affinity_ttl_ms: DEFAULT_SESSION_AFFINITY_TTL_MS,
            provider_error_rules: Vec::new(),
            egress_ip_lock_providers: DEFAULT_EGRESS_IP_LOCK_PROVIDERS.iter().map(|p| (*p).to_owned()).collect(),
            require_api_key: true,
            fallback_strategy: ConnectionStrategy::FillFirst,
            emergency_fallback: String::new(),
        }
    }
}

/// One hour: long enough to keep a coding session's prompt cache warm.
pub const DEFAULT_SESSION_AFFINITY_TTL_MS: u64 = 3_600_000;
/// Providers whose accounts share quota per egress IP.
pub const DEFAULT_EGRESS_IP_LOCK_PROVIDERS: [&str; 2] = ["opencode-go", "opencode-cli"];

/// A group that is only switched on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toggle {
    pub enabled: bool,
}

/// The same profile for OAuth and API-key connections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerAuthClass<T> {
    pub oauth: T,
    pub apikey: T,
}

/// The local per provider+connection rate-limit queue (§R5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestQueueSettings {
    /// Every active API-key connection gets rate-limit protection.
    pub auto_enable_api_key_providers: bool,
    pub requests_per_minute: u64,
    pub min_time_between_requests_ms: u64,
    pub concurrent_requests: u64,
    /// Requests in flight across every connection at most — the global
    /// level of the §R4 composite lock, for every request, protected or
    /// not; `0` means no global limit.
    pub global_concurrent_requests: u64,
    /// Longest time a request may wait *queued* before it starts.
    pub max_wait_ms: u64,
    /// Longest time a started request may execute (raised to the fetch
    /// timeout when that is longer).
    pub execution_max_wait_ms: u64,
    /// Queued requests beyond this fail fast with `RATE_LIMIT_QUEUE_FULL`;
    /// `0` means unbounded.
    pub max_queue_depth: u64,
}

impl Default for RequestQueueSettings {
    fn default() -> Self {
        Self {
            auto_enable_api_key_providers: true,
            requests_per_minute: 60,
            min_time_between_requests_ms: 350,
            concurrent_requests: 6,
            global_concurrent_requests: 0,
            max_wait_ms: 30_000,
            execution_max_wait_ms: 600_000,
            max_queue_depth: 0,
        }
    }
}

/// How one connection cools after a failure (§R2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionCooldownProfile {
    /// First rung of the ladder; doubles per level. `0` disables cooling.
    pub base_cooldown_ms: u64,
    /// Upstream `Retry-After`/reset hints replace the ladder.
    pub use_upstream_retry_hints: bool,
    pub max_backoff_steps: u64,
}

/// Provider circuit breaker profiles by provider class (§R1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerProfiles {
    pub oauth: BreakerProfile,
    pub apikey: BreakerProfile,
    pub local: BreakerProfile,
}

impl Default for BreakerProfiles {
    fn default() -> Self {
        Self {
            oauth: BreakerProfile::new(8, Some(5), 60_000, 8, 2),
            apikey: BreakerProfile::new(12, Some(7), 30_000, 4, 3),
            local: BreakerProfile::new(2, None, 15_000, 2, 1),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakerProfile {
    /// Failures that open the breaker.
    pub failure_threshold: u64,
    /// Failures that mark it DEGRADED; `null` means "only at the open
    /// threshold" (the local profile never degrades separately).
    pub degradation_threshold: Option<u64>,
    /// OPEN hold before a half-open probe.
    pub reset_timeout_ms: u64,
    /// Cap of the escalating open hold, as a multiple of `resetTimeoutMs`.
    pub max_reset_multiplier: u64,
    /// Re-open cycles at the plain reset timeout before the hold doubles.
    pub escalate_after_cycles: u64,
    /// Concurrent probes admitted while HALF_OPEN.
    pub half_open_requests: u64,
}

impl BreakerProfile {
    const fn new(failure: u64, degradation: Option<u64>, reset_ms: u64, multiplier: u64, escalate: u64) -> Self {
        Self {
            failure_threshold: failure,
            degradation_threshold: degradation,
            reset_timeout_ms: reset_ms,
            max_reset_multiplier: multiplier,
            escalate_after_cycles: escalate,
            half_open_requests: 1,
        }
    }
}

/// The optional provider cooldown window gate (§R1.1) — not the breaker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderCooldownSettings {
    pub enabled: bool,
    /// Connection-level entries: first cooldown, doubling per failure…
    pub min_retry_cooldown_ms: u64,
    /// …up to this cap.
    pub max_retry_cooldown_ms: u64,
    pub oauth: ProviderWindowProfile,
    pub apikey: ProviderWindowProfile,
    pub local: ProviderWindowProfile,
}

impl Default for ProviderCooldownSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            min_retry_cooldown_ms: 5_000,
            max_retry_cooldown_ms: 300_000,
            oauth: ProviderWindowProfile::new(10, 15 * 60_000, 5 * 60_000),
            apikey: ProviderWindowProfile::new(15, 30 * 60_000, 10 * 60_000),
            local: ProviderWindowProfile::new(2, 5 * 60_000, 60_000),
        }
    }
}

/// A provider counts as cooling after `providerFailureThreshold` failures
/// inside `providerFailureWindowMs`, for `providerCooldownMs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderWindowProfile {
    pub provider_failure_threshold: u64,
    pub provider_failure_window_ms: u64,
    pub provider_cooldown_ms: u64,
}

impl ProviderWindowProfile {
    const fn new(threshold: u64, window_ms: u64, cooldown_ms: u64) -> Self {
        Self {
            provider_failure_threshold: threshold,
            provider_failure_window_ms: window_ms,
            provider_cooldown_ms: cooldown_ms,
        }
    }
}

/// Model lockout (§R3): locks one model on one connection after failures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelLockoutSettings {
    /// Master switch; off by default.
    pub enabled: bool,
    /// Upstream statuses that lock a model.
    pub error_codes: Vec<u64>,
    pub base_cooldown_ms: u64,
    pub max_cooldown_ms: u64,
    pub use_exponential_backoff: bool,
    pub max_backoff_steps: u64,
}

/// The statuses that lock a model by default.
pub const DEFAULT_LOCKOUT_ERROR_CODES: [u64; 6] = [403, 404, 429, 502, 503, 504];

impl Default for ModelLockoutSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            error_codes: DEFAULT_LOCKOUT_ERROR_CODES.to_vec(),
            base_cooldown_ms: 120_000,
            max_cooldown_ms: 1_800_000,
            use_exponential_backoff: true,
            max_backoff_steps: 10,
        }
    }
}

/// Single-model requests wait for the earliest connection cooldown (§R2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForCooldownSettings {
    pub enabled: bool,
    /// `0` turns waiting off.
    pub max_retries: u64,
    /// Longest single wait, seconds; `0` turns waiting off.
    pub max_retry_wait_sec: u64,
    /// Total waiting per request; at least one full wait.
    pub budget_ms: u64,
}

impl Default for WaitForCooldownSettings {
    fn default() -> Self {
        Self { enabled: true, max_retries: 5, max_retry_wait_sec: 90, budget_ms: 300_000 }
    }
}

impl WaitForCooldownSettings {
    /// Whether the engine waits at all (a zero limit means off).
    pub fn is_active(&self) -> bool {
        self.enabled && self.max_retries > 0 && self.max_retry_wait_sec > 0
    }
}

/// Combos wait for a short transient lockout instead of failing (§R4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboCooldownWaitSettings {
    pub enabled: bool,
    /// Longest single wait; `0` turns waiting off.
    pub max_wait_ms: u64,
    /// `0` turns waiting off.
    pub max_attempts: u64,
    /// Total waiting per request; at least one full wait.
    pub budget_ms: u64,
}

impl Default for ComboCooldownWaitSettings {
    fn default() -> Self {
        Self { enabled: true, max_wait_ms: 90_000, max_attempts: 5, budget_ms: 300_000 }
    }
}

impl ComboCooldownWaitSettings {
    /// Whether the engine waits at all (a zero limit means off).
    pub fn is_active(&self) -> bool {
        self.enabled && self.max_wait_ms > 0 && self.max_attempts > 0
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StreamRecoverySettings {
    pub throughput_watchdog: ThroughputWatchdogSettings,
}

/// Aborts a stream whose useful output stays below a rate (§R6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThroughputWatchdogSettings {
    pub enabled: bool,
    pub warmup_ms: u64,
    pub window_ms: u64,
    pub min_useful_bytes_per_second: u64,
    pub min_useful_bytes: u64,
}

impl Default for ThroughputWatchdogSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            warmup_ms: 30_000,
            window_ms: 30_000,
            min_useful_bytes_per_second: 4,
            min_useful_bytes: 1,
        }
    }
}

/// An operator rule of `providerErrorRules` (§R7): an upstream error of
/// `provider` with `status` whose text contains `match` gets this verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderErrorRule {
    pub provider: String,
    pub status: u64,
    /// Case-insensitive substring of the upstream error text.
    #[serde(rename = "match")]
    pub match_text: String,
    pub scope: RuleScope,
    #[serde(default)]
    pub reason: Option<ErrorReason>,
    /// Cooldown to apply; the engine's own ladder when absent.
    #[serde(default)]
    pub cooldown_ms: Option<u64>,
}

/// What an operator rule locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    Model,
    Provider,
    Connection,
}

impl RuleScope {
    pub const ALL: [Self; 3] = [Self::Model, Self::Provider, Self::Connection];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Provider => "provider",
            Self::Connection => "connection",
        }
    }
}

/// The classifier's reasons (§R7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    RateLimited,
    ConcurrencyLimited,
    QuotaExhausted,
    AuthError,
    Forbidden,
    NotFound,
    ModelAccessDenied,
    ContextOverflow,
    BadRequest,
    ServerError,
    Timeout,
    CreditsExhausted,
    Banned,
    Expired,
    RequestRejected,
}

impl ErrorReason {
    pub const ALL: [Self; 15] = [
        Self::RateLimited,
        Self::ConcurrencyLimited,
        Self::QuotaExhausted,
        Self::AuthError,
        Self::Forbidden,
        Self::NotFound,
        Self::ModelAccessDenied,
        Self::ContextOverflow,
        Self::BadRequest,
        Self::ServerError,
        Self::Timeout,
        Self::CreditsExhausted,
        Self::Banned,
        Self::Expired,
        Self::RequestRejected,
    ];

    /// The reason named `s` (as [`Self::as_str`] spells it).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The wire spelling (`rate_limited`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::ConcurrencyLimited => "concurrency_limited",
            Self::QuotaExhausted => "quota_exhausted",
            Self::AuthError => "auth_error",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::ModelAccessDenied => "model_access_denied",
            Self::ContextOverflow => "context_overflow",
            Self::BadRequest => "bad_request",
            Self::ServerError => "server_error",
            Self::Timeout => "timeout",
            Self::CreditsExhausted => "credits_exhausted",
            Self::Banned => "banned",
            Self::Expired => "expired",
            Self::RequestRejected => "request_rejected",
        }
    }
}

/// What the dashboard loads: the effective settings and which fields the
/// environment sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResilienceView {
    pub settings: ResilienceSettings,
    pub env: Vec<EnvSource>,
}

impl ResilienceView {
    /// The env variable behind `field`, if any.
    pub fn env_for(&self, field: &str) -> Option<&EnvSource> {
        self.env.iter().find(|s| s.field == field)
    }
}
