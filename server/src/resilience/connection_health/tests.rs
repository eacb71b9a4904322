//! Reference §5 items 24–26 and the terminal rules of SPEC §R2.

use super::*;

const T: i64 = 1_767_225_600_000;

fn verdict(reason: ErrorReason, cooldown_ms: u64, backoff_level: u32) -> Verdict {
    Verdict::new(reason, true, cooldown_ms, backoff_level)
}

#[test]
fn a_cooling_connection_is_not_marked_again() {
    let mut h = ConnectionHealth { rate_limited_until: Some(T + 600_000), backoff_level: 2, ..Default::default() };
    let before = h.clone();
    assert_eq!(
        h.mark_failure(&verdict(ErrorReason::RateLimited, 3_000, 3), Some(429), "x", T, true),
        Marked::StillCooling(600_000)
    );
    assert_eq!(h, before, "no write, no escalation");
    let mut banned = ConnectionHealth { terminal: Some(TerminalStatus::Banned), ..Default::default() };
    let before = banned.clone();
    assert_eq!(
        banned.mark_failure(&verdict(ErrorReason::RateLimited, 3_000, 1), Some(429), "x", T, true),
        Marked::Terminal(TerminalStatus::Banned)
    );
    assert_eq!(banned, before);
}

#[test]
fn a_failure_cools_and_records_the_error() {
    let mut h = ConnectionHealth::default();
    assert_eq!(
        h.mark_failure(&verdict(ErrorReason::RateLimited, 3_000, 1), Some(429), "slow down", T, true),
        Marked::Cooled(3_000)
    );
    assert_eq!((h.rate_limited_until, h.backoff_level), (Some(T + 3_000), 1));
    assert_eq!(
        (h.last_error.as_deref(), h.last_error_type.as_deref(), h.error_code.as_deref()),
        (Some("slow down"), Some("rate_limited"), Some("429"))
    );
    assert!(!h.is_eligible(T + 2_999));
    assert!(h.is_eligible(T + 3_000), "lazy expiry");
}

#[test]
fn success_clears_every_error_field() {
    let mut h = ConnectionHealth::default();
    h.mark_failure(&verdict(ErrorReason::ServerError, 3_000, 1), Some(503), "down", T, true);
    assert!(h.clear());
    assert_eq!(h, ConnectionHealth::default());
    assert!(!h.clear(), "nothing to clear");
}

#[test]
fn selection_after_the_cooldown_resets_the_ladder() {
    let mut h = ConnectionHealth { rate_limited_until: Some(T - 1), backoff_level: 3, ..Default::default() };
    assert!(h.on_selected(T));
    assert_eq!(h.backoff_level, 0);
    let mut cooling = ConnectionHealth { rate_limited_until: Some(T + 1), backoff_level: 3, ..Default::default() };
    assert!(!cooling.on_selected(T));
    assert_eq!(cooling.backoff_level, 3);
}

#[test]
fn three_consecutive_refusals_ban_and_one_only_cools() {
    let mut h = ConnectionHealth::default();
    let refusal = verdict(ErrorReason::RequestRejected, 5_000, 0);
    assert_eq!(h.mark_failure(&refusal, Some(403), "Request not allowed", T, true), Marked::Cooled(5_000));
    assert_eq!(h.mark_failure(&refusal, Some(403), "Request not allowed", T + 5_000, true), Marked::Cooled(5_000));
    // Another kind of failure breaks the streak.
    h.mark_failure(&verdict(ErrorReason::ServerError, 0, 0), Some(500), "oops", T + 10_000, true);
    assert_eq!(h.rejected_streak, 0);
    for i in 0..2 {
        assert!(matches!(
            h.mark_failure(&refusal, Some(403), "Request not allowed", T + 20_000 * (i + 1), true),
            Marked::Cooled(_)
        ));
    }
    assert_eq!(
        h.mark_failure(&refusal, Some(403), "Request not allowed", T + 100_000, true),
        Marked::Terminal(TerminalStatus::Banned)
    );
    assert_eq!(h.rate_limited_until, None);
}

#[test]
fn auth_failures_expire_the_account_after_the_retries() {
    let mut h = ConnectionHealth::default();
    let mut now = T;
    for (level, cooldown) in [(1, 3_000), (2, 6_000), (3, 12_000)] {
        let auth = verdict(ErrorReason::AuthError, cooldown, level);
        assert_eq!(h.mark_failure(&auth, Some(401), "token expired", now, true), Marked::Cooled(cooldown));
        now += cooldown as i64;
    }
    let auth = verdict(ErrorReason::AuthError, 24_000, 4);
    assert_eq!(h.mark_failure(&auth, Some(401), "token expired", now, true), Marked::Terminal(TerminalStatus::Expired));
    assert_eq!(h.expired_retries, EXPIRED_RETRY_MAX);
}

#[test]
fn verdict_terminals_and_opt_outs() {
    let mut h = ConnectionHealth::default();
    let credits =
        Verdict { terminal: Some(Terminal::CreditsExhausted), ..verdict(ErrorReason::CreditsExhausted, 0, 0) };
    assert_eq!(
        h.mark_failure(&credits, Some(402), "pay up", T, true),
        Marked::Terminal(TerminalStatus::CreditsExhausted)
    );
    assert!(!h.is_eligible(T + 10 * 86_400_000));
    h.clear();
    assert_eq!(h.terminal, Some(TerminalStatus::CreditsExhausted), "a success never clears a terminal state");
    h.reset();
    assert!(h.is_eligible(T));
    let mut opted_out = ConnectionHealth::default();
    assert_eq!(
        opted_out.mark_failure(&verdict(ErrorReason::RateLimited, 3_000, 1), Some(429), "x", T, false),
        Marked::Recorded
    );
    assert!(opted_out.is_eligible(T));
    assert_eq!(opted_out.last_error.as_deref(), Some("x"));
}

#[test]
fn terminal_names_round_trip() {
    for t in [TerminalStatus::Banned, TerminalStatus::Expired, TerminalStatus::CreditsExhausted] {
        assert_eq!(TerminalStatus::parse(t.as_str()), Some(t));
    }
    assert_eq!(TerminalStatus::parse("active"), None);
}

#[test]
fn a_shared_limit_cools_a_sibling_without_shortening_or_ending_anything() {
    let quota = verdict(ErrorReason::QuotaExhausted, 60_000, 4);
    let egress = SharedLimit { failing_id: "conn-a", status: 429, until: T + 60_000, by: SharedBy::EgressIp };
    let mut fresh = ConnectionHealth { backoff_level: 1, ..Default::default() };
    assert!(fresh.mark_shared_limit(&quota, &egress));
    assert_eq!((fresh.rate_limited_until, fresh.backoff_level), (Some(T + 60_000), 1), "level untouched");
    assert_eq!(fresh.error_code.as_deref(), Some("429"));
    assert!(fresh.last_error.as_deref().is_some_and(|e| e.contains("conn-a") && e.contains("egress IP")));

    let mut cooling_longer = ConnectionHealth { rate_limited_until: Some(T + 90_000), ..Default::default() };
    let before = cooling_longer.clone();
    assert!(!cooling_longer.mark_shared_limit(&quota, &egress));
    assert_eq!(cooling_longer, before, "a longer cooldown is kept");

    let mut cooling_shorter = ConnectionHealth { rate_limited_until: Some(T + 10_000), ..Default::default() };
    assert!(cooling_shorter.mark_shared_limit(&quota, &egress));
    assert_eq!(cooling_shorter.rate_limited_until, Some(T + 60_000), "a shorter one is extended");

    let mut banned = ConnectionHealth { terminal: Some(TerminalStatus::Banned), ..Default::default() };
    let before = banned.clone();
    assert!(!banned.mark_shared_limit(&quota, &egress));
    assert_eq!(banned, before, "terminal rows are never touched");

    let rule = SharedLimit { status: 400, by: SharedBy::ProviderRule, ..egress };
    let mut sibling = ConnectionHealth::default();
    assert!(sibling.mark_shared_limit(&quota, &rule));
    assert_eq!(sibling.error_code.as_deref(), Some("400"), "the failing answer's status");
    assert!(sibling.last_error.as_deref().is_some_and(|e| e.contains("provider-wide rule")));
}
