//! What the monitoring and cooldown APIs return (SPEC §R1–§R3): breaker
//! states, connection cooldowns, model lockouts. Credentials never appear.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::validation::{Errors, FieldError};

/// `GET /api/monitoring/health`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthReport {
    /// `healthy`; `degraded` when a breaker is not CLOSED, a provider has
    /// no eligible connection or the database does not answer; `down` when
    /// no provider with connections can serve.
    pub status: String,
    /// Why the status is not `healthy`, one sentence each.
    #[serde(default)]
    pub status_reasons: Vec<String>,
    /// RFC 3339.
    pub timestamp: String,
    pub system: SystemInfo,
    pub db: DbInfo,
    pub circuit_breakers: BreakerCounts,
    pub provider_breakers: Vec<BreakerInfo>,
    /// Per provider with connections.
    pub connection_health: BTreeMap<String, ProviderConnections>,
    pub lockouts: Vec<ModelCooldown>,
    /// The local queues with a limit, by identity: concurrency gates
    /// (`qsconn:<connectionId>[:model:<model>]`, §R4).
    pub queues: BTreeMap<String, QueueInfo>,
    /// Requests the gateway holds now until a cooldown or a combo's short
    /// lock ends (SPEC §R2, §R4).
    #[serde(default)]
    pub waiting_for_cooldown: u32,
    pub session_affinity: SessionAffinityInfo,
    /// Active exclusive session leases (SPEC §R2.3), soonest to end first.
    pub session_leases: Vec<LeaseInfo>,
    /// The gateways sharing this database (Postgres), oldest first; empty
    /// on SQLite, where there is only this one.
    #[serde(default)]
    pub instances: Vec<InstanceInfo>,
}

/// How often an instance on a shared database stores its heartbeat.
pub const HEARTBEAT_MS: u64 = 5_000;
/// An instance not heard for this long is shown silent (three heartbeats).
pub const SILENT_AFTER_MS: u64 = 3 * HEARTBEAT_MS;
/// An instance not heard for this long is forgotten.
pub const FORGET_AFTER_MS: u64 = 3_600_000;

/// One gateway instance on a shared database, as its heartbeat says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceInfo {
    /// The first 8 characters of the instance's random name.
    pub name: String,
    pub version: String,
    /// Epoch ms.
    pub started_at: i64,
    /// How long ago its last heartbeat was stored.
    pub last_seen_ms_ago: u64,
    /// Silent for longer than three heartbeats: stopped, or cut off from the database.
    pub silent: bool,
    /// Had read what the others changed at its last heartbeat.
    pub caught_up: bool,
    /// The instance that wrote this report.
    pub this: bool,
}

/// One active lease; the owner only by the start of its hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseInfo {
    pub provider: String,
    pub connection_id: String,
    pub connection: String,
    /// The first 8 hex digits of the owner token's SHA-256.
    pub owner_hash: String,
    pub generation: u64,
    /// Epoch ms.
    pub expires_at: i64,
    pub remaining_ms: u64,
}

/// Sessions pinned to connections (SPEC §R2.2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionAffinityInfo {
    /// `sessionAffinityTtlMs`; 0: affinity is off.
    pub ttl_ms: u64,
    /// Connections with pinned sessions, most first.
    pub pins: Vec<SessionPins>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionPins {
    pub provider: String,
    pub connection_id: String,
    /// The connection's name.
    pub connection: String,
    pub sessions: u32,
}

/// One local queue: who waits for it and who holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueInfo {
    /// `concurrency` (a §R4 limit) or `rate_limit` (a §R5 request queue).
    pub kind: String,
    pub provider: String,
    pub connection_id: String,
    /// The connection's name, for people.
    pub connection: String,
    /// The upstream model of a model-level gate.
    pub model: Option<String>,
    /// Requests waiting.
    pub queued: u32,
    /// Requests holding a slot: in flight (concurrency), or started and
    /// not yet answered (request queue).
    pub running: u32,
    /// The cap (`maxConcurrent`, a model cap, or `concurrentRequests`).
    pub limit: u32,
    /// Epoch ms until which the queue is paused, when it is.
    pub paused_until: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemInfo {
    pub uptime_s: u64,
    pub rss_bytes: u64,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DbInfo {
    pub ok: bool,
    /// Request log rows dropped since start because the database fell
    /// behind (the oldest queued rows go first).
    #[serde(default)]
    pub log_rows_dropped: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerCounts {
    pub open: u32,
    pub half_open: u32,
    pub degraded: u32,
    pub closed: u32,
    pub total: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerInfo {
    pub provider: String,
    /// `CLOSED` | `DEGRADED` | `OPEN` | `HALF_OPEN`.
    pub state: String,
    pub failure_count: u32,
    /// RFC 3339, when there was one.
    pub last_failure: Option<String>,
    /// Until the next probe; 0 unless OPEN.
    pub retry_after_ms: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConnections {
    pub cooling_down: u32,
    /// Connections in a terminal state (need a new credential).
    #[serde(default)]
    pub terminal: u32,
    pub total: u32,
    pub soonest_retry_after_ms: Option<u64>,
}

/// One active model lockout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCooldown {
    pub provider: String,
    pub connection_id: String,
    /// The connection's name (`None`: disabled or deleted since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_name: Option<String>,
    pub model: String,
    pub reason: String,
    pub remaining_ms: u64,
    /// Epoch ms.
    pub expires_at: i64,
    pub failure_count: u32,
}

/// `GET /api/resilience/model-cooldowns`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCooldownList {
    pub items: Vec<ModelCooldown>,
}

/// `DELETE /api/resilience/model-cooldowns`: one model (on one connection,
/// or on all when `connection` is absent), or `{all:true}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClearModelCooldowns {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub connection: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub all: Option<bool>,
}

impl ClearModelCooldowns {
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        if self.all != Some(true) {
            for (field, value) in [("provider", &self.provider), ("model", &self.model)] {
                if value.as_deref().is_none_or(|v| v.trim().is_empty()) {
                    e.push(field, "is required unless all is true");
                }
            }
        }
        e.into_result()
    }
}

/// How a connection is excluded right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionStatus {
    CoolingDown,
    ModelLocked,
    Terminal,
}

/// One excluded connection on the Cooldown Manager.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CooldownConnection {
    pub id: String,
    pub provider: String,
    pub name: String,
    pub status: ExclusionStatus,
    pub terminal_status: Option<String>,
    pub cooldown_remaining_ms: u64,
    pub rate_limited_until: Option<i64>,
    pub backoff_level: u32,
    pub last_error_type: Option<String>,
    pub last_error: Option<String>,
    pub lockouts: Vec<LockoutBrief>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockoutBrief {
    pub model: String,
    pub reason: String,
    pub remaining_ms: u64,
}

/// `GET /api/resilience/cooldowns`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CooldownList {
    pub connections: Vec<CooldownConnection>,
    /// Providers held back as a whole (breaker, window gate).
    #[serde(default)]
    pub providers: Vec<ProviderExclusion>,
    /// Epoch ms.
    pub generated_at: i64,
}

/// A provider held back as a whole, with what holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderExclusion {
    pub provider: String,
    /// `breaker` (its state in `state`) or `window_gate` (§R1.1).
    pub kind: String,
    /// The breaker's state (`OPEN`, `HALF_OPEN`, `DEGRADED`), or `COOLING`.
    pub state: String,
    /// Until it may serve again (0: probing now or degraded).
    pub remaining_ms: u64,
    pub failure_count: u32,
}

/// Most connection ids one clear may name.
pub const MAX_CLEAR_IDS: usize = 1000;

/// `POST /api/resilience/cooldowns`: named connections, or all (of one
/// provider).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClearCooldowns {
    #[serde(default)]
    pub connection_ids: Option<Vec<String>>,
    #[serde(default)]
    pub all: Option<bool>,
    #[serde(default)]
    pub provider: Option<String>,
}

impl ClearCooldowns {
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        match (&self.connection_ids, self.all) {
            (Some(ids), _) if ids.is_empty() => e.push("connectionIds", "must name at least one connection"),
            (Some(ids), _) if ids.len() > MAX_CLEAR_IDS => {
                e.push("connectionIds", format!("must name at most {MAX_CLEAR_IDS} connections"))
            }
            (Some(_), Some(true)) => e.push("all", "give either connectionIds or all, not both"),
            (Some(_), _) | (None, Some(true)) => {}
            (None, _) => e.push("connectionIds", "give connectionIds, or all: true"),
        }
        e.into_result()
    }
}

/// What a clear did. Terminal states are never cleared here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearCooldownsResult {
    pub ok: bool,
    pub cleared: u32,
    pub unchanged: u32,
    pub skipped_terminal: u32,
    pub lockouts_cleared: u32,
}

/// `POST /api/resilience/reset` body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetBreakers {
    #[serde(default)]
    pub provider: Option<String>,
}

/// What a breaker reset did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetResult {
    pub ok: bool,
    pub reset_count: u32,
    pub message: String,
}

/// One connection's resilience state (`GET /api/resilience/connections`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionState {
    pub id: String,
    pub provider: String,
    pub name: String,
    pub auth_type: String,
    pub priority: i32,
    pub is_active: bool,
    /// `healthy` | `cooling_down` | `circuit_open` | `terminal`.
    pub connection_status: String,
    pub terminal_status: Option<String>,
    pub rate_limited_until: Option<i64>,
    pub cooldown_remaining_ms: u64,
    pub backoff_level: u32,
    pub last_error_type: Option<String>,
    pub error_code: Option<String>,
    pub breaker: Option<BreakerInfo>,
    pub lockouts: Vec<LockoutBrief>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStates {
    pub connections: Vec<ConnectionState>,
    pub breakers: Vec<BreakerInfo>,
    pub meta: ConnectionStatesMeta,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatesMeta {
    pub total_connections: u32,
    pub cooling_down_count: u32,
    pub unhealthy_breaker_count: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_requests_need_a_target() {
        assert!(ClearCooldowns { all: Some(true), ..Default::default() }.validate().is_ok());
        assert!(ClearCooldowns { connection_ids: Some(vec!["a".into()]), ..Default::default() }.validate().is_ok());
        let field = |c: ClearCooldowns| c.validate().unwrap_err()[0].field.clone();
        assert_eq!(field(ClearCooldowns::default()), "connectionIds");
        assert_eq!(field(ClearCooldowns { connection_ids: Some(vec![]), ..Default::default() }), "connectionIds");
        assert_eq!(
            field(ClearCooldowns { connection_ids: Some(vec!["x".into(); 1001]), ..Default::default() }),
            "connectionIds"
        );
        assert_eq!(
            field(ClearCooldowns { connection_ids: Some(vec!["a".into()]), all: Some(true), ..Default::default() }),
            "all"
        );
        assert!(ClearModelCooldowns { all: Some(true), ..Default::default() }.validate().is_ok());
        let missing =
            ClearModelCooldowns { provider: Some("glm".into()), ..Default::default() }.validate().unwrap_err();
        assert_eq!(missing[0].field, "model");
    }
}
