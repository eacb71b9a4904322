//! The live resilience settings. The hot path takes one lock-free
//! snapshot per request ([`SettingsHandle::current`]); a PATCH swaps in a
//! new snapshot, which the next request sees — no restart, no lock on the
//! request path.

use app::types::settings::{EnvSource, ResilienceSettings};
use arc_swap::ArcSwap;
use std::sync::Arc;

pub struct SettingsHandle {
    current: ArcSwap<ResilienceSettings>,
    /// What the environment set, for precedence and for the dashboard's
    /// "set by env" notes.
    env: Vec<EnvSource>,
    /// Serializes writers (PATCHes), never readers.
    writes: tokio::sync::Mutex<()>,
}

impl SettingsHandle {
    pub fn new(initial: ResilienceSettings, env: Vec<EnvSource>) -> Self {
        Self { current: ArcSwap::from_pointee(initial), env, writes: tokio::sync::Mutex::new(()) }
    }

    /// The effective settings now: one atomic load, no lock.
    pub fn current(&self) -> Arc<ResilienceSettings> {
        self.current.load_full()
    }

    pub fn env(&self) -> &[EnvSource] {
        &self.env
    }

    /// Held by a writer from reading the current value to replacing it,
    /// so two concurrent PATCHes cannot lose an update.
    pub async fn write_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.writes.lock().await
    }

    /// Makes `next` what every later [`current`](Self::current) returns.
    pub fn replace(&self, next: ResilienceSettings) {
        self.current.store(Arc::new(next));
    }
}
