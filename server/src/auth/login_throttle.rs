//! Sign-in throttling: a wrong password costs its sender exponentially
//! more waiting, and a flood from many addresses slows every sender.
//!
//! Each address (an IPv6 client by its /64, since one host owns the whole
//! prefix) gets [`FREE_FAILURES`] wrong passwords; after that every
//! failure doubles the wait before the next attempt is even checked, from
//! one second up to [`MAX_DELAY_MS`]. All addresses together get
//! [`GLOBAL_FREE_FAILURES`] with a shorter cap, so a distributed guesser
//! is slowed too while the operator can still get in after a minute. A
//! refused attempt never reaches argon2 — that is what keeps a flood from
//! eating the CPU the proxy needs — and failures are forgotten
//! [`FORGET_AFTER_MS`] after the last one.
//!
//! An admitted attempt counts as a failure at once, before argon2 has
//! said anything: a check takes tens of milliseconds, and counting only
//! its verdict would let every attempt sent in that time through (a
//! flood of parallel guesses all reached argon2). A successful sign-in
//! takes its count back and clears its address.

use parking_lot::Mutex;
use std::{collections::HashMap, net::IpAddr};

/// Wrong passwords an address may send before it has to wait.
pub const FREE_FAILURES: u32 = 5;
/// Wrong passwords all addresses together may send before everyone waits.
pub const GLOBAL_FREE_FAILURES: u32 = 30;
/// The first wait; it doubles with every further failure.
pub const BASE_DELAY_MS: i64 = 1_000;
/// Longest wait for one address.
pub const MAX_DELAY_MS: i64 = 15 * 60 * 1_000;
/// Longest wait the global counter imposes.
pub const GLOBAL_MAX_DELAY_MS: i64 = 60 * 1_000;
/// Failures older than this (since the last one) are forgotten.
pub const FORGET_AFTER_MS: i64 = 30 * 60 * 1_000;
/// Addresses remembered at most; beyond this only the global counter counts.
const MAX_TRACKED: usize = 10_000;

#[derive(Clone, Copy, Default)]
struct Failures {
    count: u32,
    last_ms: i64,
    blocked_until_ms: i64,
}

impl Failures {
    fn forget_if_stale(&mut self, now_ms: i64) {
        if now_ms - self.last_ms >= FORGET_AFTER_MS {
            *self = Self::default();
        }
    }

    fn record(&mut self, now_ms: i64, free: u32, max_delay_ms: i64) {
        self.forget_if_stale(now_ms);
        self.count += 1;
        self.last_ms = now_ms;
        if self.count > free {
            let doublings = (self.count - free - 1).min(30);
            self.blocked_until_ms = now_ms + (BASE_DELAY_MS << doublings).min(max_delay_ms);
        }
    }

    fn wait_ms(&self, now_ms: i64) -> i64 {
        self.blocked_until_ms - now_ms
    }

    /// Uncounts one failure; the wait it caused goes with it once the
    /// count is back within the free ones.
    fn forgive_one(&mut self, free: u32) {
        self.count = self.count.saturating_sub(1);
        if self.count <= free {
            self.blocked_until_ms = 0;
        }
    }
}

/// The sign-in throttle of one gateway.
#[derive(Default)]
pub struct LoginThrottle {
    by_client: Mutex<HashMap<IpAddr, Failures>>,
    global: Mutex<Failures>,
}

impl LoginThrottle {
    /// Admits an attempt from `client` and counts it as a failure until
    /// [`Self::succeeded`] says otherwise; `Err(seconds)` when `client`
    /// must wait before its next attempt.
    pub fn admit(&self, client: IpAddr, now_ms: i64) -> Result<(), u64> {
        let key = bucket(client);
        let mut global = self.global.lock();
        let mut clients = self.by_client.lock();
        let client_wait = clients.get(&key).map_or(0, |f| f.wait_ms(now_ms));
        let wait = client_wait.max(global.wait_ms(now_ms));
        if wait > 0 {
            return Err((wait as u64).div_ceil(1_000));
        }
        global.record(now_ms, GLOBAL_FREE_FAILURES, GLOBAL_MAX_DELAY_MS);
        if clients.len() >= MAX_TRACKED {
            clients.retain(|_, f| now_ms - f.last_ms < FORGET_AFTER_MS);
        }
        if clients.len() < MAX_TRACKED || clients.contains_key(&key) {
            clients.entry(key).or_default().record(now_ms, FREE_FAILURES, MAX_DELAY_MS);
        }
        Ok(())
    }

    /// Counts an attempt another instance on the same database admitted:
    /// a flood spread over several instances is throttled as one.
    pub fn admitted_elsewhere(&self, client: IpAddr, now_ms: i64) {
        let key = bucket(client);
        self.global.lock().record(now_ms, GLOBAL_FREE_FAILURES, GLOBAL_MAX_DELAY_MS);
        let mut clients = self.by_client.lock();
        if clients.len() < MAX_TRACKED || clients.contains_key(&key) {
            clients.entry(key).or_default().record(now_ms, FREE_FAILURES, MAX_DELAY_MS);
        }
    }

    /// Takes back the failure [`Self::admit`] counted for `client`'s
    /// attempt, which turned out to be the right password, and forgets
    /// the address's earlier failures.
    pub fn succeeded(&self, client: IpAddr) {
        self.global.lock().forgive_one(GLOBAL_FREE_FAILURES);
        self.by_client.lock().remove(&bucket(client));
    }
}

/// The key an address is counted under: itself, or its /64 for IPv6.
fn bucket(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn an_address_waits_exponentially_longer_after_its_free_failures() {
        let t = LoginThrottle::default();
        for _ in 0..FREE_FAILURES {
            assert_eq!(t.admit(A, 0), Ok(()), "the free failures cost nothing");
        }
        assert_eq!(t.admit(A, 0), Ok(()), "the first one over is still checked");
        assert_eq!(t.admit(A, 0), Err(1));
        assert_eq!(t.admit(A, 999), Err(1));
        assert_eq!(t.admit(A, 1_000), Ok(()));
        assert_eq!(t.admit(A, 1_000), Err(2));
        assert_eq!(t.admit(A, 3_000), Ok(()));
        assert_eq!(t.admit(A, 3_000), Err(4));
        // Another address is not held up by A.
        assert_eq!(t.admit(B, 3_000), Ok(()));
    }

    #[test]
    fn attempts_admitted_elsewhere_count_here() {
        let t = LoginThrottle::default();
        for _ in 0..FREE_FAILURES {
            t.admitted_elsewhere(A, 0);
        }
        assert_eq!(t.admit(A, 0), Ok(()), "the first one over is still checked");
        assert_eq!(t.admit(A, 0), Err(1));
        t.succeeded(A);
        assert_eq!(t.admit(A, 0), Ok(()), "a success elsewhere clears the address");
    }

    #[test]
    fn attempts_sent_at_once_are_counted_before_any_is_checked() {
        let t = LoginThrottle::default();
        // No verdict has come back for any of them (argon2 is still busy).
        let admitted = (0..100).filter(|_| t.admit(A, 0).is_ok()).count();
        assert_eq!(admitted, FREE_FAILURES as usize + 1);
    }

    #[test]
    fn the_wait_is_capped_and_forgotten() {
        let t = LoginThrottle::default();
        for i in 0..40 {
            // Each attempt lands just as the last wait ended.
            let _ = t.admit(A, i * MAX_DELAY_MS);
        }
        let now = 40 * MAX_DELAY_MS;
        assert_eq!(t.admit(A, now - MAX_DELAY_MS + 1), Err((MAX_DELAY_MS / 1_000) as u64));
        let later = now + FORGET_AFTER_MS;
        for _ in 0..FREE_FAILURES {
            assert_eq!(t.admit(A, later), Ok(()), "stale failures were forgotten");
        }
    }

    #[test]
    fn the_right_password_takes_its_count_back_and_clears_the_address() {
        let t = LoginThrottle::default();
        for _ in 0..=FREE_FAILURES {
            let _ = t.admit(B, 0);
        }
        assert!(t.admit(B, 0).is_err());
        t.succeeded(B);
        assert_eq!(t.admit(B, 0), Ok(()));
        // Signing in again and again never trips the global throttle.
        let t = LoginThrottle::default();
        for _ in 0..10 * GLOBAL_FREE_FAILURES {
            assert_eq!(t.admit(A, 0), Ok(()));
            t.succeeded(A);
        }
    }

    #[test]
    fn many_addresses_together_trip_the_global_throttle() {
        let t = LoginThrottle::default();
        for i in 0..=GLOBAL_FREE_FAILURES {
            assert_eq!(t.admit(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0100 + i)), 0), Ok(()));
        }
        assert_eq!(t.admit(A, 0), Err(1), "everyone waits, for a short while");
        assert_eq!(t.admit(A, 1_000), Ok(()));
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_prefix() {
        let t = LoginThrottle::default();
        for i in 0..=FREE_FAILURES {
            let _ = t.admit(IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, i as u16)), 0);
        }
        let same_prefix = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 9, 9, 9, 9));
        let other_prefix = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 2, 0, 0, 0, 1));
        assert!(t.admit(same_prefix, 0).is_err());
        assert_eq!(t.admit(other_prefix, 0), Ok(()));
    }
}
