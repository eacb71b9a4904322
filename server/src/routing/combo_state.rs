//! What the combo strategies remember between requests, per combo: the
//! round-robin rotation, the strict-random deck, the last good target and
//! each target's request counts. In memory only (a restart starts fresh),
//! one small mutex per combo, held for a few instructions; combos no
//! longer defined are dropped when the combo list is reloaded.

use dashmap::DashMap;
use parking_lot::Mutex;
use std::{sync::Arc, time::Duration};

use super::strategies::{round_robin::Rotation, strict_random::Deck};

/// One target's requests through its combo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetStats {
    pub requests: u64,
    pub successes: u64,
    /// Sum of the served requests' latencies (to the answer's headers).
    pub latency_ms_total: u64,
}

impl TargetStats {
    pub fn mean_latency_ms(&self) -> Option<f64> {
        (self.successes > 0).then(|| self.latency_ms_total as f64 / self.successes as f64)
    }
}

/// The target that served the combo last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastGood {
    pub provider: String,
    pub key: String,
}

#[derive(Debug, Default)]
pub struct ComboState {
    pub rotation: Rotation,
    pub deck: Deck,
    pub last_good: Option<LastGood>,
    /// Whose turn it is among tied accounts (`reset-window`, `reset-aware`).
    pub tie_turn: usize,
    /// Whose turn it is within the tier `auto` leads from.
    pub auto_turn: usize,
    pub targets: std::collections::HashMap<String, TargetStats>,
}

#[derive(Default)]
pub struct ComboStates {
    combos: DashMap<String, Arc<Mutex<ComboState>>>,
}

impl ComboStates {
    /// The state of `combo` (made on first use).
    pub fn of(&self, combo: &str) -> Arc<Mutex<ComboState>> {
        if let Some(s) = self.combos.get(combo) {
            return s.clone();
        }
        self.combos.entry(combo.to_owned()).or_default().clone()
    }

    /// The target `key` (at `index` of `n`, of `provider`) served.
    pub fn served(&self, combo: &str, key: &str, provider: &str, (index, n): (usize, usize), took: Duration) {
        let state = self.of(combo);
        let mut s = state.lock();
        let t = s.targets.entry(key.to_owned()).or_default();
        t.requests += 1;
        t.successes += 1;
        t.latency_ms_total += u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        s.rotation.served(index, n);
        s.last_good = Some(LastGood { provider: provider.to_owned(), key: key.to_owned() });
    }

    /// The target `key` was tried and did not serve.
    pub fn failed(&self, combo: &str, key: &str) {
        let state = self.of(combo);
        state.lock().targets.entry(key.to_owned()).or_default().requests += 1;
    }

    /// Keeps only the combos still defined.
    pub fn retain(&self, defined: impl Fn(&str) -> bool) {
        self.combos.retain(|name, _| defined(name));
    }
}
