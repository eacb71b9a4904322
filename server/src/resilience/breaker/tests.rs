//! The behavioural cases of reference §5 items 1–11, plus the lazy
//! DEGRADED recovery and restore rules of SPEC §R1.

use super::*;

fn cfg(failure: u32, degradation: u32, reset_ms: u64) -> BreakerConfig {
    BreakerConfig {
        failure_threshold: failure,
        degradation_threshold: degradation,
        reset_timeout_ms: reset_ms,
        max_reset_multiplier: 16,
        escalate_after_cycles: 3,
        half_open_requests: 1,
    }
}

const T0: i64 = 1_000_000;

fn fail_n(b: &mut Breaker, c: &BreakerConfig, n: u32, now: i64) {
    for _ in 0..n {
        b.on_failure(c, now, None);
    }
}

#[test]
fn opens_at_the_failure_threshold_and_holds_for_the_reset_timeout() {
    let c = cfg(2, 2, 30_000);
    let mut b = Breaker::default();
    fail_n(&mut b, &c, 2, T0);
    assert_eq!(b.state(&c, T0), BreakerState::Open);
    assert_eq!(b.last_failure_kind(), None);
    let left = b.retry_after_ms(&c, T0 + 500);
    assert!(left > 29_000 && left <= 30_000, "{left}");
    assert!(!b.can_execute(&c, T0 + 29_999));
}

#[test]
fn degrades_before_it_opens() {
    let c = cfg(8, 5, 30_000);
    let mut b = Breaker::default();
    for n in 1..=8 {
        b.on_failure(&c, T0, None);
        let expected = match n {
            1..=4 => BreakerState::Closed,
            5..=7 => BreakerState::Degraded,
            _ => BreakerState::Open,
        };
        assert_eq!(b.state(&c, T0), expected, "after failure {n}");
    }
}

#[test]
fn successes_pay_failures_back_one_at_a_time() {
    let c = cfg(8, 5, 30_000);
    let mut b = Breaker::default();
    fail_n(&mut b, &c, 5, T0);
    b.on_success(&c, T0);
    assert_eq!((b.state(&c, T0), b.failure_count()), (BreakerState::Closed, 4));
    let mut b = Breaker::default();
    fail_n(&mut b, &c, 7, T0);
    b.on_success(&c, T0);
    assert_eq!((b.state(&c, T0), b.failure_count()), (BreakerState::Degraded, 6));
    let mut b = Breaker::default();
    b.on_failure(&c, T0, None);
    b.on_success(&c, T0);
    b.on_success(&c, T0);
    assert_eq!(b.failure_count(), 0);
}

#[test]
fn an_expired_hold_turns_half_open_on_read_with_one_probe() {
    let c = cfg(1, 1, 30_000);
    let mut b = Breaker::default();
    b.on_failure(&c, T0, None);
    let later = T0 + 30_000;
    assert!(b.can_execute(&c, later));
    assert_eq!(b.state(&c, later), BreakerState::HalfOpen);
    assert!(b.try_acquire(&c, later));
    assert!(!b.can_execute(&c, later), "the single probe is in flight");
    assert_eq!(b.retry_after_ms(&c, later), 0);
    // A probe that ends without a verdict gives its slot back.
    b.release_probe(&c);
    assert!(b.can_execute(&c, later));
}

#[test]
fn half_open_probe_outcomes() {
    let c = cfg(1, 1, 30_000);
    let mut b = Breaker::default();
    b.on_failure(&c, T0, None);
    let later = T0 + 30_000;
    assert!(b.try_acquire(&c, later));
    b.on_failure(&c, later, None);
    assert_eq!((b.state(&c, later), b.open_cycles()), (BreakerState::Open, 1));
    let again = later + 30_000;
    assert!(b.try_acquire(&c, again));
    b.on_success(&c, again);
    assert_eq!((b.state(&c, again), b.failure_count(), b.open_cycles()), (BreakerState::Closed, 0, 0));
}

#[test]
fn holds_escalate_after_the_configured_cycles() {
    let c = cfg(1, 1, 30_000);
    let holds: Vec<u64> = (0..=8).map(|cycles| c.escalated_reset_ms(cycles)).collect();
    assert_eq!(holds, [30_000, 30_000, 30_000, 30_000, 60_000, 120_000, 240_000, 480_000, 480_000]);
}

#[test]
fn a_failure_while_open_restarts_the_hold() {
    let c = cfg(1, 1, 30_000);
    let mut b = Breaker::default();
    b.on_failure(&c, T0, None);
    b.on_failure(&c, T0 + 20_000, None);
    assert_eq!(b.retry_after_ms(&c, T0 + 30_000), 20_000);
    // A late success from before the breaker opened changes nothing.
    b.on_success(&c, T0 + 30_000);
    assert_eq!(b.state(&c, T0 + 30_000), BreakerState::Open);
}

#[test]
fn degraded_heals_after_a_quiet_period_or_a_passing_test() {
    let c = BreakerConfig { max_reset_multiplier: 4, ..cfg(12, 7, 30_000) };
    let mut b = Breaker::default();
    fail_n(&mut b, &c, 7, T0);
    assert_eq!(b.state(&c, T0 + 119_999), BreakerState::Degraded);
    assert_eq!((b.state(&c, T0 + 120_000), b.failure_count()), (BreakerState::Closed, 0));
    let mut b = Breaker::default();
    fail_n(&mut b, &c, 7, T0);
    b.on_connection_test_passed(&c, T0 + 1);
    assert_eq!(b.state(&c, T0 + 1), BreakerState::Closed);
}

#[test]
fn a_restored_half_open_breaker_gets_its_probe_back() {
    let c = cfg(1, 1, 30_000);
    let mut b = Breaker::restored(BreakerState::HalfOpen, 1, Some(T0), None, 2, &c);
    assert!(b.try_acquire(&c, T0 + 1));
    assert!(!b.can_execute(&c, T0 + 1));
    let mut open = Breaker::restored(BreakerState::Open, 3, Some(T0), None, 0, &c);
    assert!(!open.can_execute(&c, T0 + 1), "restart keeps an open breaker open");
}

#[test]
fn settings_profiles_convert_with_local_never_degrading_separately() {
    let s = app::types::settings::ResilienceSettings::default();
    let local = BreakerConfig::from(&s.provider_breaker.local);
    assert_eq!((local.failure_threshold, local.degradation_threshold, local.reset_timeout_ms), (2, 2, 15_000));
    let apikey = BreakerConfig::from(&s.provider_breaker.apikey);
    assert_eq!((apikey.failure_threshold, apikey.degradation_threshold, apikey.max_reset_multiplier), (12, 7, 4));
    let mut b = Breaker::default();
    b.on_failure(&local, T0, None);
    assert_eq!(b.state(&local, T0), BreakerState::Closed);
    b.on_failure(&local, T0, None);
    assert_eq!(b.state(&local, T0), BreakerState::Open);
}
