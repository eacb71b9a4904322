//! The per-account strategies, on quotas as the upstreams report them.

use app::types::combo::Strategy;
use rand::{SeedableRng, rngs::StdRng};

use super::*;
use crate::routing::{combo_state::ComboState, quota::Quota};

const MIN: u64 = 60_000;

/// Accounts with these quotas: `(share used, ms to reset)`, `None` unknown.
fn accounts(quotas: &[Option<(f64, Option<u64>)>]) -> Vec<Candidate> {
    quotas
        .iter()
        .enumerate()
        .map(|(i, q)| Candidate {
            key: format!("0:p/m@c{i}"),
            provider: "p".into(),
            eligible: true,
            quota: q.map(|(used, reset)| Quota { windows: vec![(used, reset)], ..Quota::default() }),
            ..Candidate::default()
        })
        .collect()
}

fn once(strategy: Strategy, t: &[Candidate]) -> Vec<usize> {
    order(strategy, t, &mut ComboState::default(), &mut StdRng::seed_from_u64(5))
}

#[test]
fn reset_window_leads_with_the_soonest_reset_and_puts_unknown_and_used_up_last() {
    let t = accounts(&[Some((0.2, Some(50 * MIN))), None, Some((0.9, Some(5 * MIN))), Some((1.0, Some(MIN)))]);
    assert_eq!(once(Strategy::ResetWindow, &t), [2, 0, 1, 3]);
}

#[test]
fn reset_window_accounts_resetting_within_a_minute_of_each_other_take_turns() {
    let t = accounts(&[Some((0.5, Some(10 * MIN))), Some((0.5, Some(10 * MIN + 30_000))), Some((0.5, Some(30 * MIN)))]);
    let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(1));
    let orders: Vec<Vec<usize>> = (0..4).map(|_| order(Strategy::ResetWindow, &t, &mut state, &mut rng)).collect();
    assert_eq!(orders, [[0, 1, 2], [1, 0, 2], [0, 1, 2], [1, 0, 2]]);
}

/// A plan window: `(share used, ms to reset)`.
type Window = (f64, u64);

/// Subscription accounts with these plan windows: `(session, weekly)`;
/// `None` unknown.
fn subscriptions(plans: &[Option<(Window, Window)>]) -> Vec<Candidate> {
    let mut t = accounts(&vec![None; plans.len()]);
    for (c, plan) in t.iter_mut().zip(plans) {
        c.quota = plan.map(|((su, sr), (wu, wr))| Quota {
            windows: vec![(su, Some(sr)), (wu, Some(wr))],
            session: Some((su, Some(sr))),
            weekly: Some((wu, Some(wr))),
            age_ms: 0,
        });
    }
    t
}

#[test]
fn reset_aware_spends_a_subscription_about_to_renew_before_one_that_must_last() {
    const DAY: u64 = 1440 * MIN;
    // Half used, renewing in 4 h and 6 days; used up; unknown; 85 % used but renewing in a minute.
    let t = subscriptions(&[
        Some(((0.5, 240 * MIN), (0.5, 6 * DAY))),
        Some(((1.0, MIN), (0.3, DAY))),
        None,
        Some(((0.85, MIN), (0.85, MIN))),
    ]);
    assert_eq!(once(Strategy::ResetAware, &t), [3, 2, 0, 1]);
    let scores: Vec<f64> = t.iter().map(|c| reset_aware::score(c.quota.as_ref())).collect();
    assert!((scores[3] - 0.6254).abs() < 0.001 && (scores[0] - 0.2141).abs() < 0.001, "{scores:?}");
    // Nearly empty: below 10 % left in the session the score is cut in proportion.
    let low = subscriptions(&[Some(((0.95, MIN), (0.5, DAY))), Some(((0.9, MIN), (0.5, DAY)))]);
    let (low, high) = (reset_aware::score(low[0].quota.as_ref()), reset_aware::score(low[1].quota.as_ref()));
    assert!(low < high / 1.5, "{low} vs {high}");
}

/// API-key accounts report per-minute windows only: every strategy that
/// ranks accounts puts the one with more left first (issue [L]: the
/// reset pressure of plan windows once put the more used one first).
#[test]
fn on_per_minute_windows_every_account_ranking_strategy_leads_with_the_less_used_account() {
    let t = accounts(&[Some((0.8, Some(30_000))), Some((0.2, Some(30_000)))]);
    assert_eq!(once(Strategy::ResetAware, &t), [1, 0]);
    assert_eq!(once(Strategy::Headroom, &t), [1, 0]);
    let scores: Vec<f64> = t.iter().map(|c| reset_aware::score(c.quota.as_ref())).collect();
    assert_eq!(scores, [0.19999999999999996, 0.8], "the share left");
    let heads = quota_heads(&t, 1_000);
    assert!(heads[1] > 750, "drawn by share left, 0.8 : 0.2: {heads:?}");
    // Resets within a minute of each other: reset-window takes turns.
    let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(1));
    let leads: Vec<usize> = (0..4).map(|_| order(Strategy::ResetWindow, &t, &mut state, &mut rng)[0]).collect();
    assert_eq!(leads, [0, 1, 0, 1]);
}

#[test]
fn headroom_leads_with_the_account_furthest_from_its_limit_and_unknown_first() {
    let t = accounts(&[Some((0.7, None)), Some((0.2, None)), None, Some((1.0, Some(MIN))), Some((0.2, Some(MIN)))]);
    assert_eq!(once(Strategy::Headroom, &t), [2, 1, 4, 0, 3]);
}

/// How often each account leads quota-weighted over `runs` draws.
fn quota_heads(t: &[Candidate], runs: usize) -> Vec<usize> {
    let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(9));
    let mut count = vec![0; t.len()];
    for _ in 0..runs {
        count[order(Strategy::QuotaWeighted, t, &mut state, &mut rng)[0]] += 1;
    }
    count
}

#[test]
fn quota_weighted_draws_by_score_over_requests_in_flight() {
    let t = accounts(&[Some((0.0, None)), Some((0.8, None))]);
    let s: Vec<f64> = t.iter().map(|c| reset_aware::score(c.quota.as_ref())).collect();
    let expected = s[0] / (s[0] + s[1]);
    let count = quota_heads(&t, 10_000);
    assert!((count[0] as f64 / 10_000.0 - expected).abs() < 0.02, "{count:?} against {expected}");
    // The same two with the first busy on three attempts: its weight is a quarter.
    let mut busy = t.clone();
    busy[0].in_flight = 3;
    let expected = s[0] / 4.0 / (s[0] / 4.0 + s[1]);
    let count = quota_heads(&busy, 10_000);
    assert!((count[0] as f64 / 10_000.0 - expected).abs() < 0.02, "{count:?} against {expected}");
}

#[test]
fn quota_weighted_leads_with_fresh_roomy_accounts_and_puts_used_up_and_excluded_last() {
    // Used up; excluded by the gates; 99.5 % used (under the 1 % floor); fresh.
    let mut t = accounts(&[Some((1.0, Some(MIN))), Some((0.1, None)), Some((0.995, None)), Some((0.5, None))]);
    t[1].eligible = false;
    assert_eq!(quota_heads(&t, 500), [0, 0, 0, 500]);
    assert_eq!(once(Strategy::QuotaWeighted, &t), [3, 2, 0, 1], "then the floor pool, then the rest as listed");
    // A report older than 10 minutes is drawn from only when nothing fresh is left.
    let mut stale = accounts(&[Some((0.1, None)), Some((0.5, None))]);
    stale[0].quota.as_mut().unwrap().age_ms = 11 * MIN;
    assert_eq!(quota_heads(&stale, 500), [0, 500]);
    stale[1].eligible = false;
    assert_eq!(quota_heads(&stale, 500), [500, 0]);
}

#[test]
fn cache_optimized_keeps_a_session_on_one_account_and_spreads_sessions() {
    let weighed = |session: u8| {
        let mut t = accounts(&[None, None, None, None]);
        for c in &mut t {
            c.rendezvous = Some(cache_optimized::weight(&[session; 32], &c.key));
        }
        t
    };
    let first = once(Strategy::CacheOptimized, &weighed(1));
    assert_eq!(once(Strategy::CacheOptimized, &weighed(1)), first, "the same session, the same order");
    let leads: std::collections::HashSet<usize> =
        (0..40).map(|s| once(Strategy::CacheOptimized, &weighed(s))[0]).collect();
    assert!(leads.len() >= 3, "sessions spread over the accounts: {leads:?}");
    // An account leaving moves only its own sessions: the others keep their lead.
    for s in 0..40 {
        let all = weighed(s);
        let lead = once(Strategy::CacheOptimized, &all)[0];
        let without_last: Vec<Candidate> = all[..3].to_vec();
        if lead != 3 {
            assert_eq!(once(Strategy::CacheOptimized, &without_last)[0], lead);
        }
    }
    assert_eq!(once(Strategy::CacheOptimized, &accounts(&[None, None, None])), [0, 1, 2], "no session: as listed");
}

#[test]
fn cache_optimized_moves_new_sessions_off_a_busy_subscription_account() {
    let leads = |busy: usize| -> Vec<usize> {
        (0..60)
            .map(|s| {
                let mut t = accounts(&[None, None]);
                for c in &mut t {
                    c.rendezvous = Some(cache_optimized::weight(&[s; 32], &c.key));
                }
                t[0].foreign_sessions = busy;
                once(Strategy::CacheOptimized, &t)[0]
            })
            .collect()
    };
    let (free, busy) = (leads(0), leads(3));
    let on_first = |l: &[usize]| l.iter().filter(|&&i| i == 0).count();
    assert!(on_first(&busy) < on_first(&free), "fewer sessions lead with the busy account: {free:?} {busy:?}");
    assert!(free.iter().zip(&busy).all(|(f, b)| *f == 0 || *b == 1), "no session moves to the busy account");
}
