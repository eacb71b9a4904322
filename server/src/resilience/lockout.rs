//! Model lockout (SPEC §R3): one model on one connection is skipped while
//! the rest keep serving. The key's scope follows the status — 429/403/402
//! lock the model's quota family, 404 the bare model, anything else the
//! exact model only. Repeated failures inside the escalation window grow
//! the lock (`base · 2^(n-1)`, capped); an upstream reset hint longer than
//! the base wins, even past the cap; a quota verdict without a hint locks
//! until local midnight; a shorter new lock never shortens a longer one;
//! successes halve the failure count and at 0 lift the lock. State lives in
//! memory (lost on restart, by design) and the map is bounded; it notes
//! which connections' locks changed, so that several instances on one
//! Postgres can share them.

use app::types::settings::{ErrorReason, ModelLockoutSettings};
use std::collections::{HashMap, HashSet};

use super::classify::until_local_midnight;

/// A failure older than this plus the last lock no longer escalates.
pub const ESCALATION_WINDOW_MS: u64 = 30 * 60_000;
/// Above this many entries, expired ones are evicted first.
pub const MAX_ENTRIES: usize = 1000;

/// How much of the model a failure locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockScope {
    /// Every model sharing the quota (429/403/402).
    QuotaFamily,
    /// The model id (404).
    BareModel,
    /// Only this exact provider/connection/model (5xx, transport, …).
    Exact,
}

impl LockScope {
    pub fn for_status(status: Option<u16>) -> Self {
        match status {
            Some(429 | 403 | 402) => Self::QuotaFamily,
            Some(404) => Self::BareModel,
            _ => Self::Exact,
        }
    }
}

/// Where a provider meters its quota, so what a 429 takes out of service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaScope {
    /// The account: a 429 cools the connection.
    Connection,
    /// Each model on its own (`hasPerModelQuota`, Gemini): a 404, 429 or
    /// 5xx locks the model and the connection stays active for the others;
    /// a bare 500 is only noted.
    PerModel,
    /// Families of models sharing a quota (Codex: `codex` and `spark`): a
    /// 429 locks the family and the connection stays active for the other.
    Family,
}

impl QuotaScope {
    pub fn of(provider: &str, per_model_quota: bool) -> Self {
        match provider {
            _ if per_model_quota => Self::PerModel,
            "codex" => Self::Family,
            _ => Self::Connection,
        }
    }

    /// Whether a failure of `status` locks the model (its family) instead
    /// of cooling the connection; a bare 500 on a per-model provider does
    /// neither (`Some(false)`).
    pub fn locks_model(self, status: Option<u16>) -> Option<bool> {
        match (self, status?) {
            (Self::PerModel, 500) => Some(false),
            (Self::PerModel, 404 | 429 | 500..) | (Self::Family, 429) => Some(true),
            _ => None,
        }
    }
}

/// The quota family of a model: Codex meters its `spark` models apart from
/// the rest (`codex`); every other provider meters each model on its own,
/// so the family is the model itself.
pub fn quota_family(provider: &str, model: &str) -> String {
    match provider {
        "codex" if model.contains("spark") => "spark".into(),
        "codex" => "codex".into(),
        _ => model.to_owned(),
    }
}

/// The map key of a lock.
pub fn key(provider: &str, connection_id: &str, model: &str, scope: LockScope) -> String {
    match scope {
        LockScope::QuotaFamily => format!("{provider}:{connection_id}:{}", quota_family(provider, model)),
        LockScope::BareModel => format!("{provider}:{connection_id}:{model}"),
        LockScope::Exact => format!("{provider}:{connection_id}:exact:{}", model.to_lowercase()),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lock {
    pub provider: String,
    pub connection_id: String,
    pub model: String,
    pub reason: ErrorReason,
    pub until: i64,
    pub failure_count: u32,
    /// When the last failure was counted and how long it locked: the
    /// escalation window runs from it.
    pub last_failure_at: i64,
    pub last_cooldown_ms: u64,
}

/// The cooldown a hint asks for: the hint when longer than the base;
/// otherwise `None` (escalate) with exponential backoff on, or the base.
pub fn select_cooldown(hint_ms: u64, s: &ModelLockoutSettings) -> Option<u64> {
    if hint_ms > s.base_cooldown_ms {
        Some(hint_ms)
    } else if s.use_exponential_backoff {
        None
    } else {
        Some(s.base_cooldown_ms)
    }
}

/// One failure to record.
pub struct LockFailure<'a> {
    pub provider: &'a str,
    pub connection_id: &'a str,
    pub model: &'a str,
    pub status: Option<u16>,
    pub reason: ErrorReason,
    /// An upstream reset hint, ms.
    pub hint_ms: Option<u64>,
    pub now_ms: i64,
}

#[derive(Default)]
pub struct Lockouts {
    locks: HashMap<String, Lock>,
    /// Connections whose locks changed since [`Lockouts::take_touched`].
    touched: HashSet<String>,
}

impl Lockouts {
    /// Locks the model (if the settings say this status locks) and returns
    /// the cooldown applied, or `None` when nothing was locked.
    pub fn record_failure(&mut self, f: &LockFailure<'_>, s: &ModelLockoutSettings) -> Option<u64> {
        if !s.enabled || !f.status.is_some_and(|st| s.error_codes.contains(&u64::from(st))) {
            return None;
        }
        let exact = match f.hint_ms {
            Some(h) => select_cooldown(h, s),
            None if f.reason == ErrorReason::QuotaExhausted => Some(until_local_midnight(f.now_ms)),
            None => (!s.use_exponential_backoff).then_some(s.base_cooldown_ms),
        };
        Some(self.lock(f, |failure_count| {
            exact.unwrap_or_else(|| {
                let exp = (failure_count - 1).min(u32::try_from(s.max_backoff_steps).unwrap_or(u32::MAX)).min(63);
                s.base_cooldown_ms.saturating_mul(1_u64 << exp).min(s.max_cooldown_ms)
            })
        }))
    }

    /// Locks the model for exactly `cooldown_ms`, whatever the settings: a
    /// provider rule scoped to the model, or a connection that opts out of
    /// cooling.
    pub fn force(&mut self, f: &LockFailure<'_>, cooldown_ms: u64) -> u64 {
        self.lock(f, |_| cooldown_ms)
    }

    /// Counts the failure (escalation window) and extends the lock by the
    /// cooldown `for_count` picks; a shorter lock never shortens a longer.
    fn lock(&mut self, f: &LockFailure<'_>, for_count: impl FnOnce(u32) -> u64) -> u64 {
        let k = key(f.provider, f.connection_id, f.model, LockScope::for_status(f.status));
        let now = f.now_ms;
        let previous = self.locks.get(&k);
        let failure_count = match previous {
            Some(p) if now - p.last_failure_at <= (ESCALATION_WINDOW_MS + p.last_cooldown_ms) as i64 => {
                p.failure_count + 1
            }
            _ => 1,
        };
        let cooldown = for_count(failure_count);
        let until = now.saturating_add(i64::try_from(cooldown).unwrap_or(i64::MAX));
        let until = previous.map_or(until, |p| p.until.max(until));
        if self.locks.len() >= MAX_ENTRIES && !self.locks.contains_key(&k) {
            self.locks.retain(|_, l| l.until > now);
        }
        self.touched.insert(f.connection_id.to_owned());
        self.locks.insert(
            k,
            Lock {
                provider: f.provider.to_owned(),
                connection_id: f.connection_id.to_owned(),
                model: f.model.to_owned(),
                reason: f.reason,
                until,
                failure_count,
                last_failure_at: now,
                last_cooldown_ms: cooldown,
            },
        );
        cooldown
    }

    /// Whether no lock (active or expired) is held.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// The remaining lock on this model, if any (every scope is checked).
    pub fn locked_for(&self, provider: &str, connection_id: &str, model: &str, now: i64) -> Option<&Lock> {
        [LockScope::QuotaFamily, LockScope::BareModel, LockScope::Exact]
            .iter()
            .filter_map(|scope| self.locks.get(&key(provider, connection_id, model, *scope)))
            .filter(|l| l.until > now)
            .max_by_key(|l| l.until)
    }

    /// A success for this model: the failure count halves; at 0 the lock
    /// is lifted. Returns `(new count, lifted)`.
    pub fn decay(&mut self, provider: &str, connection_id: &str, model: &str) -> (u32, bool) {
        let mut result = (0, false);
        for scope in [LockScope::QuotaFamily, LockScope::BareModel, LockScope::Exact] {
            let k = key(provider, connection_id, model, scope);
            let Some(lock) = self.locks.get_mut(&k) else { continue };
            self.touched.insert(connection_id.to_owned());
            lock.failure_count /= 2;
            result = (lock.failure_count, lock.failure_count == 0);
            if lock.failure_count == 0 {
                self.locks.remove(&k);
            }
        }
        result
    }

    /// Removes locks matching the filters (`None` = any); how many.
    pub fn clear(&mut self, provider: Option<&str>, connection_id: Option<&str>, model: Option<&str>) -> usize {
        let before = self.locks.len();
        let touched = &mut self.touched;
        self.locks.retain(|_, l| {
            let cleared = provider.is_none_or(|p| l.provider == p)
                && connection_id.is_none_or(|c| l.connection_id == c)
                && model.is_none_or(|m| l.model.eq_ignore_ascii_case(m));
            if cleared {
                touched.insert(l.connection_id.clone());
            }
            !cleared
        });
        before - self.locks.len()
    }

    /// The connections whose locks changed since the last call.
    pub fn take_touched(&mut self) -> Vec<String> {
        self.touched.drain().collect()
    }

    /// A connection's locks (expired ones included: they still count for
    /// escalation), by key.
    pub fn of_connection(&self, connection_id: &str) -> Vec<(String, Lock)> {
        self.locks
            .iter()
            .filter(|(_, l)| l.connection_id == connection_id)
            .map(|(k, l)| (k.clone(), l.clone()))
            .collect()
    }

    /// Makes `locks` a connection's locks, as another instance (or the
    /// last run) stored them; not noted as a change of this process.
    pub fn replace_connection(&mut self, connection_id: &str, locks: Vec<(String, Lock)>) {
        self.locks.retain(|_, l| l.connection_id != connection_id);
        self.locks.extend(locks);
    }

    /// Active locks, longest remaining first.
    pub fn active(&self, now: i64) -> Vec<&Lock> {
        let mut locks: Vec<&Lock> = self.locks.values().filter(|l| l.until > now).collect();
        locks.sort_by_key(|l| std::cmp::Reverse(l.until));
        locks
    }
}

#[cfg(test)]
mod tests;
