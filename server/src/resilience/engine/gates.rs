//! The engine's gates (SPEC §R1, §R1.1, §R2, §R3): may this provider be
//! called (breaker admission, with a probe slot while HALF_OPEN), is this
//! combo target held back by the window gate, and why a connection cannot
//! serve a model now. Reads refresh lazily; nothing here changes a
//! failure count.

use std::sync::{Arc, atomic::Ordering};

use app::types::{
    Category,
    settings::{ErrorReason, ProviderCooldownSettings},
};

use super::{BreakerConfig, BreakerState, Change, Engine, Exclusion, ProviderSlot, window_profile};

/// A half-open probe slot; given back unless the attempt reached a verdict.
pub struct Probe {
    pub(super) slot: Arc<ProviderSlot>,
    pub(super) cfg: BreakerConfig,
    /// The attempt reached a verdict: the slot is not given back.
    pub(super) done: bool,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.done {
            self.slot.breaker.lock().release_probe(&self.cfg);
        }
    }
}

impl Engine {
    /// §R1 gate: `Ok(probe)` when the provider may be called (holding a
    /// probe slot while HALF_OPEN), `Err(retry_after_ms)` while OPEN.
    pub fn admit(&self, provider: &str, cfg: &BreakerConfig) -> Result<Option<Probe>, u64> {
        let slot = self.provider(provider);
        if slot.quiet.load(Ordering::Acquire) {
            return Ok(None);
        }
        let now = self.now();
        let mut b = slot.breaker.lock();
        let admitted = b.try_acquire(cfg, now);
        slot.noted(now, &b);
        if !admitted {
            return Err(b.retry_after_ms(cfg, now).max(1));
        }
        let probing = b.state(cfg, now) == BreakerState::HalfOpen;
        drop(b);
        Ok(probing.then(|| Probe { slot, cfg: cfg.clone(), done: false }))
    }

    /// The provider breaker's state now, taking no probe slot (for the
    /// strategies that weigh health).
    pub fn breaker_state(&self, provider: &str, cfg: &BreakerConfig) -> BreakerState {
        let Some(slot) = self.providers.get(provider).map(|s| s.clone()) else { return BreakerState::Closed };
        if slot.quiet.load(Ordering::Acquire) {
            return BreakerState::Closed;
        }
        slot.breaker.lock().state(cfg, self.now())
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
                    reason: h.last_error_type.as_deref().and_then(ErrorReason::parse),
                });
            }
            if h.on_selected(now) {
                self.emit(Change::Connection(connection_id.to_owned(), h.clone()));
            }
        }
        if now < self.lock_horizon.load(Ordering::Acquire)
            && let Some(lock) = self.lockouts.lock().locked_for(provider, connection_id, model, now)
        {
            let remaining_ms = u64::try_from(lock.until - now).unwrap_or(0);
            return Some(Exclusion::ModelLocked { remaining_ms, reason: lock.reason });
        }
        None
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
}
