//! The engine's effects (SPEC §R1–§R3, §R7): a failure is restated,
//! classified and applied — connection cooldown or terminal state
//! (serialized per connection: the thundering-herd guard), model lockout,
//! breaker failure, egress siblings — and a success clears the
//! connection's errors, decays lockouts and counts for the breaker.

use std::{net::IpAddr, sync::atomic::Ordering};

use app::types::{
    Category,
    settings::{ErrorReason, ModelLockoutSettings, ProviderCooldownSettings, ResilienceSettings, RuleScope},
};

use super::{
    AttemptFailure, BreakerConfig, Change, ConnectionSlot, Engine, NETWORK_ERROR_DEDUP_MS, Outcome, Probe,
    window_profile,
};
use crate::resilience::{
    breaker::Breaker,
    classify::{self, Verdict},
    connection_health::{ConnectionHealth, Marked, SharedBy, SharedLimit},
    lockout::{ESCALATION_WINDOW_MS, LockFailure},
    provider_cooldown::Window,
    restate, retry_hints, rules,
};

impl Engine {
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
        // out of cooling, and a 429 (404, 5xx) of a provider metering each
        // model or family of models apart.
        let model_scoped = rule.as_ref().is_some_and(|r| r.honored_scope && r.scope == RuleScope::Model);
        let per_model = f.quota_scope.locks_model(status);
        let cool = !f.disable_cooling
            && !model_scoped
            && per_model.is_none()
            && (!f.stall || settings.stream_stall_cooldown.enabled);
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
        let locked = self.with_lockouts(|lockouts| {
            if model_scoped || (f.disable_cooling && verdict.cooldown_ms > 0) {
                Some(lockouts.force(&lock, verdict.cooldown_ms.min(settings.model_lockout.max_cooldown_ms)))
            } else if per_model == Some(true) {
                // Locked whether or not lockout is switched on: the model's
                // own quota is what failed, and the connection stays active.
                let on = ModelLockoutSettings {
                    enabled: true,
                    error_codes: status.map(u64::from).into_iter().collect(),
                    ..settings.model_lockout.clone()
                };
                lockouts.record_failure(&lock, &on)
            } else {
                lockouts.record_failure(&lock, &settings.model_lockout)
            }
        });
        if let Some(cooldown_ms) = locked {
            self.extend_lock_horizon(now, cooldown_ms);
        }
        if classify::trips_breaker(status, &verdict) && !self.duplicate_network_error(&slot, f.status, now) {
            let slot = self.provider(f.provider);
            let mut b = slot.breaker.lock();
            b.on_failure(cfg, now, classify::failure_kind(status, f.body));
            slot.noted(now, &b);
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

    /// Locks `model` on the connection for exactly `cooldown_ms`: the
    /// request queue's answer to a typed Google `RetryInfo` longer than a
    /// queued request may wait (SPEC §R5).
    pub fn lock_model(&self, provider: &str, connection_id: &str, model: &str, status: u16, cooldown_ms: u64) {
        let now = self.now();
        let lock = LockFailure {
            provider,
            connection_id,
            model,
            status: Some(status),
            reason: ErrorReason::RateLimited,
            hint_ms: Some(cooldown_ms),
            now_ms: now,
        };
        let applied = self.with_lockouts(|l| l.force(&lock, cooldown_ms));
        self.extend_lock_horizon(now, applied);
    }

    /// Lockouts matter (lock, then escalation window) until this horizon.
    pub(super) fn extend_lock_horizon(&self, now: i64, cooldown_ms: u64) {
        let matters_for = cooldown_ms.saturating_add(ESCALATION_WINDOW_MS).saturating_mul(2);
        let horizon = now.saturating_add(i64::try_from(matters_for).unwrap_or(i64::MAX));
        self.lock_horizon.fetch_max(horizon, Ordering::AcqRel);
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
            pslot.noted(now, &b);
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
            self.with_lockouts(|l| l.decay(provider, connection_id, model));
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
        self.with_windows(|w| {
            vec![match pinned {
                Some(id) => {
                    w.record_connection_failure(provider, id, now);
                    w.connection_window(provider, id)
                }
                None => {
                    w.record_provider_failure(provider, window_profile(s, category), now);
                    w.provider_window(provider)
                }
            }]
        });
    }

    /// §R1.1: a combo target served; its window starts over.
    pub fn record_target_success(&self, provider: &str, pinned: Option<&str>) {
        if self.windows_used.load(Ordering::Acquire) {
            self.with_windows(|w| {
                let held = [Some(w.provider_window(provider)), pinned.map(|id| w.connection_window(provider, id))];
                w.record_success(provider, pinned);
                // Only the entries the success cleared are told.
                held.into_iter().flatten().filter(|e| !e.is_cleared()).map(Window::cleared).collect()
            });
        }
    }

    /// Remembers where a connection of an egress-bucketed provider left
    /// from (§R7).
    pub fn record_egress(&self, connection_id: &str, ip: IpAddr) {
        self.egress.record(connection_id, ip, self.now());
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
        let siblings = self.egress.sharing(ip, pool.into_iter().filter(|id| *id != failing_id), self.now());
        self.cool_alongside(failing_id, 429, verdict, SharedBy::EgressIp, siblings)
    }

    /// Cools `siblings` until the failing connection's cooldown ends, for
    /// the reason `by` (§R7). Returns the ids whose state changed.
    pub fn cool_alongside<'p>(
        &self,
        failing_id: &str,
        status: u16,
        verdict: &Verdict,
        by: SharedBy,
        siblings: impl IntoIterator<Item = &'p str>,
    ) -> Vec<&'p str> {
        let now = self.now();
        let own = self.connections.get(failing_id).and_then(|slot| slot.health.lock().rate_limited_until);
        let until = own.unwrap_or_else(|| now.saturating_add(i64::try_from(verdict.cooldown_ms).unwrap_or(i64::MAX)));
        let shared = SharedLimit { failing_id, status, until, by };
        siblings
            .into_iter()
            .filter(|id| *id != failing_id)
            .filter(|id| {
                let slot = self.connection(id);
                let mut h = slot.health.lock();
                let changed = h.mark_shared_limit(verdict, &shared);
                if changed {
                    slot.clean.store(false, Ordering::Release);
                    self.emit(Change::Connection((*id).to_owned(), h.clone()));
                }
                changed
            })
            .collect()
    }
}
