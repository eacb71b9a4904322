//! The optional provider cooldown window gate (SPEC §R1.1), off by
//! default and separate from the breaker. It remembers failing providers
//! across requests so consecutive combo requests stop walking through one
//! that just failed:
//! * a provider-level entry cools only after `providerFailureThreshold`
//!   failures inside `providerFailureWindowMs`, for `providerCooldownMs`
//!   from the last failure;
//! * a connection-level entry (`provider:connection`) cools
//!   `min · 2^(failures-1)`, capped at `max`, from its last failure.
//!
//! A success clears the entry.

use app::types::settings::{ProviderCooldownSettings, ProviderWindowProfile};
use std::collections::{HashMap, VecDeque};

/// Failure timestamps kept per provider.
const MAX_TIMESTAMPS: usize = 200;

#[derive(Default)]
pub struct ProviderCooldowns {
    /// provider → recent failure times.
    windows: HashMap<String, VecDeque<i64>>,
    /// `provider:connection` → (failures, last failure).
    connections: HashMap<String, (u32, i64)>,
}

impl ProviderCooldowns {
    pub fn record_provider_failure(&mut self, provider: &str, profile: &ProviderWindowProfile, now: i64) {
        if provider.is_empty() {
            return;
        }
        let times = self.windows.entry(provider.to_owned()).or_default();
        times.push_back(now);
        prune(times, profile, now);
        if times.len() > MAX_TIMESTAMPS {
            times.pop_front();
        }
    }

    /// Remaining provider cooldown, 0 when not cooling.
    pub fn provider_remaining_ms(&mut self, provider: &str, profile: &ProviderWindowProfile, now: i64) -> u64 {
        let Some(times) = self.windows.get_mut(provider) else { return 0 };
        prune(times, profile, now);
        let threshold = usize::try_from(profile.provider_failure_threshold).unwrap_or(usize::MAX);
        match times.back() {
            Some(last) if times.len() >= threshold => remaining(*last, profile.provider_cooldown_ms, now),
            _ => 0,
        }
    }

    pub fn record_connection_failure(&mut self, provider: &str, connection_id: &str, now: i64) {
        if provider.is_empty() {
            return;
        }
        let entry = self.connections.entry(format!("{provider}:{connection_id}")).or_insert((0, now));
        *entry = (entry.0.saturating_add(1), now);
    }

    /// Remaining connection-level cooldown, 0 when not cooling.
    pub fn connection_remaining_ms(
        &self,
        provider: &str,
        connection_id: &str,
        s: &ProviderCooldownSettings,
        now: i64,
    ) -> u64 {
        let Some((failures, last)) = self.connections.get(&format!("{provider}:{connection_id}")) else { return 0 };
        let exp = failures.saturating_sub(1).min(10);
        let cooldown = s.min_retry_cooldown_ms.saturating_mul(1 << exp).min(s.max_retry_cooldown_ms);
        remaining(*last, cooldown, now)
    }

    /// A success clears the provider's window and the connection's entry.
    pub fn record_success(&mut self, provider: &str, connection_id: Option<&str>) {
        self.windows.remove(provider);
        if let Some(id) = connection_id {
            self.connections.remove(&format!("{provider}:{id}"));
        }
    }

    /// Forgets what the gate holds of `provider` (or of every provider).
    pub fn clear(&mut self, provider: Option<&str>) {
        match provider {
            Some(p) => {
                self.windows.remove(p);
                self.connections.retain(|k, _| k.split_once(':').is_none_or(|(kp, _)| kp != p));
            }
            None => *self = Self::default(),
        }
    }

    /// Nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty() && self.connections.is_empty()
    }
}

fn prune(times: &mut VecDeque<i64>, profile: &ProviderWindowProfile, now: i64) {
    let window = i64::try_from(profile.provider_failure_window_ms).unwrap_or(i64::MAX);
    while times.front().is_some_and(|t| now - t > window) {
        times.pop_front();
    }
}

fn remaining(since: i64, cooldown_ms: u64, now: i64) -> u64 {
    let elapsed = u64::try_from(now.saturating_sub(since)).unwrap_or(0);
    cooldown_ms.saturating_sub(elapsed)
}

#[cfg(test)]
mod tests;
