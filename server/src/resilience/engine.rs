//! The live resilience state of the process and the one place that
//! applies a failure's verdict or a success to it: provider breakers,
//! connection health and model lockouts (SPEC §R1–§R3).
//!
//! Hot-path cost in the healthy case is a few atomic loads: each provider
//! and connection carries a "quiet"/"clean" flag, and the per-provider or
//! per-connection mutex is only taken when there is state to look at or
//! change. Nothing here takes a process-wide lock on a healthy request, and
//! nothing touches the database (changes go to the write-behind writer).

use app::types::{
    Category,
    settings::{ErrorReason, ProviderCooldownSettings, ProviderWindowProfile, ResilienceSettings, RuleScope},
};
use dashmap::DashMap;
use http::HeaderMap;
use parking_lot::Mutex;
use std::{
    net::IpAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
};

use super::{
    breaker::{Breaker, BreakerConfig, BreakerState},
    classify::{self, Verdict},
    clock::Clock,
    connection_health::{ConnectionHealth, Marked, TerminalStatus},
    egress::EgressMap,
    lockout::{ESCALATION_WINDOW_MS, LockFailure, Lockouts},
    provider_cooldown::ProviderCooldowns,
    restate, retry_hints, rules,
};

/// Network errors of one connection closer together than this count once
/// against the breaker.
pub const NETWORK_ERROR_DEDUP_MS: i64 = 5_000;

/// A state change the write-behind writer persists.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Breaker(String, Breaker),
    Connection(String, ConnectionHealth),
}

struct ProviderSlot {
    breaker: Mutex<Breaker>,
    /// CLOSED with no failures: nothing to check or record.
    quiet: AtomicBool,
}

struct ConnectionSlot {
    health: Mutex<ConnectionHealth>,
    /// No error, cooldown or terminal state recorded.
    clean: AtomicBool,
    last_network_failure: AtomicI64,
}

/// Why a connection cannot serve this model now.
#[derive(Clone, Debug, PartialEq)]
pub enum Exclusion {
    Terminal(TerminalStatus),
    Cooling { remaining_ms: u64, error_code: Option<u16>, last_error: Option<String> },
    ModelLocked { remaining_ms: u64 },
}

/// One failed attempt, as dispatch saw it.
pub struct AttemptFailure<'a> {
    pub provider: &'static str,
    pub connection_id: &'a str,
    pub model: &'a str,
    /// Whether the connection is OAuth (else the API-key profile applies).
    pub oauth: bool,
    pub disable_cooling: bool,
    /// A content stall (SPEC §R2): recorded on the connection, cooled only
    /// when `streamStallCooldown.enabled`.
    pub stall: bool,
    /// `None` for transport errors.
    pub status: Option<u16>,
    pub headers: &'a HeaderMap,
    pub body: &'a str,
    /// The local address the attempt left from, when a response came back.
    pub egress_ip: Option<IpAddr>,
}

/// A breaker as the monitoring API shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakerView {
    pub provider: String,
    pub state: BreakerState,
    pub failure_count: u32,
    pub last_failure_at: Option<i64>,
    pub retry_after_ms: u64,
}

/// What dispatch does with a failure.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub verdict: Verdict,
    /// The status after restatement.
    pub status: Option<u16>,
    /// Seconds the client should wait, when known.
    pub retry_after_secs: Option<u64>,
}

pub struct Engine {
    clock: Arc<dyn Clock>,
    providers: DashMap<String, Arc<ProviderSlot>>,
    connections: DashMap<String, Arc<ConnectionSlot>>,
    lockouts: Mutex<Lockouts>,
    /// Until when any recorded lockout can still matter (lock or
    /// escalation window); after it the lockout map is not even looked at,
    /// so healthy requests never take its mutex.
    lock_horizon: AtomicI64,
    /// The §R1.1 window gate (combo targets only, off by default).
    windows: Mutex<ProviderCooldowns>,
    /// The window gate holds an entry; until then its mutex is not taken.
    windows_used: AtomicBool,
    egress: EgressMap,
    changes: Option<tokio::sync::mpsc::UnboundedSender<Change>>,
}

/// A half-open probe slot; given back unless the attempt reached a verdict.
pub struct Probe {
    slot: Arc<ProviderSlot>,
    cfg: BreakerConfig,
    done: bool,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.done {
            self.slot.breaker.lock().release_probe(&self.cfg);
        }
    }
}

/// The §R1.1 window profile of a provider class.
fn window_profile(s: &ProviderCooldownSettings, category: Category) -> &ProviderWindowProfile {
    match category {
        Category::Oauth => &s.oauth,
        Category::Apikey => &s.apikey,
        Category::Local => &s.local,
    }
}

/// The breaker profile of a provider class.
pub fn breaker_config(settings: &ResilienceSettings, category: Category) -> BreakerConfig {
    let b = &settings.provider_breaker;
    BreakerConfig::from(match category {
        Category::Oauth => &b.oauth,
        Category::Apikey => &b.apikey,
        Category::Local => &b.local,
    })
}

impl Engine {
    /// An engine whose changes go to `changes` (the persistence writer).
    pub fn new(clock: Arc<dyn Clock>, changes: Option<tokio::sync::mpsc::UnboundedSender<Change>>) -> Self {
        Self {
            clock,
            providers: DashMap::new(),
            connections: DashMap::new(),
            lockouts: Mutex::default(),
            lock_horizon: AtomicI64::new(i64::MIN),
            windows: Mutex::default(),
            windows_used: AtomicBool::new(false),
            egress: EgressMap::default(),
            changes,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Waits on the engine's clock (a cooldown wait).
    pub async fn sleep(&self, ms: u64) {
        self.clock.sleep(ms).await;
    }

    fn emit(&self, change: Change) {
        if let Some(tx) = &self.changes {
            let _ = tx.send(change);
        }
    }

    fn provider(&self, provider: &str) -> Arc<ProviderSlot> {
        if let Some(slot) = self.providers.get(provider) {
            return slot.clone();
        }
        let slot = Arc::new(ProviderSlot { breaker: Mutex::default(), quiet: AtomicBool::new(true) });
        self.providers.entry(provider.to_owned()).or_insert(slot).clone()
    }

    fn connection(&self, id: &str) -> Arc<ConnectionSlot> {
        if let Some(slot) = self.connections.get(id) {
            return slot.clone();
        }
        let slot = Arc::new(ConnectionSlot {
            health: Mutex::default(),
            clean: AtomicBool::new(true),
            last_network_failure: AtomicI64::new(i64::MIN),
        });
        self.connections.entry(id.to_owned()).or_insert(slot).clone()
    }

    /// Restores a breaker from storage.
    pub fn restore_breaker(&self, provider: &str, breaker: Breaker) {
        let slot = self.provider(provider);
        let quiet = breaker == Breaker::default();
        *slot.breaker.lock() = breaker;
        slot.quiet.store(quiet, Ordering::Release);
    }

    /// Restores a connection's health from its row (only the first time
    /// the process sees it: memory is authoritative afterwards).
    pub fn restore_connection(&self, id: &str, health: ConnectionHealth) {
        if self.connections.contains_key(id) {
            return;
        }
        let slot = self.connection(id);
        slot.clean.store(health == ConnectionHealth::default(), Ordering::Release);
        *slot.health.lock() = health;
    }

    /// §R1 gate: `Ok(probe)` when the provider may be called (holding a
    /// probe slot while HALF_OPEN), `Err(retry_after_ms)` while OPEN.
    pub fn admit(&self, provider: &str, cfg: &BreakerConfig) -> Result<Option<Probe>, u64> {
        let slot = self.provider(provider);
        if slot.quiet.load(Ordering::Acquire) {
            return Ok(None);
        }
        let now = self.now();
        let mut b = slot.breaker.lock();
        if !b.try_acquire(cfg, now) {
            return Err(b.retry_after_ms(cfg, now).max(1));
        }
        let probing = b.state(cfg, now) == BreakerState::HalfOpen;
        drop(b);
        Ok(probing.then(|| Probe { slot, cfg: cfg.clone(), done: false }))
    }

    /// Why this connection cannot serve `model` now, if it cannot. Also
    /// resets the ladder of a connection whose cooldown has passed.
    pub fn exclusion(&self, provider: &str, connection_id: &str, model: &str) -> Option<Exclusion> {
        let now = self.now();
        if let Some(slot) = self.connections.get(connection_id).map(|s| s.clone())
            && !slot.clean.load(Ordering::Acquire)
        {
            let mut h = slot.health.lock();
            if let Some(t) = h.terminal {
                return Some(Exclusion::Terminal(t));
            }
            let remaining_ms = h.remaining_ms(now);
            if remaining_ms > 0 {
                return Some(Exclusion::Cooling {
                    remaining_ms,
                    error_code: h.error_code.as_deref().and_then(|c| c.parse().ok()),
                    last_error: h.last_error.clone(),
                });
            }
            if h.on_selected(now) {
                self.emit(Change::Connection(connection_id.to_owned(), h.clone()));
            }
        }
        if now < self.lock_horizon.load(Ordering::Acquire)
            && let Some(lock) = self.lockouts.lock().locked_for(provider, connection_id, model, now)
        {
            return Some(Exclusion::ModelLocked { remaining_ms: u64::try_from(lock.until - now).unwrap_or(0) });
        }
        None
    }

    /// Restates, classifies and applies one failure: connection cooldown
    /// or terminal state (serialized per connection), model lockout,
    /// breaker failure. The verdict tells dispatch what to do next.
    pub fn on_failure(
        &self,
        f: &AttemptFailure<'_>,
        settings: &ResilienceSettings,
        cfg: &BreakerConfig,
        probe: Option<&mut Probe>,
    ) -> Outcome {
        let now = self.now();
        let header_hint = retry_hints::from_headers(f.headers, now);
        let restated = f.status.map(|s| restate::restate(f.provider, s, f.body, header_hint));
        let status = restated.as_ref().map(|r| r.status).or(f.status);
        let rule = status.and_then(|s| rules::find(f.provider, s, f.headers, f.body, &settings.provider_error_rules));
        let profile = if f.oauth { &settings.connection_cooldown.oauth } else { &settings.connection_cooldown.apikey };
        let slot = self.connection(f.connection_id);
        let mut health = slot.health.lock();
        let verdict = classify::classify(&classify::Failure {
            status,
            headers: f.headers,
            body: f.body,
            backoff_level: health.backoff_level,
            profile,
            max_cooldown_ms: settings.model_lockout.max_cooldown_ms,
            rule: rule.clone(),
            now_ms: now,
        });
        // A model-scoped rule (where honoured) locks the model, not the
        // connection; so does a quota verdict on a connection that opts
        // out of cooling.
        let model_scoped = rule.as_ref().is_some_and(|r| r.honored_scope && r.scope == RuleScope::Model);
        let cool = !f.disable_cooling && !model_scoped && (!f.stall || settings.stream_stall_cooldown.enabled);
        let marked = health.mark_failure(&verdict, status, f.body, now, cool);
        slot.clean.store(*health == ConnectionHealth::default(), Ordering::Release);
        let health_now = health.clone();
        drop(health);
        if !matches!(marked, Marked::StillCooling(_)) {
            self.emit(Change::Connection(f.connection_id.to_owned(), health_now));
        }
        let hint = header_hint.or_else(|| retry_hints::from_body(f.body, now));
        let lock = LockFailure {
            provider: f.provider,
            connection_id: f.connection_id,
            model: f.model,
            status,
            reason: verdict.reason,
            hint_ms: hint,
            now_ms: now,
        };
        let locked = {
            let mut lockouts = self.lockouts.lock();
            if model_scoped || (f.disable_cooling && verdict.cooldown_ms > 0) {
                Some(lockouts.force(&lock, verdict.cooldown_ms.min(settings.model_lockout.max_cooldown_ms)))
            } else {
                lockouts.record_failure(&lock, &settings.model_lockout)
            }
        };
        if let Some(cooldown_ms) = locked {
            let matters_for = cooldown_ms.saturating_add(ESCALATION_WINDOW_MS).saturating_mul(2);
            let horizon = now.saturating_add(i64::try_from(matters_for).unwrap_or(i64::MAX));
            self.lock_horizon.fetch_max(horizon, Ordering::AcqRel);
        }
        if classify::trips_breaker(status, &verdict) && !self.duplicate_network_error(&slot, f.status, now) {
            let slot = self.provider(f.provider);
            let mut b = slot.breaker.lock();
            b.on_failure(cfg, now, classify::failure_kind(status, f.body));
            slot.quiet.store(false, Ordering::Release);
            self.emit(Change::Breaker(f.provider.to_owned(), b.clone()));
        }
        if let Some(p) = probe {
            p.done = true;
        }
        let retry_ms = restated
            .and_then(|r| r.retry_after_ms)
            .or(hint)
            .or((verdict.cooldown_ms > 0).then_some(verdict.cooldown_ms));
        Outcome { verdict, status, retry_after_secs: retry_ms.map(|ms| ms.div_ceil(1000)) }
    }

    fn duplicate_network_error(&self, slot: &ConnectionSlot, status: Option<u16>, now: i64) -> bool {
        if status.is_some() {
            return false;
        }
        let last = slot.last_network_failure.swap(now, Ordering::AcqRel);
        last != i64::MIN && now - last < NETWORK_ERROR_DEDUP_MS
    }

    /// A success: clear the connection's errors, decay the model's
    /// lockout, count a breaker success (closing a half-open one).
    pub fn on_success(
        &self,
        provider: &str,
        connection_id: &str,
        model: &str,
        cfg: &BreakerConfig,
        probe: Option<Probe>,
    ) {
        let now = self.now();
        if let Some(mut p) = probe {
            p.done = true;
        }
        let pslot = self.provider(provider);
        if !pslot.quiet.load(Ordering::Acquire) {
            let mut b = pslot.breaker.lock();
            b.on_success(cfg, now);
            let quiet = *b == Breaker::default();
            pslot.quiet.store(quiet, Ordering::Release);
            self.emit(Change::Breaker(provider.to_owned(), b.clone()));
        }
        if let Some(slot) = self.connections.get(connection_id).map(|s| s.clone())
            && !slot.clean.load(Ordering::Acquire)
        {
            let mut h = slot.health.lock();
            if h.clear() {
                self.emit(Change::Connection(connection_id.to_owned(), h.clone()));
            }
            slot.clean.store(*h == ConnectionHealth::default(), Ordering::Release);
        }
        if now < self.lock_horizon.load(Ordering::Acquire) {
            self.lockouts.lock().decay(provider, connection_id, model);
        }
    }

    /// §R1.1 window gate, consulted before a combo target: how long the
    /// target (its pinned connection, else its provider) is still held
    /// back; 0 when the gate is off or open.
    pub fn target_cooldown_ms(
        &self,
        provider: &str,
        category: Category,
        pinned: Option<&str>,
        s: &ProviderCooldownSettings,
    ) -> u64 {
        if !s.enabled || !self.windows_used.load(Ordering::Acquire) {
            return 0;
        }
        let now = self.now();
        let mut w = self.windows.lock();
        match pinned {
            Some(id) => w.connection_remaining_ms(provider, id, s, now),
            None => w.provider_remaining_ms(provider, window_profile(s, category), now),
        }
    }

    /// §R1.1: a combo target failed (every attempt of it).
    pub fn record_target_failure(
        &self,
        provider: &str,
        category: Category,
        pinned: Option<&str>,
        s: &ProviderCooldownSettings,
    ) {
        if !s.enabled {
            return;
        }
        let now = self.now();
        let mut w = self.windows.lock();
        match pinned {
            Some(id) => w.record_connection_failure(provider, id, now),
            None => w.record_provider_failure(provider, window_profile(s, category), now),
        }
        self.windows_used.store(true, Ordering::Release);
    }

    /// §R1.1: a combo target served; its window starts over.
    pub fn record_target_success(&self, provider: &str, pinned: Option<&str>) {
        if self.windows_used.load(Ordering::Acquire) {
            let mut w = self.windows.lock();
            w.record_success(provider, pinned);
            self.windows_used.store(!w.is_empty(), Ordering::Release);
        }
    }

    /// Remembers where a connection of an egress-bucketed provider left
    /// from (§R7).
    pub fn record_egress(&self, connection_id: &str, ip: IpAddr) {
        self.egress.record(connection_id, ip, self.now());
    }

    /// An egress observation read back from `proxy_logs` at start.
    pub fn restore_egress(&self, connection_id: &str, ip: IpAddr, at: i64) {
        self.egress.restore(connection_id, ip, at);
    }

    /// The egress-bucketed lock (§R7) applies to this failure: an
    /// allow-listed provider, a 429 classified as a quota or rate limit
    /// with a cooldown to share, and a known egress IP (this response's,
    /// else the last one seen). Returns that IP.
    pub fn egress_lock_ip(&self, f: &AttemptFailure<'_>, o: &Outcome, settings: &ResilienceSettings) -> Option<IpAddr> {
        let applies = settings.egress_ip_lock_providers.iter().any(|p| p == f.provider)
            && o.status == Some(429)
            && matches!(o.verdict.reason, ErrorReason::QuotaExhausted | ErrorReason::RateLimited)
            && o.verdict.cooldown_ms > 0;
        if !applies {
            return None;
        }
        f.egress_ip.or_else(|| self.egress.ip_of(f.connection_id, self.now()))
    }

    /// Cools the members of `pool` (connections of allow-listed providers
    /// that may cool) last seen on `ip` until the failing one's cooldown
    /// ends (§R7). Returns the ids whose state changed.
    pub fn cool_egress_siblings<'p>(
        &self,
        failing_id: &str,
        ip: IpAddr,
        verdict: &Verdict,
        pool: impl IntoIterator<Item = &'p str>,
    ) -> Vec<&'p str> {
        let now = self.now();
        let own = self.connections.get(failing_id).and_then(|slot| slot.health.lock().rate_limited_until);
        let until = own.unwrap_or_else(|| now.saturating_add(i64::try_from(verdict.cooldown_ms).unwrap_or(i64::MAX)));
        let siblings = self.egress.sharing(ip, pool.into_iter().filter(|id| *id != failing_id), now);
        siblings
            .into_iter()
            .filter(|id| {
                let slot = self.connection(id);
                let mut h = slot.health.lock();
                let changed = h.mark_shared_limit(verdict, failing_id, until);
                if changed {
                    slot.clean.store(false, Ordering::Release);
                    self.emit(Change::Connection((*id).to_owned(), h.clone()));
                }
                changed
            })
            .collect()
    }

    /// Every breaker that has seen a failure, by provider, after refresh.
    pub fn breakers(&self, settings: &ResilienceSettings) -> Vec<BreakerView> {
        let now = self.now();
        let mut out: Vec<BreakerView> = self
            .providers
            .iter()
            .filter(|e| !e.value().quiet.load(Ordering::Acquire))
            .map(|e| {
                let category =
                    crate::upstream::catalog::find(e.key()).map_or(app::types::Category::Apikey, |p| p.category);
                let cfg = breaker_config(settings, category);
                let mut b = e.value().breaker.lock();
                BreakerView {
                    provider: e.key().clone(),
                    state: b.state(&cfg, now),
                    failure_count: b.failure_count(),
                    last_failure_at: b.last_failure_at(),
                    retry_after_ms: b.retry_after_ms(&cfg, now),
                }
            })
            .collect();
        out.sort_by(|a, b| a.provider.cmp(&b.provider));
        out
    }

    /// A passing connection test heals a DEGRADED breaker at once.
    pub fn on_connection_test_passed(
        &self,
        provider: &crate::upstream::catalog::Provider,
        settings: &ResilienceSettings,
    ) {
        let Some(slot) = self.providers.get(provider.id).map(|s| s.clone()) else { return };
        let cfg = breaker_config(settings, provider.category);
        let mut b = slot.breaker.lock();
        b.on_connection_test_passed(&cfg, self.now());
        let quiet = *b == Breaker::default();
        slot.quiet.store(quiet, Ordering::Release);
        self.emit(Change::Breaker(provider.id.to_owned(), b.clone()));
    }

    /// Resets one provider's breaker (or all); how many were not closed.
    pub fn reset_breakers(&self, provider: Option<&str>) -> usize {
        let mut n = 0;
        for e in self.providers.iter().filter(|e| provider.is_none_or(|p| e.key() == p)) {
            let mut b = e.value().breaker.lock();
            if *b != Breaker::default() {
                n += 1;
                *b = Breaker::default();
                e.value().quiet.store(true, Ordering::Release);
                self.emit(Change::Breaker(e.key().clone(), b.clone()));
            }
        }
        n
    }

    /// The health of a connection (default when never seen).
    pub fn health(&self, connection_id: &str) -> ConnectionHealth {
        self.connections.get(connection_id).map(|s| s.health.lock().clone()).unwrap_or_default()
    }

    /// Clears a connection's transient cooldown; a terminal state stays
    /// unless `terminal_too`. Whether anything changed.
    pub fn clear_connection(&self, connection_id: &str, terminal_too: bool) -> bool {
        let Some(slot) = self.connections.get(connection_id).map(|s| s.clone()) else { return false };
        let mut h = slot.health.lock();
        let before = h.clone();
        if terminal_too {
            h.reset()
        } else if h.terminal.is_none() {
            h.clear();
        }
        slot.clean.store(*h == ConnectionHealth::default(), Ordering::Release);
        let changed = *h != before;
        if changed {
            self.emit(Change::Connection(connection_id.to_owned(), h.clone()));
        }
        changed
    }

    /// Lifts model lockouts matching the filters; how many.
    pub fn clear_lockouts(&self, provider: Option<&str>, connection_id: Option<&str>, model: Option<&str>) -> usize {
        let mut l = self.lockouts.lock();
        let n = l.clear(provider, connection_id, model);
        if l.is_empty() {
            self.lock_horizon.store(i64::MIN, Ordering::Release);
        }
        n
    }

    /// Active model lockouts, longest remaining first.
    pub fn lockouts(&self) -> Vec<super::lockout::Lock> {
        let now = self.now();
        self.lockouts.lock().active(now).into_iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests;
