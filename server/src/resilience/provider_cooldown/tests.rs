//! Reference §5 items 36–37.

use super::*;

const T: i64 = 1_767_225_600_000;

fn defaults() -> ProviderCooldownSettings {
    ProviderCooldownSettings::default()
}

#[test]
fn connection_entries_back_off_exponentially_up_to_the_cap() {
    let s = ProviderCooldownSettings { max_retry_cooldown_ms: 20_000, ..defaults() };
    let mut c = ProviderCooldowns::default();
    let mut last = 0;
    for n in 1..=3 {
        c.record_connection_failure("openai", "k1", T);
        let r = c.connection_remaining_ms("openai", "k1", &s, T);
        assert!(r > last && r <= 20_000, "failure {n}: {r}");
        last = r;
    }
    assert_eq!(last, 20_000);
    assert!(c.connection_remaining_ms("openai", "k1", &s, T) <= 20_000);
    c.record_success("openai", Some("k1"));
    assert_eq!(c.connection_remaining_ms("openai", "k1", &s, T), 0);
    c.record_connection_failure("", "k1", T);
    assert_eq!(c.connection_remaining_ms("", "k1", &s, T), 0, "no provider, never cooling");
}

#[test]
fn the_api_key_window_gate() {
    let p = defaults().apikey;
    let mut c = ProviderCooldowns::default();
    for _ in 0..14 {
        c.record_provider_failure("openai", &p, T);
    }
    assert_eq!(c.provider_remaining_ms("openai", &p, T), 0);
    c.record_provider_failure("openai", &p, T);
    assert_eq!(c.provider_remaining_ms("openai", &p, T), 600_000);
    assert_eq!(c.provider_remaining_ms("openai", &p, T + 600_000), 0);
    // Failures that fall out of the window no longer count.
    let mut c = ProviderCooldowns::default();
    for _ in 0..14 {
        c.record_provider_failure("openai", &p, T);
    }
    let later = T + 30 * 60_000 + 1;
    c.record_provider_failure("openai", &p, later);
    assert_eq!(c.provider_remaining_ms("openai", &p, later), 0);
    // A success clears the window.
    let mut c = ProviderCooldowns::default();
    for _ in 0..15 {
        c.record_provider_failure("openai", &p, T);
    }
    c.record_success("openai", Some("k1"));
    c.record_provider_failure("openai", &p, T + 1);
    assert_eq!(c.provider_remaining_ms("openai", &p, T + 1), 0);
}

#[test]
fn local_and_oauth_profiles() {
    let s = defaults();
    let mut c = ProviderCooldowns::default();
    c.record_provider_failure("ollama", &s.local, T);
    c.record_provider_failure("ollama", &s.local, T);
    assert_eq!(c.provider_remaining_ms("ollama", &s.local, T), 60_000);
    for _ in 0..10 {
        c.record_provider_failure("claude", &s.oauth, T);
    }
    assert_eq!(c.provider_remaining_ms("claude", &s.oauth, T), 300_000);
}

#[test]
fn an_entry_another_instance_reports_is_merged_and_a_cleared_one_clears() {
    let profile = defaults().apikey;
    let threshold = usize::try_from(profile.provider_failure_threshold).unwrap();
    let (mut here, mut there) = (ProviderCooldowns::default(), ProviderCooldowns::default());
    // Each instance saw part of the failures: together they pass the threshold.
    for i in 0..threshold {
        let at = T + i64::try_from(i).unwrap();
        if i % 2 == 0 { &mut here } else { &mut there }.record_provider_failure("openai", &profile, at);
    }
    assert_eq!(here.provider_remaining_ms("openai", &profile, T + 100), 0, "not on its own failures alone");
    here.adopt(there.provider_window("openai"));
    assert!(here.provider_remaining_ms("openai", &profile, T + 100) > 0, "cooling on both instances' failures");
    here.adopt(there.provider_window("openai"));
    let Window::Provider { failures, .. } = here.provider_window("openai") else { unreachable!() };
    assert_eq!(failures.len(), threshold, "a report adopted twice counts once");

    there.record_connection_failure("openai", "k1", T);
    there.record_connection_failure("openai", "k1", T + 5);
    here.adopt(there.connection_window("openai", "k1"));
    assert_eq!(here.connection_window("openai", "k1"), there.connection_window("openai", "k1"));

    there.record_success("openai", Some("k1"));
    for cleared in [there.provider_window("openai"), there.connection_window("openai", "k1")] {
        here.adopt(cleared);
    }
    assert!(here.is_empty(), "a success on the other instance clears both entries here");
    assert!(here.entries().is_empty());
}
