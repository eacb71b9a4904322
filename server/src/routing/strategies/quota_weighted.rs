//! `quota-weighted`: one target per account (the plan expands each target
//! over its provider's connections); the lead is drawn at random in
//! proportion to the account's [`reset_aware::score`] divided by
//! 1 + its attempts in flight, so traffic follows the quota left and backs
//! off an account already busy. Drawn first from the accounts with more
//! than 1 % left and a report under 10 minutes old (an unknown account
//! counts as full and fresh); only when there is none, from the other
//! accounts with some left. The rest follow by score. Accounts with none
//! left, and those the gates would skip now (open breaker, cooling
//! account), go last — the reference drops them; a strategy here only
//! orders, and the dispatch loop skips what its gates exclude. The shares come from the upstream's rate-limit headers
//! ([`crate::routing::quota`]).

use rand::Rng;

use super::{Candidate, reset_aware};

const FLOOR: f64 = 0.01;
const STALE_MS: u64 = 10 * 60_000;

pub fn order(targets: &[Candidate], rng: &mut impl Rng) -> Vec<usize> {
    let scores: Vec<f64> = targets.iter().map(|t| reset_aware::score(t.quota.as_ref())).collect();
    let left = |t: &Candidate| t.quota.as_ref().map_or(1.0, |q| if q.limit_reached() { 0.0 } else { 1.0 - q.used() });
    let usable = |i: usize| targets[i].eligible && left(&targets[i]) > 0.0;
    let roomy = |i: usize| {
        let t = &targets[i];
        left(t) > FLOOR && t.quota.as_ref().is_none_or(|q| q.age_ms <= STALE_MS)
    };
    let by_score = |mut v: Vec<usize>| {
        v.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        v
    };
    let n = targets.len();
    let (a, b): (Vec<usize>, Vec<usize>) = (0..n).filter(|&i| usable(i)).partition(|&i| roomy(i));
    let rest: Vec<usize> = (0..n).filter(|&i| !usable(i)).collect();
    let (mut pool, tail) = if a.is_empty() { (b, Vec::new()) } else { (a, b) };
    let mut order = Vec::with_capacity(n);
    if !pool.is_empty() {
        let weights: Vec<f64> =
            pool.iter().map(|&i| scores[i].max(0.0) / (1.0 + f64::from(targets[i].in_flight))).collect();
        let winner = draw(&weights, rng);
        order.push(pool.remove(winner));
    }
    order.extend(by_score(pool));
    order.extend(by_score(tail));
    order.extend(rest);
    order
}

/// An index drawn in proportion to `weights` (uniform when they sum to 0).
fn draw(weights: &[f64], rng: &mut impl Rng) -> usize {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return rng.gen_range(0..weights.len());
    }
    let r = rng.gen_range(0.0..total);
    let mut sum = 0.0;
    for (i, w) in weights.iter().enumerate() {
        sum += w;
        if *w > 0.0 && r < sum {
            return i;
        }
    }
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
}
