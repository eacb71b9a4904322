//! Reference §5 items 31–34 and the scope rules of SPEC §R3.

use super::*;

const T: i64 = 1_767_225_600_000;

fn settings(base: u64, max: u64) -> ModelLockoutSettings {
    ModelLockoutSettings { enabled: true, base_cooldown_ms: base, max_cooldown_ms: max, ..Default::default() }
}

fn fail(l: &mut Lockouts, s: &ModelLockoutSettings, status: u16, hint: Option<u64>, now: i64) -> Option<u64> {
    let reason = if status == 429 { ErrorReason::RateLimited } else { ErrorReason::ServerError };
    l.record_failure(
        &LockFailure {
            provider: "glm",
            connection_id: "c1",
            model: "glm-5",
            status: Some(status),
            reason,
            hint_ms: hint,
            now_ms: now,
        },
        s,
    )
}

#[test]
fn repeated_failures_escalate_up_to_the_cap() {
    let s = settings(500, 1500);
    let mut l = Lockouts::default();
    let got: Vec<Option<u64>> = [T, T + 600, T + 1700].iter().map(|now| fail(&mut l, &s, 503, None, *now)).collect();
    assert_eq!(got, [Some(500), Some(1000), Some(1500)]);
    // Outside the escalation window the count restarts.
    let later = T + 1700 + (ESCALATION_WINDOW_MS + 1500) as i64 + 1;
    assert_eq!(fail(&mut l, &s, 503, None, later), Some(500));
}

#[test]
fn off_or_unlisted_statuses_lock_nothing() {
    let mut l = Lockouts::default();
    assert_eq!(fail(&mut l, &ModelLockoutSettings::default(), 429, None, T), None, "off by default");
    assert_eq!(fail(&mut l, &settings(5_000, 60_000), 500, None, T), None, "500 is not in the default list");
    assert!(l.active(T).is_empty());
}

#[test]
fn decay_halves_and_lifts_at_zero() {
    let s = settings(5_000, 60_000);
    let mut l = Lockouts::default();
    for i in 0..4 {
        fail(&mut l, &s, 503, None, T + i);
    }
    assert_eq!(l.decay("glm", "c1", "glm-5"), (2, false));
    let mut one = Lockouts::default();
    fail(&mut one, &s, 503, None, T);
    assert_eq!(one.decay("glm", "c1", "glm-5"), (0, true));
    assert!(one.locked_for("glm", "c1", "glm-5", T).is_none(), "decay to 0 re-enables the model");
    assert_eq!(Lockouts::default().decay("glm", "c1", "glm-5"), (0, false));
    let mut two = Lockouts::default();
    fail(&mut two, &s, 503, None, T);
    fail(&mut two, &s, 503, None, T + 1);
    assert_eq!(two.decay("glm", "c1", "glm-5"), (1, false));
    assert_eq!(two.decay("glm", "c1", "glm-5"), (0, true));
}

#[test]
fn hints_versus_escalation() {
    let s = ModelLockoutSettings { base_cooldown_ms: 120_000, use_exponential_backoff: true, ..Default::default() };
    assert_eq!(select_cooldown(3_600_000, &s), Some(3_600_000));
    assert_eq!(select_cooldown(60_000, &s), None);
    let off = ModelLockoutSettings { use_exponential_backoff: false, ..s };
    assert_eq!(select_cooldown(0, &off), Some(120_000));
    // A real upstream reset is honoured past the cap.
    let mut l = Lockouts::default();
    assert_eq!(fail(&mut l, &settings(5_000, 60_000), 429, Some(7_200_000), T), Some(7_200_000));
}

#[test]
fn a_shorter_lock_never_shortens_a_longer_one() {
    let s = settings(5_000, 3_600_000);
    let mut l = Lockouts::default();
    fail(&mut l, &s, 429, Some(600_000), T);
    let until = l.locked_for("glm", "c1", "glm-5", T).unwrap().until;
    fail(&mut l, &s, 429, Some(10_000), T + 1);
    assert_eq!(l.locked_for("glm", "c1", "glm-5", T + 1).unwrap().until, until);
}

#[test]
fn quota_without_a_hint_locks_until_local_midnight() {
    let s = settings(5_000, 60_000);
    let mut l = Lockouts::default();
    let f = LockFailure {
        provider: "glm",
        connection_id: "c1",
        model: "glm-5",
        status: Some(429),
        reason: ErrorReason::QuotaExhausted,
        hint_ms: None,
        now_ms: T,
    };
    assert_eq!(l.record_failure(&f, &s), Some(until_local_midnight(T)));
}

#[test]
fn scope_follows_the_status() {
    assert_eq!(LockScope::for_status(Some(429)), LockScope::QuotaFamily);
    assert_eq!(LockScope::for_status(Some(404)), LockScope::BareModel);
    assert_eq!(LockScope::for_status(Some(502)), LockScope::Exact);
    assert_eq!(LockScope::for_status(None), LockScope::Exact);
    assert_eq!(key("glm", "c1", "GLM-5", LockScope::Exact), "glm:c1:exact:glm-5");
    let s = settings(5_000, 60_000);
    let mut l = Lockouts::default();
    fail(&mut l, &s, 503, None, T);
    assert!(l.locked_for("glm", "c1", "glm-5", T + 1).is_some());
    assert!(l.locked_for("glm", "c2", "glm-5", T + 1).is_none(), "another connection is not locked");
    assert!(l.locked_for("glm", "c1", "glm-4.7", T + 1).is_none(), "another model is not locked");
    assert!(l.locked_for("glm", "c1", "glm-5", T + 5_000).is_none(), "locks expire lazily");
}

#[test]
fn clearing_and_listing() {
    let s = settings(5_000, 60_000);
    let mut l = Lockouts::default();
    fail(&mut l, &s, 503, None, T);
    fail(&mut l, &s, 429, Some(50_000), T);
    assert_eq!(l.active(T).len(), 2);
    assert_eq!(l.active(T)[0].until, T + 50_000, "longest first");
    assert_eq!(l.clear(Some("glm"), None, Some("GLM-5")), 2);
    assert_eq!(l.clear(None, None, None), 0);
}

#[test]
fn the_map_is_bounded_by_evicting_expired_entries() {
    let s = settings(5_000, 60_000);
    let mut l = Lockouts::default();
    for i in 0..MAX_ENTRIES {
        let model = format!("m{i}");
        l.record_failure(
            &LockFailure {
                provider: "p",
                connection_id: "c",
                model: &model,
                status: Some(503),
                reason: ErrorReason::ServerError,
                hint_ms: None,
                now_ms: T,
            },
            &s,
        );
    }
    l.record_failure(
        &LockFailure {
            provider: "p",
            connection_id: "c",
            model: "new",
            status: Some(503),
            reason: ErrorReason::ServerError,
            hint_ms: None,
            now_ms: T + 10_000,
        },
        &s,
    );
    assert_eq!(l.active(T + 10_000).len(), 1, "expired locks made room");
}
