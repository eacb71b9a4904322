use app::types::combo::Strategy;
use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};

use super::*;
use crate::{
    routing::{
        combo_state::{ComboState, LastGood},
        quota::Quota,
    },
    upstream::model_facts::ModelFacts,
};

fn targets(n: usize) -> Vec<Candidate> {
    (0..n)
        .map(|i| Candidate {
            key: format!("{i}:p{}/m", i % 3),
            provider: format!("p{}", i % 3),
            eligible: true,
            ..Candidate::default()
        })
        .collect()
}

fn with_weights(weights: &[u32]) -> Vec<Candidate> {
    let mut t = targets(weights.len());
    for (c, w) in t.iter_mut().zip(weights) {
        c.weight = *w;
    }
    t
}

/// How often each index leads over `runs` orders.
fn heads(strategy: Strategy, t: &[Candidate], runs: usize) -> Vec<usize> {
    let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(7));
    let mut count = vec![0; t.len()];
    for _ in 0..runs {
        count[order(strategy, t, &mut state, &mut rng)[0]] += 1;
    }
    count
}

proptest! {
    #[test]
    fn every_strategy_orders_a_permutation_deterministically_for_a_seed(
        n in 0usize..12,
        seed in any::<u64>(),
        weights in proptest::collection::vec(0u32..=100, 12),
        eligible in proptest::collection::vec(any::<bool>(), 12),
        quotas in proptest::collection::vec(proptest::option::of((0.0f64..=1.0, proptest::option::of(0u64..100_000))), 12),
        facts in proptest::collection::vec(proptest::option::of((1u32..2_000_000, 0.01f64..100.0)), 12),
    ) {
        let mut t = with_weights(&weights[..n]);
        for (i, c) in t.iter_mut().enumerate() {
            c.eligible = eligible[i];
            c.quota = quotas[i].map(|(used, reset)| Quota { windows: vec![(used, reset)], age_ms: reset.unwrap_or(0) * 10, ..Quota::default() });
            c.facts = facts[i].map(|(context_window, input_price)| ModelFacts { context_window, input_price, output_price: input_price });
            c.in_flight = weights[i] % 4;
        }
        for strategy in Strategy::ALL {
            let run = || {
                let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(seed));
                (0..3).map(|_| order(strategy, &t, &mut state, &mut rng)).collect::<Vec<_>>()
            };
            let orders = run();
            for o in &orders {
                let mut sorted = o.clone();
                sorted.sort_unstable();
                prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{:?}", strategy);
            }
            prop_assert_eq!(orders, run(), "{:?} is deterministic for a seed", strategy);
        }
    }
}

#[test]
fn priority_and_fill_first_keep_the_declared_order() {
    let t = targets(4);
    for s in [Strategy::Priority, Strategy::FillFirst] {
        assert_eq!(order(s, &t, &mut ComboState::default(), &mut StdRng::seed_from_u64(1)), [0, 1, 2, 3]);
    }
}

#[test]
fn weighted_splits_nine_to_one_and_orders_the_rest_by_weight() {
    let count = heads(Strategy::Weighted, &with_weights(&[90, 10]), 10_000);
    let share = count[0] as f64 / 10_000.0;
    assert!((share - 0.9).abs() < 0.02, "{count:?}");
    let mut t = with_weights(&[10, 30, 20, 0]);
    t[1].eligible = false;
    let o = order(Strategy::Weighted, &t, &mut ComboState::default(), &mut StdRng::seed_from_u64(3));
    assert_eq!(o.last(), Some(&1), "an ineligible target goes last: {o:?}");
    let rest: Vec<usize> = o[1..o.len() - 1].to_vec();
    let mut by_weight = rest.clone();
    by_weight.sort_by_key(|&i| std::cmp::Reverse(t[i].weight));
    assert_eq!(rest, by_weight);
    let even = heads(Strategy::Weighted, &with_weights(&[0, 0]), 10_000);
    assert!(even.iter().all(|&c| (4_500..=5_500).contains(&c)), "all-zero weights split evenly: {even:?}");
}

#[test]
fn round_robin_leads_with_each_target_in_turn_and_skips_past_a_failover() {
    let t = targets(3);
    let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(1));
    let leads: Vec<usize> = (0..6).map(|_| order(Strategy::RoundRobin, &t, &mut state, &mut rng)[0]).collect();
    assert_eq!(leads, [0, 1, 2, 0, 1, 2]);
    // The head (0) failed and 1 served: the next request starts at 2.
    assert_eq!(order(Strategy::RoundRobin, &t, &mut state, &mut rng), [0, 1, 2]);
    state.rotation.served(1, 3);
    assert_eq!(order(Strategy::RoundRobin, &t, &mut state, &mut rng)[0], 2);
}

#[test]
fn strict_random_leads_with_every_target_once_per_round_never_twice_in_a_row() {
    let t = targets(4);
    let (mut state, mut rng) = (ComboState::default(), StdRng::seed_from_u64(11));
    let leads: Vec<usize> = (0..400).map(|_| order(Strategy::StrictRandom, &t, &mut state, &mut rng)[0]).collect();
    for round in leads.chunks(4) {
        let mut r = round.to_vec();
        r.sort_unstable();
        assert_eq!(r, [0, 1, 2, 3], "one round: {round:?}");
    }
    assert!(leads.windows(2).all(|w| w[0] != w[1]), "no immediate repeat across rounds");
}

#[test]
fn random_spreads_the_head_evenly() {
    let count = heads(Strategy::Random, &targets(4), 8_000);
    assert!(count.iter().all(|&c| (1_800..=2_200).contains(&c)), "{count:?}");
}

#[test]
fn p2c_prefers_the_healthier_of_two_and_never_an_open_breaker() {
    let mut t = targets(2);
    t[0].stats = TargetStats { requests: 10, successes: 2, latency_ms_total: 20_000 };
    t[1].stats = TargetStats { requests: 10, successes: 10, latency_ms_total: 1_000 };
    assert_eq!(heads(Strategy::P2c, &t, 200), [0, 200], "with two targets both are always drawn");
    t[1].health = Health::Open;
    assert_eq!(heads(Strategy::P2c, &t, 200), [200, 0]);
    // Among many, the clearly best leads far more often than its 1 / n share.
    let mut many = targets(5);
    many[3].stats = TargetStats { requests: 10, successes: 10, latency_ms_total: 100 };
    for (i, c) in many.iter_mut().enumerate().filter(|(i, _)| *i != 3) {
        c.stats = TargetStats { requests: 10, successes: i as u64, latency_ms_total: 50_000 };
    }
    let count = heads(Strategy::P2c, &many, 5_000);
    assert!(count[3] > 1_500, "{count:?}");
}

#[test]
fn least_used_leads_with_the_fewest_requests() {
    let mut t = targets(3);
    for (c, n) in t.iter_mut().zip([5, 1, 3]) {
        c.stats.requests = n;
    }
    let o = order(Strategy::LeastUsed, &t, &mut ComboState::default(), &mut StdRng::seed_from_u64(1));
    assert_eq!(o, [1, 2, 0]);
}

#[test]
fn lkgp_leads_with_what_served_last() {
    let t = targets(4);
    let mut state = ComboState::default();
    let mut rng = StdRng::seed_from_u64(1);
    assert_eq!(order(Strategy::Lkgp, &t, &mut state, &mut rng), [0, 1, 2, 3], "nothing served yet");
    state.last_good = Some(LastGood { provider: "p2".into(), key: "2:p2/m".into() });
    assert_eq!(order(Strategy::Lkgp, &t, &mut state, &mut rng), [2, 0, 1, 3]);
    state.last_good = Some(LastGood { provider: "p1".into(), key: "gone".into() });
    assert_eq!(order(Strategy::Lkgp, &t, &mut state, &mut rng), [1, 0, 2, 3], "else the provider's first target");
}

fn with_facts(facts: &[Option<(u32, f64)>]) -> Vec<Candidate> {
    let mut t = targets(facts.len());
    for (c, f) in t.iter_mut().zip(facts) {
        c.facts = f.map(|(context_window, input_price)| ModelFacts { context_window, input_price, output_price: 0.0 });
    }
    t
}

#[test]
fn cost_optimized_leads_with_the_cheapest_and_puts_unknown_prices_last() {
    let t = with_facts(&[Some((128_000, 2.5)), None, Some((1_000_000, 0.1)), Some((200_000, 2.5)), Some((8_000, 0.3))]);
    let o = order(Strategy::CostOptimized, &t, &mut ComboState::default(), &mut StdRng::seed_from_u64(1));
    assert_eq!(o, [2, 4, 0, 3, 1], "equal prices keep the listed order");
}

#[test]
fn context_optimized_leads_with_the_largest_window_and_puts_unknown_windows_last() {
    let t = with_facts(&[Some((128_000, 2.5)), None, Some((1_000_000, 0.1)), Some((128_000, 0.3))]);
    let o = order(Strategy::ContextOptimized, &t, &mut ComboState::default(), &mut StdRng::seed_from_u64(1));
    assert_eq!(o, [2, 0, 3, 1]);
}

#[test]
fn auto_leads_with_the_clearly_best_target_and_explores_the_others_a_little() {
    let mut t = with_facts(&[Some((128_000, 10.0)), Some((128_000, 0.5)), Some((128_000, 10.0))]);
    for (c, ms) in t.iter_mut().zip([4_000, 300, 4_000]) {
        c.stats = TargetStats { requests: 10, successes: 10, latency_ms_total: ms * 10 };
    }
    t[2].health = Health::HalfOpen;
    let score = auto::scores(&t);
    assert!(score[1] > score[0] && score[0] > score[2], "cheaper and faster, then healthier: {score:?}");
    let count = heads(Strategy::Auto, &t, 10_000);
    assert!(count[1] > 9_400, "the best leads but for exploration (5 %): {count:?}");
    assert!(count[0] > 100 && count[2] > 100, "the others are still explored: {count:?}");
    let o = order(Strategy::Auto, &t, &mut ComboState::default(), &mut StdRng::seed_from_u64(1));
    assert_eq!(o[1..], [0, 2], "the rest follow by score");
}

#[test]
fn auto_never_leads_with_an_open_breaker_and_shares_the_lead_among_near_equals() {
    let mut t = targets(3);
    t[0].health = Health::Open;
    assert_eq!(heads(Strategy::Auto, &t, 2_000)[0], 0, "an open breaker never leads while another can");
    let equal = targets(4);
    let count = heads(Strategy::Auto, &equal, 8_000);
    assert!(count.iter().all(|&c| (1_600..=2_400).contains(&c)), "equal targets take turns: {count:?}");
    let mut quota = targets(2);
    quota[0].quota = Some(Quota { windows: vec![(0.95, None)], ..Quota::default() });
    assert!(auto::scores(&quota)[1] > auto::scores(&quota)[0], "quota left counts");
}
