//! The live resilience state of the process and the one place that
//! applies a failure's verdict or a success to it: provider breakers,
//! connection health and model lockouts (SPEC §R1–§R3).
//!
//! Hot-path cost in the healthy case is a few atomic loads: each provider
//! and connection carries a "quiet"/"clean" flag, and the per-provider or
//! per-connection mutex is only taken when there is state to look at or
//! change. Nothing here takes a process-wide lock on a healthy request, and
//! nothing touches the database (changes go to the store's outboxes).

use app::types::{
    Category,
    settings::{ErrorReason, ProviderCooldownSettings, ProviderWindowProfile, ResilienceSettings},
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
use tokio::sync::Notify;

use crate::outbox::Outbox;

use super::{
    breaker::{Breaker, BreakerConfig, BreakerState},
    breaker_history::BreakerHistory,
    classify::Verdict,
    clock::Clock,
    connection_health::{ConnectionHealth, TerminalStatus},
    egress::EgressMap,
    lockout::{Lock, Lockouts, QuotaScope},
    provider_cooldown::{ProviderCooldowns, Window},
};

/// Network errors of one connection closer together than this count once
/// against the breaker.
pub const NETWORK_ERROR_DEDUP_MS: i64 = 5_000;

/// A change of the engine's state that the store persists (`store::state`).
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Breaker(String, Breaker),
    Connection(String, ConnectionHealth),
    /// A connection's model lockouts, all of them, by key.
    Lockouts(String, Vec<(String, Lock)>),
    /// An entry of the §R1.1 window gate as it now is (told to other
    /// instances only, never stored).
    Window(Window),
}

/// Where the engine leaves its changes: the newest state of each breaker
/// and of each connection's health that changed (see [`Outbox`]).
#[derive(Clone)]
pub struct EngineChanges {
    pub breakers: Arc<Outbox<String, Breaker>>,
    pub connections: Arc<Outbox<String, ConnectionHealth>>,
    /// Each changed connection's model lockouts.
    pub lockouts: Arc<Outbox<String, Vec<(String, Lock)>>>,
    /// Each changed entry of the window gate, by its key.
    pub windows: Arc<Outbox<String, Window>>,
}

impl EngineChanges {
    /// Outboxes that wake the store's writer.
    pub fn new(wake: &Arc<Notify>) -> Self {
        Self {
            breakers: Arc::new(Outbox::new(wake.clone())),
            connections: Arc::new(Outbox::new(wake.clone())),
            lockouts: Arc::new(Outbox::new(wake.clone())),
            windows: Arc::new(Outbox::new(wake.clone())),
        }
    }

    /// Outboxes nobody drains (benches, tests of the engine alone).
    pub fn detached() -> Self {
        Self {
            breakers: Outbox::detached(),
            connections: Outbox::detached(),
            lockouts: Outbox::detached(),
            windows: Outbox::detached(),
        }
    }
}

#[derive(Default)]
struct ProviderSlot {
    breaker: Mutex<Breaker>,
    /// CLOSED with no failures: nothing to check or record.
    quiet: AtomicBool,
    /// The breaker's recent state changes (for Health's breaker band).
    history: Mutex<BreakerHistory>,
}

impl ProviderSlot {
    /// Notes the breaker's state after a change or a refresh.
    fn noted(&self, now: i64, b: &Breaker) {
        self.history.lock().note(now, b.stored_state());
    }
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
    /// `reason`: the classifier's reason for the cooldown, when known.
    Cooling {
        remaining_ms: u64,
        error_code: Option<u16>,
        last_error: Option<String>,
        reason: Option<ErrorReason>,
    },
    ModelLocked {
        remaining_ms: u64,
        reason: ErrorReason,
    },
}

impl Exclusion {
    /// How long until it lapses; `None` for a terminal state no timer ends.
    pub fn remaining_ms(&self) -> Option<u64> {
        match self {
            Self::Cooling { remaining_ms, .. } | Self::ModelLocked { remaining_ms, .. } => Some(*remaining_ms),
            Self::Terminal(_) => None,
        }
    }
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
    /// Where the provider meters its quota.
    pub quota_scope: QuotaScope,
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
    changes: EngineChanges,
    /// When this engine started (its clock), where breaker history begins.
    started_ms: i64,
    /// The Claude subscriptions' usage wall lanes (SPEC §R2.1).
    pub usage_wall: super::usage_wall::UsageWall,
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
    /// An engine whose changes go to `changes` (the store's outboxes).
    pub fn new(clock: Arc<dyn Clock>, changes: EngineChanges) -> Self {
        Self {
            providers: DashMap::new(),
            connections: DashMap::new(),
            lockouts: Mutex::default(),
            lock_horizon: AtomicI64::new(i64::MIN),
            windows: Mutex::default(),
            windows_used: AtomicBool::new(false),
            egress: EgressMap::default(),
            started_ms: clock.now_ms(),
            usage_wall: Default::default(),
            changes,
            clock,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    fn emit(&self, change: Change) {
        match change {
            Change::Breaker(provider, b) => self.changes.breakers.put(provider, b),
            Change::Connection(id, h) => self.changes.connections.put(id, h),
            Change::Lockouts(id, locks) => self.changes.lockouts.put(id, locks),
            Change::Window(w) => self.changes.windows.put(w.key(), w),
        }
    }

    /// Runs `f` on the model lockouts, then puts the locks of every
    /// connection it changed in the outbox.
    fn with_lockouts<R>(&self, f: impl FnOnce(&mut Lockouts) -> R) -> R {
        let mut lockouts = self.lockouts.lock();
        let result = f(&mut lockouts);
        for id in lockouts.take_touched() {
            let locks = lockouts.of_connection(&id);
            self.emit(Change::Lockouts(id, locks));
        }
        result
    }

    /// Takes a connection's model lockouts as another instance (or the
    /// last run) stored them, without putting them in the outbox again.
    pub fn adopt_lockouts(&self, connection_id: &str, locks: Vec<(String, Lock)>) {
        let now = self.now();
        let longest = locks.iter().map(|(_, l)| l.until).max().map(|until| u64::try_from(until - now).unwrap_or(0));
        self.lockouts.lock().replace_connection(connection_id, locks);
        if let Some(ms) = longest {
            self.extend_lock_horizon(now, ms);
        }
    }

    fn provider(&self, provider: &str) -> Arc<ProviderSlot> {
        if let Some(slot) = self.providers.get(provider) {
            return slot.clone();
        }
        let slot = Arc::new(ProviderSlot { quiet: AtomicBool::new(true), ..ProviderSlot::default() });
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
        slot.noted(self.now(), &breaker);
        *slot.breaker.lock() = breaker;
        slot.quiet.store(quiet, Ordering::Release);
    }

    /// Restores a connection's health from its row (only the first time
    /// the process sees it: memory is authoritative afterwards).
    pub fn restore_connection(&self, id: &str, health: ConnectionHealth) {
        if !self.connections.contains_key(id) {
            self.adopt_connection(id, health);
        }
    }

    /// Takes a connection's health as another instance stored it (a
    /// shared database): replaces what this process holds, without
    /// putting it in the outbox again.
    pub fn adopt_connection(&self, id: &str, health: ConnectionHealth) {
        let slot = self.connection(id);
        slot.clean.store(health == ConnectionHealth::default(), Ordering::Release);
        *slot.health.lock() = health;
    }

    /// An egress observation read back from `proxy_logs` at start.
    pub fn restore_egress(&self, connection_id: &str, ip: IpAddr, at: i64) {
        self.egress.restore(connection_id, ip, at);
    }

    /// Every breaker that has seen a failure, by provider, after refresh
    /// (`category_of` names each provider's class, for its profile).
    pub fn breakers(&self, settings: &ResilienceSettings, category_of: impl Fn(&str) -> Category) -> Vec<BreakerView> {
        let now = self.now();
        let mut out: Vec<BreakerView> = self
            .providers
            .iter()
            .filter(|e| !e.value().quiet.load(Ordering::Acquire))
            .map(|e| {
                let cfg = breaker_config(settings, category_of(e.key()));
                let mut b = e.value().breaker.lock();
                let state = b.state(&cfg, now);
                e.value().noted(now, &b);
                BreakerView {
                    provider: e.key().clone(),
                    state,
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
    pub fn on_connection_test_passed(&self, provider: &str, category: Category, settings: &ResilienceSettings) {
        let Some(slot) = self.providers.get(provider).map(|s| s.clone()) else { return };
        let cfg = breaker_config(settings, category);
        let mut b = slot.breaker.lock();
        b.on_connection_test_passed(&cfg, self.now());
        slot.noted(self.now(), &b);
        let quiet = *b == Breaker::default();
        slot.quiet.store(quiet, Ordering::Release);
        self.emit(Change::Breaker(provider.to_owned(), b.clone()));
    }

    /// Resets one provider's breaker (or all); how many were not closed.
    pub fn reset_breakers(&self, provider: Option<&str>) -> usize {
        let mut n = 0;
        for e in self.providers.iter().filter(|e| provider.is_none_or(|p| e.key() == p)) {
            let mut b = e.value().breaker.lock();
            if *b != Breaker::default() {
                n += 1;
                *b = Breaker::default();
                e.value().noted(self.now(), &b);
                e.value().quiet.store(true, Ordering::Release);
                self.emit(Change::Breaker(e.key().clone(), b.clone()));
            }
        }
        n
    }

    /// The breaker of `provider` over `from..to` (epoch ms), as far as
    /// this process saw it.
    pub fn breaker_spans(&self, provider: &str, from: i64, to: i64) -> Vec<app::types::traffic::BreakerSpan> {
        match self.providers.get(provider) {
            Some(slot) => slot.history.lock().spans(from, to, self.started_ms),
            None => BreakerHistory::default().spans(from, to, self.started_ms),
        }
    }

    /// Opens the §R1.1 window gate for one provider (or all).
    pub fn clear_window_gate(&self, provider: Option<&str>) {
        self.with_windows(|w| {
            let cleared = w.entries().into_iter().filter(|e| provider.is_none_or(|p| e.provider() == p));
            let cleared: Vec<Window> = cleared.map(Window::cleared).collect();
            w.clear(provider);
            cleared
        });
    }

    /// Merges an entry of the window gate another instance reported,
    /// without putting it in the outbox again.
    pub fn adopt_window(&self, window: Window) {
        let mut w = self.windows.lock();
        w.adopt(window);
        self.windows_used.store(!w.is_empty(), Ordering::Release);
    }

    /// Runs `f` on the window gate, which returns the entries it changed
    /// (as they now are), and puts them in the outbox.
    fn with_windows(&self, f: impl FnOnce(&mut ProviderCooldowns) -> Vec<Window>) {
        let mut w = self.windows.lock();
        let changed = f(&mut w);
        self.windows_used.store(!w.is_empty(), Ordering::Release);
        drop(w);
        for window in changed {
            self.emit(Change::Window(window));
        }
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

    /// The connection's credentials were refused for good (an OAuth refresh
    /// token the issuer no longer takes): terminal `expired` until the
    /// operator signs in again.
    pub fn expire_connection(&self, connection_id: &str, message: &str) {
        let slot = self.connection(connection_id);
        let mut h = slot.health.lock();
        h.terminal = Some(TerminalStatus::Expired);
        h.rate_limited_until = None;
        h.last_error = Some(message.to_owned());
        h.last_error_type = Some("auth_error".to_owned());
        slot.clean.store(false, Ordering::Release);
        self.emit(Change::Connection(connection_id.to_owned(), h.clone()));
    }

    /// Lifts model lockouts matching the filters; how many.
    pub fn clear_lockouts(&self, provider: Option<&str>, connection_id: Option<&str>, model: Option<&str>) -> usize {
        self.with_lockouts(|l| {
            let n = l.clear(provider, connection_id, model);
            if l.is_empty() {
                self.lock_horizon.store(i64::MIN, Ordering::Release);
            }
            n
        })
    }

    /// Active model lockouts, longest remaining first.
    pub fn lockouts(&self) -> Vec<super::lockout::Lock> {
        let now = self.now();
        self.lockouts.lock().active(now).into_iter().cloned().collect()
    }
}

mod effects;
mod gates;

pub use gates::Probe;

#[cfg(test)]
mod tests;
