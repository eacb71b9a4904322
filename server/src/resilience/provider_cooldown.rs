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
//!
//! Several instances on one Postgres share the gate: every entry that
//! changes is reported as it now is ([`Window`]) and the others merge it
//! ([`ProviderCooldowns::adopt`]): failure times are united, a cleared
//! entry clears.

use app::types::settings::{ProviderCooldownSettings, ProviderWindowProfile};
use std::collections::{HashMap, VecDeque};

/// Failure timestamps kept per provider.
const MAX_TIMESTAMPS: usize = 200;

/// One entry of the gate as it is after a change; no failures: cleared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Window {
    /// A provider's recent failure times.
    Provider { provider: String, failures: Vec<i64> },
    /// A pinned connection's failures and the last one's time.
    Connection { provider: String, connection_id: String, failures: u32, last: i64 },
}

impl Window {
    pub fn provider(&self) -> &str {
        match self {
            Self::Provider { provider, .. } | Self::Connection { provider, .. } => provider,
        }
    }

    /// Whether the entry holds no failure.
    pub fn is_cleared(&self) -> bool {
        match self {
            Self::Provider { failures, .. } => failures.is_empty(),
            Self::Connection { failures, .. } => *failures == 0,
        }
    }

    /// The same entry, cleared.
    pub fn cleared(self) -> Self {
        match self {
            Self::Provider { provider, .. } => Self::Provider { provider, failures: Vec::new() },
            Self::Connection { provider, connection_id, .. } => {
                Self::Connection { provider, connection_id, failures: 0, last: 0 }
            }
        }
    }

    /// The entry's key: the provider, or `provider:connection`.
    pub fn key(&self) -> String {
        match self {
            Self::Provider { provider, .. } => provider.clone(),
            Self::Connection { provider, connection_id, .. } => format!("{provider}:{connection_id}"),
        }
    }
}

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

    /// The entry of `provider` as it is now (cleared when absent).
    pub fn provider_window(&self, provider: &str) -> Window {
        let failures = self.windows.get(provider).map(|t| t.iter().copied().collect()).unwrap_or_default();
        Window::Provider { provider: provider.to_owned(), failures }
    }

    /// The entry of a pinned connection as it is now (cleared when absent).
    pub fn connection_window(&self, provider: &str, connection_id: &str) -> Window {
        let (failures, last) = self.connections.get(&format!("{provider}:{connection_id}")).copied().unwrap_or((0, 0));
        Window::Connection { provider: provider.to_owned(), connection_id: connection_id.to_owned(), failures, last }
    }

    /// Every entry, as [`Window`]s (what a clear of them all reports).
    pub fn entries(&self) -> Vec<Window> {
        let providers = self.windows.keys().map(|p| self.provider_window(p));
        let connections = self.connections.keys().filter_map(|k| k.split_once(':'));
        providers.chain(connections.map(|(p, c)| self.connection_window(p, c))).collect()
    }

    /// Merges an entry another instance reported: failure times are
    /// united (the newest [`MAX_TIMESTAMPS`] kept), a connection keeps the
    /// larger count and the later failure, an entry without failures clears.
    pub fn adopt(&mut self, window: Window) {
        match window {
            w if w.is_cleared() => self.clear_entry(&w),
            Window::Provider { provider, failures } => {
                let times = self.windows.entry(provider).or_default();
                let mut all: Vec<i64> = times.iter().copied().chain(failures).collect();
                all.sort_unstable();
                all.dedup();
                let keep = all.len().saturating_sub(MAX_TIMESTAMPS);
                *times = all.into_iter().skip(keep).collect();
            }
            Window::Connection { provider, connection_id, failures, last } => {
                let entry = self.connections.entry(format!("{provider}:{connection_id}")).or_insert((0, last));
                *entry = (entry.0.max(failures), entry.1.max(last));
            }
        }
    }

    fn clear_entry(&mut self, window: &Window) {
        match window {
            Window::Provider { provider, .. } => self.windows.remove(provider).map(drop),
            Window::Connection { .. } => self.connections.remove(&window.key()).map(drop),
        };
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
