//! The watchdogs' clocks of a relayed stream (SPEC §R6): the stall and
//! heartbeat budgets, which run from the last time something happened,
//! and the throughput watchdog's scheduled judgments.

use app::types::settings::ThroughputWatchdogSettings;
use std::{pin::Pin, task::Context, time::Duration};
use tokio::time::{Instant, Sleep};

use crate::{proxy::stream::progress::Seen, resilience::throughput::ThroughputWatchdog};

/// The watchdog budgets of a relayed stream.
#[derive(Clone, Debug)]
pub struct Budgets {
    /// No model output for this long aborts the stream (`STREAM_IDLE_TIMEOUT_MS`).
    pub stall: Duration,
    /// Upstream silence this long sends a keepalive (`SSE_HEARTBEAT_INTERVAL_MS`).
    pub heartbeat: Duration,
    /// The throughput watchdog, when enabled.
    pub throughput: Option<ThroughputWatchdogSettings>,
}

/// The throughput watchdog of one stream and its next scheduled check.
pub(super) struct Throughput {
    watchdog: ThroughputWatchdog,
    pub(super) check: Pin<Box<Sleep>>,
    started: Instant,
}

impl Throughput {
    /// The watchdog `cfg` describes, its first judgment after warm-up and
    /// one window.
    pub(super) fn start(cfg: ThroughputWatchdogSettings) -> Self {
        let started = Instant::now();
        let first = started + Duration::from_millis(cfg.warmup_ms.saturating_add(cfg.window_ms));
        Self { watchdog: ThroughputWatchdog::new(cfg), check: Box::pin(tokio::time::sleep_until(first)), started }
    }

    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.duration_since(self.started).as_millis()).unwrap_or(u64::MAX)
    }

    /// Records a chunk's output (if any) and judges the stream now;
    /// true means abort.
    pub(super) fn judge(&mut self, seen: Option<&Seen>) -> bool {
        let now = self.ms(Instant::now());
        if let Some(s) = seen.filter(|s| s.output) {
            let bytes = u64::try_from(s.useful_bytes).unwrap_or(u64::MAX);
            self.watchdog.record(now, bytes, s.protected == Some(true));
        }
        if self.watchdog.too_slow(now) {
            return true;
        }
        let next = self.started + Duration::from_millis(self.watchdog.next_check(now));
        self.check.as_mut().reset(next);
        false
    }
}

/// A budget that runs from the last time something happened. Touching it
/// only notes the time; its timer is re-armed lazily when it fires early,
/// so a busy stream costs no timer operation per chunk.
pub(super) struct Idle {
    pub(super) budget: Duration,
    last: Instant,
    timer: Pin<Box<Sleep>>,
}

impl Idle {
    pub(super) fn new(budget: Duration) -> Self {
        let now = Instant::now();
        Self { budget, last: now, timer: Box::pin(tokio::time::sleep_until(now + budget)) }
    }

    pub(super) fn touch(&mut self, now: Instant) {
        self.last = now;
    }

    /// Whether the budget ran out since the last touch (registers the
    /// waker otherwise).
    pub(super) fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            let due = self.last + self.budget;
            if due <= Instant::now() {
                return true;
            }
            self.timer.as_mut().reset(due);
        }
    }
}
