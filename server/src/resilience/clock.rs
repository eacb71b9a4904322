//! Time for the resilience engine. Engine functions take `now` (epoch ms)
//! as an argument; whoever calls them reads it from a [`Clock`], so tests
//! drive time by hand instead of sleeping.

use std::{
    future::Future,
    pin::Pin,
    sync::atomic::{AtomicI64, Ordering},
};

/// A future a [`Clock`] hands out for waiting.
pub type Sleep<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Waits `ms` of this clock's time.
    fn sleep(&self, ms: u64) -> Sleep<'_>;
}

/// The wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }

    fn sleep(&self, ms: u64) -> Sleep<'_> {
        Box::pin(tokio::time::sleep(std::time::Duration::from_millis(ms)))
    }
}

/// A clock that only moves when told to (tests).
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        Self(AtomicI64::new(start_ms))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Time jumps forward at once: waiting code runs without real delay.
    fn sleep(&self, ms: u64) -> Sleep<'_> {
        self.advance(i64::try_from(ms).unwrap_or(i64::MAX));
        Box::pin(tokio::task::yield_now())
    }
}
