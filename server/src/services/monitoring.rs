//! Monitoring and cooldown management over the live engine (SPEC §R1–§R3
//! APIs): health report, breaker reset, model lockouts, the Cooldown
//! Manager's list and clear. Reads memory, not the request path's
//! database; credentials never appear.

use app::types::monitoring::{
    BreakerCounts, BreakerInfo, ClearCooldowns, ClearCooldownsResult, ClearModelCooldowns, ConnectionState,
    ConnectionStates, ConnectionStatesMeta, CooldownConnection, CooldownList, DbInfo, ExclusionStatus, HealthReport,
    LeaseInfo, LockoutBrief, ModelCooldown, ModelCooldownList, ProviderConnections, QueueInfo, ResetResult,
    SessionAffinityInfo, SessionPins, SystemInfo,
};
use sea_orm::ConnectionTrait;
use std::{collections::BTreeMap, time::Duration};

use super::ServiceError;
use crate::{
    db::connections,
    resilience::concurrency::{GateKey, Level},
    resilience::{breaker::BreakerState, engine::BreakerView, lockout::Lock},
    routing::registry::{LiveConnection, Snapshot},
    services::status::Status,
    state::AppState,
    upstream::catalog,
};

/// How long a health report is reused.
const HEALTH_CACHE: Duration = Duration::from_secs(1);

fn iso(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339())
}

fn breaker_info(b: &BreakerView) -> BreakerInfo {
    BreakerInfo {
        provider: b.provider.clone(),
        state: b.state.as_str().to_owned(),
        failure_count: b.failure_count,
        last_failure: b.last_failure_at.and_then(iso),
        retry_after_ms: b.retry_after_ms,
    }
}

fn model_cooldown(l: &Lock, now: i64, snapshot: &Snapshot) -> ModelCooldown {
    ModelCooldown {
        provider: l.provider.clone(),
        connection_id: l.connection_id.clone(),
        connection_name: snapshot.connection(&l.connection_id).map(|c| c.name.clone()),
        model: l.model.clone(),
        reason: l.reason.as_str().to_owned(),
        remaining_ms: u64::try_from(l.until - now).unwrap_or(0),
        expires_at: l.until,
        failure_count: l.failure_count,
    }
}

fn brief(l: &Lock, now: i64) -> LockoutBrief {
    LockoutBrief {
        model: l.model.clone(),
        reason: l.reason.as_str().to_owned(),
        remaining_ms: u64::try_from(l.until - now).unwrap_or(0),
    }
}

/// The resident set size of this process, from `/proc` (0 elsewhere).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// `GET /api/monitoring/health`, cached for a second.
pub async fn health(state: &AppState) -> HealthReport {
    if let Some((at, report)) = state.health_cache.lock().as_ref()
        && at.elapsed() < HEALTH_CACHE
    {
        return report.clone();
    }
    let report = build_health(state).await;
    *state.health_cache.lock() = Some((tokio::time::Instant::now(), report.clone()));
    report
}

async fn build_health(state: &AppState) -> HealthReport {
    let now = state.engine.now();
    let status = Status::of(state);
    let breakers: Vec<&BreakerView> = status.breakers().collect();
    let snapshot = state.routing.connections.snapshot();
    let mut counts = BreakerCounts::default();
    let providers: Vec<&str> = snapshot.active_providers().map(|p| p.id).collect();
    for b in &breakers {
        match b.state {
            BreakerState::Open => counts.open += 1,
            BreakerState::HalfOpen => counts.half_open += 1,
            BreakerState::Degraded => counts.degraded += 1,
            BreakerState::Closed => counts.closed += 1,
        }
    }
    let quiet_active = providers.iter().filter(|p| !breakers.iter().any(|b| b.provider == **p)).count();
    counts.closed += u32::try_from(quiet_active).unwrap_or(0);
    counts.total = counts.open + counts.half_open + counts.degraded + counts.closed;
    let mut connection_health = BTreeMap::new();
    for p in &providers {
        let mut entry = ProviderConnections::default();
        for c in snapshot.candidates(p) {
            entry.total += 1;
            let health = state.engine.health(&c.id);
            let remaining = health.remaining_ms(now);
            if health.terminal.is_some() {
                entry.terminal += 1;
            } else if remaining > 0 {
                entry.cooling_down += 1;
                entry.soonest_retry_after_ms =
                    Some(entry.soonest_retry_after_ms.map_or(remaining, |s| s.min(remaining)));
            }
        }
        connection_health.insert((*p).to_owned(), entry);
    }
    let db_ok = state.db.execute_unprepared("SELECT 1").await.is_ok();
    let (summary, status_reasons) = status.summary(&connection_health, db_ok);
    let mut provider_breakers: Vec<BreakerInfo> = breakers.iter().map(|b| breaker_info(b)).collect();
    provider_breakers.sort_by(|a, b| a.provider.cmp(&b.provider));
    HealthReport {
        status: summary,
        status_reasons,
        timestamp: iso(now).unwrap_or_default(),
        system: SystemInfo {
            uptime_s: state.started_at.elapsed().as_secs(),
            rss_bytes: rss_bytes(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        db: DbInfo { ok: db_ok, log_rows_dropped: state.store.logs.dropped() },
        circuit_breakers: counts,
        provider_breakers,
        connection_health,
        lockouts: state.engine.lockouts().iter().map(|l| model_cooldown(l, now, &snapshot)).collect(),
        queues: queues(state, &snapshot),
        waiting_for_cooldown: state.admission.waiting_for_cooldown.load(std::sync::atomic::Ordering::Relaxed),
        session_affinity: session_affinity(state, &snapshot),
        session_leases: session_leases(state, &snapshot),
        instances: super::instances::list(state).await,
    }
}

/// The active leases of live connections, soonest to end first.
fn session_leases(state: &AppState, snapshot: &Snapshot) -> Vec<LeaseInfo> {
    let now = state.routing.leases.now();
    let mut leases: Vec<LeaseInfo> = state
        .routing
        .leases
        .active()
        .into_iter()
        .filter_map(|l| {
            let conn = snapshot.connection(&l.connection_id)?;
            Some(LeaseInfo {
                provider: l.provider.to_owned(),
                connection_id: conn.id.clone(),
                connection: conn.name.clone(),
                owner_hash: l.owner.hex()[..8].to_owned(),
                generation: l.generation,
                expires_at: l.expires_at,
                remaining_ms: u64::try_from(l.expires_at - now).unwrap_or(0),
            })
        })
        .collect();
    leases.sort_by_key(|l| l.expires_at);
    leases
}

/// The unexpired pins per live connection, most first.
fn session_affinity(state: &AppState, snapshot: &Snapshot) -> SessionAffinityInfo {
    let ttl_ms = state.resilience.current().session_affinity_ttl_ms;
    let mut pins: Vec<SessionPins> = state
        .routing
        .affinity
        .pinned_per_connection(ttl_ms)
        .into_iter()
        .filter_map(|(id, n)| {
            let conn = snapshot.connection(&id)?;
            Some(SessionPins {
                provider: conn.provider.id.to_owned(),
                connection_id: conn.id.clone(),
                connection: conn.name.clone(),
                sessions: u32::try_from(n).unwrap_or(u32::MAX),
            })
        })
        .collect();
    pins.sort_by(|a, b| b.sessions.cmp(&a.sessions).then_with(|| a.connection.cmp(&b.connection)));
    SessionAffinityInfo { ttl_ms, pins }
}

/// The concurrency gates (`qsconn:…`) and request queues
/// (`provider:connection[:model]`) of the connections that exist, by identity.
fn queues(state: &AppState, snapshot: &Snapshot) -> BTreeMap<String, QueueInfo> {
    let info = |kind: &str, conn: &LiveConnection, model: Option<&str>| QueueInfo {
        provider: conn.provider.id.to_owned(),
        connection_id: conn.id.clone(),
        connection: conn.name.clone(),
        model: model.map(str::to_owned),
        ..blank(kind)
    };
    let gates = state.admission.concurrency.snapshot().into_iter().filter_map(|(key, counts)| {
        let counted =
            |base: QueueInfo| QueueInfo { queued: counts.queued, running: counts.running, limit: counts.limit, ..base };
        if key.level == Level::Global {
            return Some((key.to_string(), counted(global_gate())));
        }
        let conn = snapshot.connection(&key.connection_id)?;
        Some((key.to_string(), counted(info("concurrency", conn, key.model.as_deref()))))
    });
    let (now, now_ms) = (tokio::time::Instant::now(), state.engine.now());
    let rate_limits = state.admission.queues.snapshot().into_iter().filter_map(|(queue, counts)| {
        let conn = snapshot.connection(&queue.connection_id)?;
        let paused_until = counts.paused_until.map(|at| {
            now_ms.saturating_add(i64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(i64::MAX))
        });
        let info = QueueInfo {
            queued: counts.queued,
            running: counts.running,
            limit: counts.limit,
            paused_until,
            ..info("rate_limit", conn, queue.model.as_deref())
        };
        Some((queue.id.clone(), info))
    });
    let mut out: BTreeMap<String, QueueInfo> = gates.chain(rate_limits).collect();
    // A gate is made at its first request, so after a restart a limit
    // nobody has hit yet still shows, idle.
    let global = state.resilience.current().request_queue.global_concurrent_requests;
    let idle = |base: QueueInfo, limit: u32| QueueInfo { limit, ..base };
    if let Some(cap) = u32::try_from(global).ok().filter(|c| *c > 0) {
        out.entry(GateKey::global().to_string()).or_insert_with(|| idle(global_gate(), cap));
    }
    for conn in snapshot.all() {
        if let Some(cap) = conn.limits.max_concurrent {
            out.entry(GateKey::account(&conn.id).to_string())
                .or_insert_with(|| idle(info("concurrency", conn, None), cap));
        }
        for (model, &cap) in &conn.limits.overrides.model_concurrency {
            out.entry(GateKey::model(&conn.id, model).to_string())
                .or_insert_with(|| idle(info("concurrency", conn, Some(model)), cap));
        }
    }
    out
}

/// The row of `globalConcurrentRequests`' gate, nothing counted yet.
fn global_gate() -> QueueInfo {
    QueueInfo { provider: "*".to_owned(), connection: "all connections".to_owned(), ..blank("concurrency") }
}

/// A queue row with nothing counted yet.
fn blank(kind: &str) -> QueueInfo {
    QueueInfo {
        kind: kind.to_owned(),
        provider: String::new(),
        connection_id: String::new(),
        connection: String::new(),
        model: None,
        queued: 0,
        running: 0,
        limit: 0,
        paused_until: None,
    }
}

/// Resets breakers (one provider or all), their model lockouts and
/// their window gate.
pub fn reset(state: &AppState, provider: Option<&str>) -> ResetResult {
    let breakers = state.engine.reset_breakers(provider);
    let lockouts = state.engine.clear_lockouts(provider, None, None);
    state.engine.clear_window_gate(provider);
    state.health_cache.lock().take();
    let n = u32::try_from(breakers).unwrap_or(u32::MAX);
    tracing::info!(provider = provider.unwrap_or("*"), breakers, lockouts, "circuit breakers reset");
    ResetResult { ok: true, reset_count: n, message: format!("Reset {n} circuit breaker(s) and model lockouts") }
}

pub fn model_cooldowns(state: &AppState) -> ModelCooldownList {
    let now = state.engine.now();
    let snapshot = state.routing.connections.snapshot();
    ModelCooldownList { items: state.engine.lockouts().iter().map(|l| model_cooldown(l, now, &snapshot)).collect() }
}

/// Lifts model lockouts; how many.
pub fn clear_model_cooldowns(state: &AppState, req: &ClearModelCooldowns) -> Result<usize, ServiceError> {
    req.validate().map_err(ServiceError::Invalid)?;
    if req.all == Some(true) {
        return Ok(state.engine.clear_lockouts(None, None, None));
    }
    Ok(state.engine.clear_lockouts(req.provider.as_deref(), req.connection.as_deref(), req.model.as_deref()))
}

/// Every connection excluded right now (cooling, model-locked, terminal).
pub async fn cooldowns(state: &AppState, provider: Option<&str>) -> Result<CooldownList, ServiceError> {
    let now = state.engine.now();
    let locks = state.engine.lockouts();
    let mut out = Vec::new();
    for row in connections::list(&state.db, provider).await? {
        let h = state.engine.health(&row.id);
        let lockouts: Vec<LockoutBrief> =
            locks.iter().filter(|l| l.connection_id == row.id).map(|l| brief(l, now)).collect();
        let remaining = h.remaining_ms(now);
        let status = if h.terminal.is_some() {
            ExclusionStatus::Terminal
        } else if remaining > 0 {
            ExclusionStatus::CoolingDown
        } else if !lockouts.is_empty() {
            ExclusionStatus::ModelLocked
        } else {
            continue;
        };
        out.push(CooldownConnection {
            id: row.id,
            provider: row.provider,
            name: row.name,
            status,
            terminal_status: h.terminal.map(|t| t.as_str().to_owned()),
            cooldown_remaining_ms: remaining,
            rate_limited_until: h.rate_limited_until,
            backoff_level: h.backoff_level,
            last_error_type: h.last_error_type,
            last_error: h.last_error,
            lockouts,
        });
    }
    let snapshot = state.routing.connections.snapshot();
    let providers: Vec<&str> =
        snapshot.active_providers().map(|p| p.id).filter(|p| provider.is_none_or(|f| f == *p)).collect();
    let providers = Status::of(state).provider_exclusions(state, &providers);
    Ok(CooldownList { connections: out, providers, generated_at: now })
}

/// Clears cooldowns and lockouts of the named (or all) connections;
/// terminal ones are counted and left alone.
pub async fn clear_cooldowns(state: &AppState, req: &ClearCooldowns) -> Result<ClearCooldownsResult, ServiceError> {
    req.validate().map_err(ServiceError::Invalid)?;
    let ids: Vec<String> = match &req.connection_ids {
        Some(ids) => ids.clone(),
        None => connections::list(&state.db, req.provider.as_deref()).await?.into_iter().map(|r| r.id).collect(),
    };
    let mut result = ClearCooldownsResult { ok: true, ..Default::default() };
    for id in ids {
        if state.engine.health(&id).terminal.is_some() {
            result.skipped_terminal += 1;
            continue;
        }
        let cleared = state.engine.clear_connection(&id, false);
        let locks = u32::try_from(state.engine.clear_lockouts(None, Some(&id), None)).unwrap_or(u32::MAX);
        result.lockouts_cleared += locks;
        if cleared || locks > 0 {
            result.cleared += 1;
        } else {
            result.unchanged += 1;
        }
    }
    tracing::info!(cleared = result.cleared, skipped_terminal = result.skipped_terminal, "cooldowns cleared");
    Ok(result)
}

/// Every connection with its resilience state (limit 1000).
pub async fn connection_states(state: &AppState, provider: Option<&str>) -> Result<ConnectionStates, ServiceError> {
    let now = state.engine.now();
    let settings = state.resilience.current();
    let breakers = state.engine.breakers(&settings, catalog::category_of);
    let locks = state.engine.lockouts();
    let mut rows = connections::list(&state.db, provider).await?;
    rows.truncate(1000);
    let connections: Vec<ConnectionState> = rows
        .into_iter()
        .map(|row| {
            let h = state.engine.health(&row.id);
            let breaker = breakers.iter().find(|b| b.provider == row.provider);
            let remaining = h.remaining_ms(now);
            let status = if h.terminal.is_some() {
                "terminal"
            } else if remaining > 0 {
                "cooling_down"
            } else if breaker.is_some_and(|b| b.state == BreakerState::Open) {
                "circuit_open"
            } else {
                "healthy"
            };
            ConnectionState {
                connection_status: status.to_owned(),
                terminal_status: h.terminal.map(|t| t.as_str().to_owned()),
                rate_limited_until: h.rate_limited_until,
                cooldown_remaining_ms: remaining,
                backoff_level: h.backoff_level,
                last_error_type: h.last_error_type,
                error_code: h.error_code,
                breaker: breaker.map(breaker_info),
                lockouts: locks.iter().filter(|l| l.connection_id == row.id).map(|l| brief(l, now)).collect(),
                id: row.id,
                provider: row.provider,
                name: row.name,
                auth_type: row.auth_type,
                priority: row.priority,
                is_active: row.is_active,
            }
        })
        .collect();
    let meta = ConnectionStatesMeta {
        total_connections: u32::try_from(connections.len()).unwrap_or(u32::MAX),
        cooling_down_count: u32::try_from(connections.iter().filter(|c| c.cooldown_remaining_ms > 0).count())
            .unwrap_or(0),
        unhealthy_breaker_count: u32::try_from(breakers.iter().filter(|b| b.state != BreakerState::Closed).count())
            .unwrap_or(0),
    };
    Ok(ConnectionStates { connections, breakers: breakers.iter().map(breaker_info).collect(), meta })
}
