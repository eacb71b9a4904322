//! The provider circuit breaker (SPEC §R1): one per provider, counting
//! provider-level failures only (408/500/502/503/504 and transport errors;
//! the caller decides what counts).
//!
//! CLOSED → DEGRADED (still serving, failures above the degradation
//! threshold) → OPEN (skipped) → HALF_OPEN (hold elapsed; a bounded number
//! of probes) → CLOSED on a probe's success, or OPEN again with one more
//! open cycle (holds escalate after `escalateAfterCycles`).
//!
//! There is no timer: every read first refreshes the state from `now`
//! (OPEN past its hold → HALF_OPEN; DEGRADED quiet long enough → CLOSED),
//! and the state field is private so nothing can read it stale.

use app::types::settings::BreakerProfile;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerState {
    Closed,
    Degraded,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Closed, Self::Degraded, Self::Open, Self::HalfOpen].into_iter().find(|st| st.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "CLOSED",
            Self::Degraded => "DEGRADED",
            Self::Open => "OPEN",
            Self::HalfOpen => "HALF_OPEN",
        }
    }
}

/// What kind of failure opened the breaker (shown and stored; a 429, the
/// only status a kind is read from, never trips the breaker here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    RateLimit,
    QuotaExhausted,
}

/// The breaker's knobs: a settings profile.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakerConfig {
    pub failure_threshold: u32,
    pub degradation_threshold: u32,
    pub reset_timeout_ms: u64,
    pub max_reset_multiplier: u64,
    pub escalate_after_cycles: u32,
    pub half_open_requests: u32,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimit => "rate_limit",
            Self::QuotaExhausted => "quota_exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::RateLimit, Self::QuotaExhausted].into_iter().find(|k| k.as_str() == s)
    }
}

impl From<&BreakerProfile> for BreakerConfig {
    fn from(p: &BreakerProfile) -> Self {
        let failure_threshold = u32::try_from(p.failure_threshold).unwrap_or(u32::MAX).max(1);
        Self {
            failure_threshold,
            degradation_threshold: p
                .degradation_threshold
                .map_or(failure_threshold, |d| u32::try_from(d).unwrap_or(u32::MAX)),
            reset_timeout_ms: p.reset_timeout_ms,
            max_reset_multiplier: p.max_reset_multiplier.max(1),
            escalate_after_cycles: u32::try_from(p.escalate_after_cycles).unwrap_or(u32::MAX),
            half_open_requests: u32::try_from(p.half_open_requests).unwrap_or(u32::MAX).max(1),
        }
    }
}

impl BreakerConfig {
    /// The reset timeout after `open_cycles` re-openings: plain up to
    /// `escalate_after_cycles`, then doubling, capped at the multiplier.
    pub fn escalated_reset_ms(&self, open_cycles: u32) -> u64 {
        if open_cycles <= self.escalate_after_cycles {
            return self.reset_timeout_ms;
        }
        let doublings = (open_cycles - self.escalate_after_cycles).min(63);
        let cap = self.reset_timeout_ms.saturating_mul(self.max_reset_multiplier);
        self.reset_timeout_ms.saturating_mul(1_u64.checked_shl(doublings).unwrap_or(u64::MAX)).min(cap)
    }
}

/// One provider's breaker. Every method takes `now` (epoch ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Breaker {
    state: BreakerState,
    failure_count: u32,
    last_failure_at: Option<i64>,
    last_failure_kind: Option<FailureKind>,
    open_cycles: u32,
    /// Probes still admitted while HALF_OPEN.
    #[serde(skip)]
    half_open_left: u32,
}

impl Default for Breaker {
    fn default() -> Self {
        Self {
            state: BreakerState::Closed,
            failure_count: 0,
            last_failure_at: None,
            last_failure_kind: None,
            open_cycles: 0,
            half_open_left: 0,
        }
    }
}

impl Breaker {
    /// A breaker restored from storage; a HALF_OPEN one gets its probe
    /// budget back.
    pub fn restored(
        state: BreakerState,
        failure_count: u32,
        last_failure_at: Option<i64>,
        last_failure_kind: Option<FailureKind>,
        open_cycles: u32,
        cfg: &BreakerConfig,
    ) -> Self {
        let half_open_left = if state == BreakerState::HalfOpen { cfg.half_open_requests } else { 0 };
        Self { state, failure_count, last_failure_at, last_failure_kind, open_cycles, half_open_left }
    }

    /// How long an OPEN breaker holds before a probe.
    pub fn hold_ms(&self, cfg: &BreakerConfig) -> u64 {
        cfg.escalated_reset_ms(self.open_cycles)
    }

    /// The quiet time after which DEGRADED counts as healed: the longest
    /// hold a failure could get, at least one hold.
    fn quiet_ms(&self, cfg: &BreakerConfig) -> u64 {
        cfg.reset_timeout_ms.saturating_mul(cfg.max_reset_multiplier).max(self.hold_ms(cfg))
    }

    fn since_last_failure(&self, now: i64) -> u64 {
        self.last_failure_at.map_or(u64::MAX, |at| u64::try_from(now.saturating_sub(at)).unwrap_or(0))
    }

    /// Applies the passage of time. Every read goes through here.
    fn refresh(&mut self, cfg: &BreakerConfig, now: i64) {
        match self.state {
            BreakerState::Open if self.since_last_failure(now) >= self.hold_ms(cfg) => {
                self.state = BreakerState::HalfOpen;
                self.half_open_left = cfg.half_open_requests;
            }
            BreakerState::Degraded if self.since_last_failure(now) >= self.quiet_ms(cfg) => {
                self.state = BreakerState::Closed;
                self.failure_count = 0;
            }
            _ => {}
        }
    }

    pub fn state(&mut self, cfg: &BreakerConfig, now: i64) -> BreakerState {
        self.refresh(cfg, now);
        self.state
    }

    /// The state as last written, without refreshing: only for storing
    /// it (every decision reads [`state`](Self::state)).
    pub fn stored_state(&self) -> BreakerState {
        self.state
    }

    pub fn failure_count(&self) -> u32 {
        self.failure_count
    }

    pub fn open_cycles(&self) -> u32 {
        self.open_cycles
    }

    pub fn last_failure_at(&self) -> Option<i64> {
        self.last_failure_at
    }

    pub fn last_failure_kind(&self) -> Option<FailureKind> {
        self.last_failure_kind
    }

    /// Whether a request may go to the provider now (consumes nothing).
    pub fn can_execute(&mut self, cfg: &BreakerConfig, now: i64) -> bool {
        match self.state(cfg, now) {
            BreakerState::Closed | BreakerState::Degraded => true,
            BreakerState::Open => false,
            BreakerState::HalfOpen => self.half_open_left > 0,
        }
    }

    /// Admits one request, taking a probe slot when HALF_OPEN.
    pub fn try_acquire(&mut self, cfg: &BreakerConfig, now: i64) -> bool {
        let ok = self.can_execute(cfg, now);
        if ok && self.state == BreakerState::HalfOpen {
            self.half_open_left -= 1;
        }
        ok
    }

    /// Gives back a probe slot whose request ended without a verdict
    /// (client gone, local timeout).
    pub fn release_probe(&mut self, cfg: &BreakerConfig) {
        if self.state == BreakerState::HalfOpen {
            self.half_open_left = (self.half_open_left + 1).min(cfg.half_open_requests);
        }
    }

    /// Time until the breaker admits a probe; 0 when it admits now.
    pub fn retry_after_ms(&mut self, cfg: &BreakerConfig, now: i64) -> u64 {
        match self.state(cfg, now) {
            BreakerState::Open => self.hold_ms(cfg).saturating_sub(self.since_last_failure(now)),
            _ => 0,
        }
    }

    pub fn on_failure(&mut self, cfg: &BreakerConfig, now: i64, kind: Option<FailureKind>) {
        self.refresh(cfg, now);
        self.failure_count = self.failure_count.saturating_add(1);
        self.last_failure_at = Some(now);
        self.last_failure_kind = kind;
        self.state = match self.state {
            BreakerState::Open => BreakerState::Open,
            BreakerState::HalfOpen => {
                self.open_cycles = self.open_cycles.saturating_add(1);
                BreakerState::Open
            }
            _ if self.failure_count >= cfg.failure_threshold => BreakerState::Open,
            BreakerState::Closed if self.failure_count >= cfg.degradation_threshold => BreakerState::Degraded,
            other => other,
        };
        if self.state == BreakerState::Open {
            self.half_open_left = 0;
        }
    }

    pub fn on_success(&mut self, cfg: &BreakerConfig, now: i64) {
        self.refresh(cfg, now);
        match self.state {
            // A late success from before the breaker opened changes nothing.
            BreakerState::Open => {}
            BreakerState::HalfOpen => *self = Self::default(),
            BreakerState::Closed | BreakerState::Degraded => {
                self.failure_count = self.failure_count.saturating_sub(1);
                if self.state == BreakerState::Degraded && self.failure_count <= cfg.degradation_threshold {
                    self.state = BreakerState::Closed;
                }
            }
        }
    }

    /// A passing connection test heals DEGRADED at once.
    pub fn on_connection_test_passed(&mut self, cfg: &BreakerConfig, now: i64) {
        if self.state(cfg, now) == BreakerState::Degraded {
            self.state = BreakerState::Closed;
            self.failure_count = 0;
        }
    }
}

#[cfg(test)]
mod tests;
