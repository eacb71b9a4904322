//! Engine bookkeeping the integration tests cannot see directly.

use super::*;
use crate::resilience::clock::ManualClock;

const T: i64 = 1_767_225_600_000;

fn engine() -> (Engine, Arc<ManualClock>, tokio::sync::mpsc::UnboundedReceiver<Change>) {
    let clock = Arc::new(ManualClock::new(T));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (Engine::new(clock.clone(), Some(tx)), clock, rx)
}

fn failure<'a>(status: Option<u16>, headers: &'a HeaderMap) -> AttemptFailure<'a> {
    AttemptFailure {
        provider: "openai",
        connection_id: "c1",
        model: "gpt-4o",
        oauth: false,
        disable_cooling: false,
        status,
        headers,
        body: "",
    }
}

fn cfg(threshold: u32) -> BreakerConfig {
    BreakerConfig {
        failure_threshold: threshold,
        degradation_threshold: threshold,
        ..breaker_config(&ResilienceSettings::default(), app::types::Category::Apikey)
    }
}

#[test]
fn network_errors_of_one_connection_within_5_s_count_once() {
    let (e, clock, _rx) = engine();
    let h = HeaderMap::new();
    let s = ResilienceSettings::default();
    let c = cfg(3);
    e.on_failure(&failure(None, &h), &s, &c, None);
    e.clear_connection("c1", false);
    e.on_failure(&failure(None, &h), &s, &c, None);
    assert_eq!(e.breakers(&s)[0].failure_count, 1);
    clock.advance(NETWORK_ERROR_DEDUP_MS);
    e.clear_connection("c1", false);
    e.on_failure(&failure(None, &h), &s, &c, None);
    assert_eq!(e.breakers(&s)[0].failure_count, 2);
}

#[test]
fn an_abandoned_half_open_probe_gives_its_slot_back() {
    let (e, clock, _rx) = engine();
    let h = HeaderMap::new();
    let s = ResilienceSettings::default();
    let c = cfg(1);
    e.on_failure(&failure(Some(503), &h), &s, &c, None);
    assert!(e.admit("openai", &c).is_err());
    clock.advance(30_000);
    let probe = e.admit("openai", &c).unwrap();
    assert!(probe.is_some());
    assert!(e.admit("openai", &c).is_err(), "one probe at a time");
    drop(probe);
    assert!(e.admit("openai", &c).unwrap().is_some(), "the client went away; the slot is free again");
}

#[test]
fn changes_are_sent_to_the_writer_and_quiet_paths_send_nothing() {
    let (e, _clock, mut rx) = engine();
    let h = HeaderMap::new();
    let s = ResilienceSettings::default();
    let c = cfg(5);
    e.on_success("openai", "c1", "gpt-4o", &c, None);
    assert!(rx.try_recv().is_err(), "a healthy success writes nothing");
    e.on_failure(&failure(Some(503), &h), &s, &c, None);
    let mut got = Vec::new();
    while let Ok(change) = rx.try_recv() {
        got.push(change);
    }
    assert!(matches!(&got[0], Change::Connection(id, h) if id == "c1" && h.error_code.as_deref() == Some("503")));
    assert!(matches!(&got[1], Change::Breaker(p, b) if p == "openai" && b.failure_count() == 1));
    assert_eq!(e.reset_breakers(None), 1);
    assert!(e.breakers(&s).is_empty());
}

#[test]
fn healthy_requests_stop_looking_at_lockouts_once_they_no_longer_matter() {
    let (e, clock, _rx) = engine();
    let h = HeaderMap::new();
    let mut s = ResilienceSettings::default();
    s.model_lockout.enabled = true;
    assert!(T >= e.lock_horizon.load(Ordering::Acquire), "no lockout yet: fast path");
    e.on_failure(&failure(Some(404), &h), &s, &cfg(5), None);
    assert!(matches!(e.exclusion("openai", "c1", "gpt-4o"), Some(Exclusion::ModelLocked { remaining_ms: 120_000 })));
    clock.advance(120_000);
    assert_eq!(e.exclusion("openai", "c1", "gpt-4o"), None, "the lock expired");
    clock.advance(2 * (120_000 + ESCALATION_WINDOW_MS as i64));
    assert!(e.now() >= e.lock_horizon.load(Ordering::Acquire), "past every window: the mutex is skipped again");
}
