//! The throughput watchdog (SPEC §R6, `streamRecovery.throughputWatchdog`,
//! off by default): a stream that trickles useful output too slowly to be
//! worth waiting for is aborted with `STREAM_THROUGHPUT_TOO_LOW`.
//!
//! Judged only after `warmupMs + windowMs` from the stream's start, over
//! the last full `windowMs`: abort when the window's useful bytes per
//! second are below `minUsefulBytesPerSecond` — counting a window that
//! had at least `minUsefulBytes`, or none at all (a window with a few
//! bytes below that is not judged). While the latest output is a tool
//! call or reasoning, judgement waits: those phases emit little text.
//! Times are milliseconds since the stream started, given by the caller.

use app::types::settings::ThroughputWatchdogSettings;
use std::collections::VecDeque;

pub struct ThroughputWatchdog {
    cfg: ThroughputWatchdogSettings,
    /// (at, useful bytes) of recent output, oldest first.
    samples: VecDeque<(u64, u64)>,
    protected: bool,
}

impl ThroughputWatchdog {
    pub fn new(cfg: ThroughputWatchdogSettings) -> Self {
        Self { cfg, samples: VecDeque::new(), protected: false }
    }

    /// Output at `at`: `useful_bytes` of text, or a tool-call / reasoning
    /// event (`protected`, which suspends judgement until text follows).
    pub fn record(&mut self, at: u64, useful_bytes: u64, protected: bool) {
        self.protected = protected;
        if useful_bytes > 0 {
            self.samples.push_back((at, useful_bytes));
        }
    }

    /// Whether the stream must be aborted at `now`.
    pub fn too_slow(&mut self, now: u64) -> bool {
        let judged_from = self.cfg.warmup_ms.saturating_add(self.cfg.window_ms);
        if now < judged_from || self.protected {
            return false;
        }
        let window_start = now - self.cfg.window_ms;
        while self.samples.front().is_some_and(|(at, _)| *at <= window_start) {
            self.samples.pop_front();
        }
        let bytes: u64 = self.samples.iter().map(|(_, b)| b).sum();
        let judged = bytes == 0 || bytes >= self.cfg.min_useful_bytes;
        // bytes / (window / 1000) < min rate, in integers.
        judged && bytes.saturating_mul(1000) < self.cfg.min_useful_bytes_per_second.saturating_mul(self.cfg.window_ms)
    }

    /// When to judge next if nothing arrives: the end of the warm-up and
    /// first window, then every second.
    pub fn next_check(&self, now: u64) -> u64 {
        let judged_from = self.cfg.warmup_ms.saturating_add(self.cfg.window_ms);
        if now < judged_from { judged_from } else { now + 1_000 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(warmup_ms: u64, window_ms: u64, rate: u64) -> ThroughputWatchdogSettings {
        ThroughputWatchdogSettings {
            enabled: true,
            warmup_ms,
            window_ms,
            min_useful_bytes_per_second: rate,
            min_useful_bytes: 1,
        }
    }

    #[test]
    fn the_exact_case_of_the_spec() {
        // Warm-up 1000, window 2000, 10 B/s: "x" at 0 keeps; a heartbeat
        // (no output) at 2999 keeps; one at 3000 aborts.
        let mut w = ThroughputWatchdog::new(cfg(1_000, 2_000, 10));
        w.record(0, 1, false);
        assert!(!w.too_slow(0));
        assert!(!w.too_slow(2_999));
        assert!(w.too_slow(3_000));
    }

    #[test]
    fn enough_output_in_the_window_keeps_the_stream() {
        let mut w = ThroughputWatchdog::new(cfg(0, 1_000, 10));
        w.record(500, 10, false);
        assert!(!w.too_slow(1_000), "10 B over 1 s meets 10 B/s");
        assert!(w.too_slow(1_500), "the window moved past it");
    }

    #[test]
    fn a_few_bytes_below_the_minimum_are_not_judged_and_protected_phases_wait() {
        let mut w = ThroughputWatchdog::new(ThroughputWatchdogSettings { min_useful_bytes: 5, ..cfg(0, 1_000, 100) });
        w.record(900, 2, false);
        assert!(!w.too_slow(1_000), "2 B: under minUsefulBytes, not judged");
        w.record(950, 3, false);
        assert!(w.too_slow(1_000), "5 B over 1 s is below 100 B/s");
        let mut w = ThroughputWatchdog::new(cfg(0, 1_000, 100));
        w.record(100, 0, true);
        assert!(!w.too_slow(5_000), "a tool call or reasoning is in flight");
        w.record(5_000, 1, false);
        assert!(w.too_slow(5_000));
    }

    #[test]
    fn checks_are_scheduled_from_the_end_of_the_first_window() {
        let w = ThroughputWatchdog::new(cfg(30_000, 30_000, 4));
        assert_eq!((w.next_check(0), w.next_check(60_000)), (60_000, 61_000));
    }
}
