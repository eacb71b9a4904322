//! Engine bookkeeping the integration tests cannot see directly.

use super::*;
use crate::resilience::{
    clock::ManualClock,
    lockout::{ESCALATION_WINDOW_MS, QuotaScope},
};
use app::types::settings::ErrorReason;

const T: i64 = 1_767_225_600_000;

fn engine() -> (Engine, Arc<ManualClock>, EngineChanges) {
    let clock = Arc::new(ManualClock::new(T));
    let changes = EngineChanges::detached();
    (Engine::new(clock.clone(), changes.clone()), clock, changes)
}

fn failure<'a>(status: Option<u16>, headers: &'a HeaderMap) -> AttemptFailure<'a> {
    AttemptFailure {
        provider: "openai",
        connection_id: "c1",
        model: "gpt-4o",
        oauth: false,
        disable_cooling: false,
        stall: false,
        status,
        headers,
        body: "",
        egress_ip: None,
        quota_scope: QuotaScope::Connection,
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
    assert_eq!(e.breakers(&s, |_| Category::Apikey)[0].failure_count, 1);
    clock.advance(NETWORK_ERROR_DEDUP_MS);
    e.clear_connection("c1", false);
    e.on_failure(&failure(None, &h), &s, &c, None);
    assert_eq!(e.breakers(&s, |_| Category::Apikey)[0].failure_count, 2);
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
    let (e, _clock, changes) = engine();
    let h = HeaderMap::new();
    let s = ResilienceSettings::default();
    let c = cfg(5);
    e.on_success("openai", "c1", "gpt-4o", &c, None);
    assert!(
        changes.connections.take().is_empty() && changes.breakers.take().is_empty(),
        "a healthy success writes nothing"
    );
    e.on_failure(&failure(Some(503), &h), &s, &c, None);
    let health = changes.connections.take();
    assert!(matches!(health.get("c1"), Some(h) if h.error_code.as_deref() == Some("503")), "{health:?}");
    let breakers = changes.breakers.take();
    assert!(matches!(breakers.get("openai"), Some(b) if b.failure_count() == 1), "{breakers:?}");
    assert_eq!(e.reset_breakers(None), 1);
    assert!(e.breakers(&s, |_| Category::Apikey).is_empty());
}

#[test]
fn healthy_requests_stop_looking_at_lockouts_once_they_no_longer_matter() {
    let (e, clock, _rx) = engine();
    let h = HeaderMap::new();
    let mut s = ResilienceSettings::default();
    s.model_lockout.enabled = true;
    assert!(T >= e.lock_horizon.load(Ordering::Acquire), "no lockout yet: fast path");
    e.on_failure(&failure(Some(404), &h), &s, &cfg(5), None);
    assert!(matches!(
        e.exclusion("openai", "c1", "gpt-4o"),
        Some(Exclusion::ModelLocked { remaining_ms: 120_000, .. })
    ));
    clock.advance(120_000);
    assert_eq!(e.exclusion("openai", "c1", "gpt-4o"), None, "the lock expired");
    clock.advance(2 * (120_000 + ESCALATION_WINDOW_MS as i64));
    assert!(e.now() >= e.lock_horizon.load(Ordering::Acquire), "past every window: the mutex is skipped again");
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn a_quota_429_on_an_egress_bucketed_provider_cools_its_siblings_on_the_same_ip() {
    let (e, clock, changes) = engine();
    let settings = ResilienceSettings::default();
    e.record_egress("go-1", ip("10.0.0.1"));
    e.record_egress("go-2", ip("10.0.0.1"));
    e.record_egress("go-3", ip("10.0.0.2"));
    let headers = HeaderMap::new();
    let quota = AttemptFailure {
        provider: "opencode-go",
        connection_id: "go-1",
        body: "You have exceeded your daily quota",
        ..failure(Some(429), &headers)
    };
    let o = e.on_failure(&quota, &settings, &cfg(5), None);
    assert_eq!(o.verdict.reason, ErrorReason::QuotaExhausted);
    let lock_ip = e.egress_lock_ip(&quota, &o, &settings);
    assert_eq!(lock_ip, Some(ip("10.0.0.1")), "the last seen IP when the response had none");
    changes.connections.take();
    let cooled = e.cool_egress_siblings("go-1", ip("10.0.0.1"), &o.verdict, ["go-1", "go-2", "go-3"]);
    assert_eq!(cooled, vec!["go-2"], "same IP only, never the failing one again");
    assert!(matches!(e.exclusion("opencode-go", "go-2", "m"), Some(Exclusion::Cooling { .. })));
    assert_eq!(e.exclusion("opencode-go", "go-3", "m"), None);
    let stored: Vec<_> = changes.connections.take().into_keys().collect();
    assert_eq!(stored, ["go-2"], "persisted behind");
    clock.advance(1_000);
    assert!(e.cool_egress_siblings("go-1", ip("10.0.0.1"), &o.verdict, ["go-2"]).is_empty(), "already cooling as long");

    let other = AttemptFailure { provider: "openai", ..quota };
    assert_eq!(e.egress_lock_ip(&other, &o, &settings), None, "provider not allow-listed");
    let off = ResilienceSettings { egress_ip_lock_providers: vec![], ..settings.clone() };
    assert_eq!(e.egress_lock_ip(&quota, &o, &off), None, "an empty list turns the lock off");
    let server_error = e.on_failure(
        &AttemptFailure { connection_id: "go-3", ..failure(Some(503), &headers) },
        &settings,
        &cfg(5),
        None,
    );
    let go3 = AttemptFailure { provider: "opencode-go", connection_id: "go-3", ..failure(Some(503), &headers) };
    assert_eq!(e.egress_lock_ip(&go3, &server_error, &settings), None, "only a 429 quota or rate limit");
}

#[test]
fn the_window_gate_tells_each_entry_it_changes_and_nothing_it_adopts() {
    let (e, _clock, changes) = engine();
    let s = ProviderCooldownSettings { enabled: true, ..ResilienceSettings::default().provider_cooldown };
    let local = app::types::Category::Local;
    e.record_target_failure("ollama", local, None, &s);
    let told = changes.windows.take();
    assert!(matches!(&told["ollama"], Window::Provider { failures, .. } if failures.len() == 1), "{told:?}");
    e.record_target_success("deepseek", None);
    assert!(changes.windows.take().is_empty(), "a success that cleared nothing tells nothing");
    e.record_target_success("ollama", None);
    assert!(changes.windows.take()["ollama"].is_cleared());
    e.record_target_failure("ollama", local, Some("c9"), &s);
    changes.windows.take();
    e.clear_window_gate(None);
    assert!(changes.windows.take()["ollama:c9"].is_cleared(), "a reset tells what it cleared");
    e.adopt_window(Window::Provider { provider: "ollama".into(), failures: vec![T, T + 1] });
    assert!(changes.windows.take().is_empty(), "what another instance told is not told back");
    assert_eq!(e.target_cooldown_ms("ollama", local, None, &s), 60_000, "two failures: the local threshold");
}

#[test]
fn the_window_gate_holds_a_combo_target_only_while_enabled() {
    let (e, clock, _rx) = engine();
    let mut s = ResilienceSettings::default().provider_cooldown;
    let local = app::types::Category::Local;
    e.record_target_failure("ollama", local, None, &s);
    assert_eq!(e.target_cooldown_ms("ollama", local, None, &s), 0, "off by default: nothing recorded");
    s.enabled = true;
    e.record_target_failure("ollama", local, None, &s);
    assert_eq!(e.target_cooldown_ms("ollama", local, None, &s), 0, "one failure is below the local threshold (2)");
    clock.advance(1_000);
    e.record_target_failure("ollama", local, None, &s);
    assert_eq!(e.target_cooldown_ms("ollama", local, None, &s), 60_000);
    e.record_target_failure("ollama", local, Some("c9"), &s);
    assert_eq!(
        e.target_cooldown_ms("ollama", local, Some("c9"), &s),
        5_000,
        "a pinned target uses its connection entry"
    );
    let off = ProviderCooldownSettings { enabled: false, ..s.clone() };
    assert_eq!(e.target_cooldown_ms("ollama", local, None, &off), 0, "turning the gate off releases at once");
    e.record_target_success("ollama", Some("c9"));
    assert_eq!(e.target_cooldown_ms("ollama", local, None, &s), 0, "a success clears the window");
    assert_eq!(e.target_cooldown_ms("ollama", local, Some("c9"), &s), 0);
    assert!(!e.windows_used.load(Ordering::Acquire), "empty again: the mutex is skipped");
}

#[test]
fn a_stream_stall_is_recorded_but_cools_only_when_stall_cooldown_is_on() {
    let (e, _clock, _rx) = engine();
    let headers = HeaderMap::new();
    let stall = AttemptFailure { stall: true, body: "the upstream stream stalled", ..failure(None, &headers) };
    let mut settings = ResilienceSettings::default();
    e.on_failure(&stall, &settings, &cfg(5), None);
    let h = e.health("c1");
    assert_eq!((h.rate_limited_until, h.last_error.as_deref()), (None, Some("the upstream stream stalled")));
    assert_eq!(h.backoff_level, 0, "the ladder does not climb for what cools nothing");
    assert!(e.exclusion("openai", "c1", "gpt-4o").is_none(), "still eligible");
    settings.stream_stall_cooldown.enabled = true;
    e.on_failure(&AttemptFailure { connection_id: "c2", ..stall }, &settings, &cfg(5), None);
    assert!(e.health("c2").rate_limited_until.is_some(), "cooled once stall cooldown is on");
}

/// Whether `model` on connection `c1` of `provider` is locked.
fn locked(e: &Engine, provider: &str, model: &str) -> bool {
    matches!(e.exclusion(provider, "c1", model), Some(Exclusion::ModelLocked { .. }))
}

#[test]
fn a_per_model_quota_provider_locks_the_model_and_keeps_the_connection_serving_with_lockout_off() {
    let (e, _clock, _rx) = engine();
    let (h, s) = (HeaderMap::new(), ResilienceSettings::default());
    assert!(!s.model_lockout.enabled, "lockout is off by default");
    let gemini = |status, model| AttemptFailure {
        provider: "gemini",
        model,
        quota_scope: QuotaScope::of("gemini", true),
        ..failure(Some(status), &h)
    };
    for (status, model) in [(429, "gemini-2.5-pro"), (404, "gemini-exp"), (503, "gemini-2.5-flash-lite")] {
        e.on_failure(&gemini(status, model), &s, &cfg(50), None);
        assert!(locked(&e, "gemini", model), "{status} locks {model}");
    }
    assert!(!locked(&e, "gemini", "gemini-2.5-flash"), "the other models serve");
    assert_eq!(e.health("c1").rate_limited_until, None, "the connection is not cooled");
    // A bare 500 is noted, nothing more.
    e.on_failure(&gemini(500, "gemini-2.5-flash"), &s, &cfg(50), None);
    assert!(!locked(&e, "gemini", "gemini-2.5-flash") && e.health("c1").rate_limited_until.is_none());
    // The same 429 on an account-metered provider cools the connection.
    e.on_failure(&failure(Some(429), &h), &s, &cfg(50), None);
    assert!(e.health("c1").rate_limited_until.is_some());
}

#[test]
fn a_codex_429_locks_its_quota_family_and_leaves_spark_serving() {
    let (e, _clock, _rx) = engine();
    let (h, s) = (HeaderMap::new(), ResilienceSettings::default());
    let codex = |status, model| AttemptFailure {
        provider: "codex",
        model,
        quota_scope: QuotaScope::of("codex", false),
        ..failure(Some(status), &h)
    };
    e.on_failure(&codex(429, "gpt-5-codex"), &s, &cfg(50), None);
    assert!(locked(&e, "codex", "gpt-5-codex") && locked(&e, "codex", "gpt-5"), "the codex family");
    assert!(!locked(&e, "codex", "gpt-5.3-codex-spark"), "spark is metered apart");
    assert_eq!(e.health("c1").rate_limited_until, None);
    e.on_failure(&codex(429, "gpt-5.3-codex-spark"), &s, &cfg(50), None);
    assert!(locked(&e, "codex", "gpt-5.3-codex-spark"));
    // Other failures cool the account as before.
    e.on_failure(&codex(503, "gpt-5"), &s, &cfg(50), None);
    assert!(e.health("c1").rate_limited_until.is_some());
}
