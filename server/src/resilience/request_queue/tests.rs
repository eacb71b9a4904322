use proptest::prelude::*;
use std::time::Duration;

use super::*;

fn rates(per_minute: u64, min_time_ms: u64, concurrent: u32) -> Rates {
    Rates { per_minute, min_time: Duration::from_millis(min_time_ms), concurrent }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn admission_rejects_at_the_depth_and_zero_is_unbounded() {
    for (queued, max) in [(0, 0), (1000, 0), (0, 2), (1, 2)] {
        assert_eq!(admit(queued, max), Admission::Admit, "({queued}, {max})");
    }
    for (queued, max) in [(2, 2), (5, 2)] {
        assert_eq!(admit(queued, max), Admission::Reject, "({queued}, {max})");
    }
}

proptest! {
    #[test]
    fn admission_is_exactly_the_depth_rule(queued in 0u64..200_000, max in 0u64..100_001) {
        let admitted = admit(queued, max) == Admission::Admit;
        prop_assert_eq!(admitted, max == 0 || queued < max);
    }
}

#[tokio::test(start_paused = true)]
async fn the_reservoir_allows_its_rate_per_minute_then_waits_for_the_refill() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(3, 0, 10), t0);
    for _ in 0..3 {
        assert!(l.try_start(t0));
    }
    assert_eq!(l.when(t0), Start::At(t0 + REFILL_EVERY), "the fourth waits for the minute");
    assert_eq!(l.counts(t0).paused_until, Some(t0 + REFILL_EVERY));
    assert!(!l.try_start(t0 + ms(59_999)));
    assert!(l.try_start(t0 + REFILL_EVERY), "refilled");
}

#[tokio::test(start_paused = true)]
async fn starts_are_spaced_by_the_min_time() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(60, 350, 10), t0);
    assert!(l.try_start(t0));
    assert_eq!(l.when(t0 + ms(100)), Start::At(t0 + ms(350)));
    assert!(!l.try_start(t0 + ms(349)));
    assert!(l.try_start(t0 + ms(350)));
}

#[tokio::test(start_paused = true)]
async fn concurrency_waits_for_a_finish_and_the_line_is_first_in_first_out() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(100, 0, 1), t0);
    assert!(l.try_start(t0));
    let (first, first_wake) = l.join();
    let (second, _) = l.join();
    assert!(!l.try_start(t0), "nobody jumps the line");
    assert_eq!(l.start_head(first, t0), Err(Start::WhenFreed));
    l.finish(t0);
    // The finish woke the head (its wake-up is stored until it waits).
    tokio::time::timeout(ms(1), first_wake.notified()).await.expect("the head was woken");
    assert_eq!(l.start_head(second, t0), Err(Start::WhenFreed), "not the head");
    assert_eq!(l.start_head(first, t0), Ok(()));
    l.finish(t0);
    assert_eq!(l.start_head(second, t0), Ok(()));
    assert_eq!(l.counts(t0), QueueCounts { queued: 0, running: 1, limit: 1, paused_until: None });
}

#[tokio::test(start_paused = true)]
async fn leaving_the_head_of_the_line_wakes_the_next() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(100, 0, 1), t0);
    assert!(l.try_start(t0));
    let (first, _) = l.join();
    let (second, second_wake) = l.join();
    l.leave(first);
    tokio::time::timeout(ms(1), second_wake.notified()).await.expect("the new head was woken");
    l.finish(t0);
    assert_eq!(l.start_head(second, t0), Ok(()));
}

#[tokio::test(start_paused = true)]
async fn a_body_stated_wait_pauses_and_a_later_refill_is_kept() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(60, 0, 10), t0);
    l.pause(t0, ms(5_000));
    assert_eq!(l.when(t0), Start::At(t0 + ms(5_000)));
    // A shorter pause never shortens the longer one.
    l.pause(t0, ms(1_000));
    assert_eq!(l.when(t0 + ms(1_000)), Start::At(t0 + ms(5_000)));
    assert!(l.try_start(t0 + ms(5_000)));
}

#[tokio::test(start_paused = true)]
async fn upstream_rate_headers_only_ever_tighten() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(60, 0, 10), t0);
    l.adapt(t0, 2, Some(ms(30_000)));
    assert!(l.try_start(t0) && l.try_start(t0));
    assert_eq!(l.when(t0), Start::At(t0 + REFILL_EVERY), "two were left; our own minute refills");
    let mut l = Limiter::new(rates(60, 0, 10), t0);
    l.adapt(t0, 0, Some(ms(20_000)));
    assert_eq!(l.when(t0), Start::At(t0 + ms(20_000)), "none left: paused until the reset");
    let mut l = Limiter::new(rates(5, 0, 10), t0);
    l.adapt(t0, 500, Some(ms(1_000)));
    for _ in 0..5 {
        assert!(l.try_start(t0));
    }
    assert!(!l.try_start(t0), "a generous upstream never raises our own rate");
}

#[tokio::test(start_paused = true)]
async fn a_line_that_does_not_move_is_wedged_but_a_pause_is_not() {
    let t0 = Instant::now();
    let execution = ms(10_000);
    let mut l = Limiter::new(rates(100, 0, 1), t0);
    assert!(l.try_start(t0));
    assert!(!l.wedged(t0 + ms(100_000), execution), "nobody waits");
    let _ = l.join();
    assert!(!l.wedged(t0 + execution + WEDGE_GRACE - ms(1), execution));
    assert!(l.wedged(t0 + execution + WEDGE_GRACE, execution), "the executing request never finished");
    let mut l = Limiter::new(rates(100, 0, 1), t0);
    let _ = l.join();
    l.pause(t0, Duration::from_secs(3_600));
    assert!(!l.wedged(t0 + ms(200_000), execution), "waiting out a pause is progress as planned");
}

#[tokio::test(start_paused = true)]
async fn a_lower_rate_applies_at_once() {
    let t0 = Instant::now();
    let mut l = Limiter::new(rates(60, 0, 10), t0);
    l.set_rates(rates(1, 0, 10));
    assert!(l.try_start(t0));
    assert!(!l.try_start(t0));
}

#[tokio::test(start_paused = true)]
async fn queues_are_per_connection_or_per_model_and_slots_finish_on_drop() {
    let queues = RequestQueues::default();
    let r = rates(60, 0, 2);
    let a = queues.queue("gemini", "c1", Some("gemini-2.5-pro"), r);
    let b = queues.queue("openai", "c2", None, r);
    assert_eq!((a.id.as_str(), b.id.as_str()), ("gemini:c1:gemini-2.5-pro", "openai:c2"));
    assert!(Arc::ptr_eq(&a, &queues.queue("gemini", "c1", Some("gemini-2.5-pro"), r)));
    assert!(a.limiter.lock().try_start(Instant::now()));
    let slot = QueueSlot::started(a.clone());
    assert_eq!(a.limiter.lock().counts(Instant::now()).running, 1);
    drop(slot);
    assert!(queues.snapshot().iter().all(|(_, c)| c.running == 0));
}

#[test]
fn protection_is_three_state() {
    let mut s = RequestQueueSettings::default();
    assert!(protected(&s, None, true), "auto-enable covers API-key connections");
    assert!(!protected(&s, None, false), "not OAuth or local ones");
    assert!(!protected(&s, Some(false), true), "false opts out even under auto-enable");
    s.auto_enable_api_key_providers = false;
    assert!(!protected(&s, None, true));
    assert!(protected(&s, Some(true), false), "true forces it on");
}

#[test]
fn instances_sharing_a_connection_split_its_pace() {
    assert_eq!(rates(60, 350, 6).shared_by(1), rates(60, 350, 6));
    assert_eq!(rates(60, 350, 6).shared_by(0), rates(60, 350, 6), "never fewer than this one");
    assert_eq!(rates(60, 350, 6).shared_by(2), rates(30, 700, 3));
    assert_eq!(rates(60, 350, 6).shared_by(4), rates(15, 1400, 1), "at least one executing each");
    assert_eq!(rates(1, 0, 1).shared_by(3), rates(1, 0, 1), "at least one start a minute each");
}

proptest! {
    #[test]
    fn instances_together_never_exceed_the_pace(per_minute in 1u64..10_000, min_ms in 0u64..5_000, n in 1u32..16) {
        let part = rates(per_minute, min_ms, 6).shared_by(n);
        // Together: the rate at most the configured one (when there is enough for one each).
        if per_minute >= u64::from(n) {
            prop_assert!(part.per_minute * u64::from(n) <= per_minute);
        }
        // n starts spaced by the stretched spacing span what n configured gaps would.
        prop_assert_eq!(part.min_time, ms(min_ms) * n);
    }
}
