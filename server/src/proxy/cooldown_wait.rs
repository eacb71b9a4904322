//! A client that goes away while its request waits for a cooldown
//! (SPEC §R2; the decision is [`crate::resilience::cooldown_wait`]) is
//! logged as 499 `client_disconnected`.

use std::sync::{Arc, atomic::Ordering};
use tokio::time::Instant;

use crate::{state::AppState, store::AttemptRecord};

/// Logs a 499 row if the request is dropped (the client went away) before
/// the wait ends; [`AbandonedWait::disarm`] once it ended.
pub struct AbandonedWait<'a> {
    state: &'a Arc<AppState>,
    record: Option<AttemptRecord>,
    wait_ms: u64,
    started: Instant,
}

impl<'a> AbandonedWait<'a> {
    /// Counted on Health as waiting until it ends.
    pub fn arm(state: &'a Arc<AppState>, record: AttemptRecord, wait_ms: u64) -> Self {
        state.admission.waiting_for_cooldown.fetch_add(1, Ordering::Relaxed);
        Self { state, record: Some(record), wait_ms, started: Instant::now() }
    }

    pub fn disarm(mut self) {
        self.record = None;
    }
}

impl Drop for AbandonedWait<'_> {
    fn drop(&mut self) {
        self.state.admission.waiting_for_cooldown.fetch_sub(1, Ordering::Relaxed);
        let Some(mut r) = self.record.take() else { return };
        r.status = 499;
        r.latency_ms = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        r.wait_ms = r.wait_ms.saturating_add(r.latency_ms);
        r.error_kind = Some("client_disconnected".to_owned());
        r.error_message = Some(format!("the client went away while waiting {} ms for a cooldown", self.wait_ms));
        tracing::info!(request_id = %r.request_id, provider = %r.provider, model = %r.model, "client went away during a cooldown wait");
        self.state.store.logs.record(r);
    }
}
