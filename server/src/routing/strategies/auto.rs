//! `auto`: every target gets a weighted score and the list is ranked by
//! it; the head is picked the way the reference's auto engine picks — now
//! and then (5 %) a random target, to keep measuring the others; else
//! round-robin among the best when one group clearly leads, or a draw
//! between the best, middle and rest tiers (45 / 35 / 20 %) when the scores
//! are close, so near-equal targets share the load instead of the top one
//! taking all of it. Use it when the targets differ in price, speed and
//! health and you would rather not pick an order yourself.
//!
//! The score is the reference's weighted sum with its default weights
//! (renormalised to 1) over the factors the gateway measures: breaker
//! health (closed 1, half-open or degraded 0.5, open 0), quota left of a
//! one-account target (unknown = all left), price (0.6 × input + 0.4 ×
//! output list price, unknown = 1 $/M, as the reference), latency (this
//! combo's mean for the target, 1500 ms before it has served) and its
//! stability (estimated as a tenth of the latency, at least 10 ms, as the
//! reference does without a history). Factors the gateway has no source
//! for — task fit, tier, manifest hints, context and session affinity,
//! connection density — take the reference's neutral values, so they shift
//! every score alike and never the order. In an incident (more than half
//! the breakers open) it does not explore.

use rand::Rng;

use super::{Candidate, Health};

/// Latency of a target that has not served yet (the reference's default).
const DEFAULT_LATENCY_MS: f64 = 1_500.0;
/// Price of a model without a list price, per million tokens.
const DEFAULT_PRICE: f64 = 1.0;
/// How often the head is drawn at random instead.
const EXPLORATION_RATE: f64 = 0.05;
/// Scores this close to the best are "the best".
const TOP_EPSILON: f64 = 1e-4;
/// A spread this wide between best and worst: keep to the best.
const CLEAR_LEAD: f64 = 0.1;
/// The middle tier: within this share of the score range below the best.
const MID_BAND: f64 = 0.3;
/// How often each tier (top, middle, rest) leads when scores are close.
const TIER_WEIGHTS: [f64; 3] = [0.45, 0.35, 0.2];

/// The reference's default weights: quota, health, cost, latency, task
/// fit, stability, tier priority, tier affinity, specificity, context
/// affinity, session availability, connection density (cache affinity and
/// reset-window affinity weigh 0).
const WEIGHTS: [f64; 12] = [0.15, 0.20, 0.15, 0.12, 0.08, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05];

/// The tier priority of a "standard" account resetting daily, as the
/// reference computes it without tier data.
const NEUTRAL_TIER_PRIORITY: f64 = 0.8 * 0.33 + 0.2 * (1.0 - 86_400.0 / 2_592_000.0);

/// Each target's score, 0–1.
pub fn scores(targets: &[Candidate]) -> Vec<f64> {
    let cost: Vec<f64> =
        targets.iter().map(|t| t.facts.map_or(DEFAULT_PRICE, |f| 0.6 * f.input_price + 0.4 * f.output_price)).collect();
    let latency: Vec<f64> =
        targets.iter().map(|t| t.stats.mean_latency_ms().unwrap_or(DEFAULT_LATENCY_MS).max(0.0)).collect();
    let spread: Vec<f64> = latency.iter().map(|l| (0.1 * l).max(10.0)).collect();
    let max = |v: &[f64], floor: f64| v.iter().copied().fold(floor, f64::max);
    let (max_cost, max_latency, max_spread) = (max(&cost, 0.001), max(&latency, 1.0), max(&spread, 0.001));
    let total: f64 = WEIGHTS.iter().sum();
    targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let health = match t.health {
                Health::Closed => 1.0,
                Health::HalfOpen => 0.5,
                Health::Open => 0.0,
            };
            let factors = [
                t.quota.as_ref().map_or(1.0, |q| 1.0 - q.used().clamp(0.0, 1.0)),
                health,
                1.0 - cost[i] / max_cost,
                1.0 - latency[i] / max_latency,
                0.5,
                1.0 - spread[i] / max_spread,
                NEUTRAL_TIER_PRIORITY,
                0.5,
                0.5,
                0.5,
                1.0,
                0.0,
            ];
            let sum: f64 = factors.iter().zip(WEIGHTS).map(|(f, w)| f * w).sum();
            (sum / total).clamp(0.0, 1.0)
        })
        .collect()
}

pub fn order(targets: &[Candidate], turn: &mut usize, rng: &mut impl Rng) -> Vec<usize> {
    let score = scores(targets);
    let mut ranked: Vec<usize> = (0..targets.len()).collect();
    ranked.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
    let Some(head) = pick(targets, &score, &ranked, turn, rng) else { return ranked };
    std::iter::once(head).chain(ranked.into_iter().filter(|&i| i != head)).collect()
}

/// The target to lead with, among those whose breaker is not open (all of
/// them when every one is).
fn pick(targets: &[Candidate], score: &[f64], ranked: &[usize], turn: &mut usize, rng: &mut impl Rng) -> Option<usize> {
    let open = targets.iter().filter(|t| t.health == Health::Open).count();
    let pool: Vec<usize> =
        match ranked.iter().copied().filter(|&i| targets[i].health != Health::Open).collect::<Vec<_>>() {
            p if p.is_empty() => ranked.to_vec(),
            p => p,
        };
    if pool.len() <= 1 {
        return pool.first().copied();
    }
    let incident = open * 2 > targets.len();
    if !incident && rng.gen_bool(EXPLORATION_RATE) {
        return Some(pool[rng.gen_range(0..pool.len())]);
    }
    let (best, worst) = (score[pool[0]], score[pool[pool.len() - 1]]);
    let top: Vec<usize> = pool.iter().copied().filter(|&i| best - score[i] <= TOP_EPSILON).collect();
    let tier = if best - worst >= CLEAR_LEAD {
        top
    } else {
        let floor = best - MID_BAND * (best - worst);
        let mut mid: Vec<usize> = pool.iter().copied().filter(|&i| !top.contains(&i) && score[i] >= floor).collect();
        let mut rest: Vec<usize> = pool.iter().copied().filter(|&i| !top.contains(&i) && !mid.contains(&i)).collect();
        if mid.is_empty() {
            mid = rest.drain(..rest.len().div_ceil(2)).collect();
        }
        let tiers = [top, mid, rest];
        let weight = |k: usize| if tiers[k].is_empty() { 0.0 } else { TIER_WEIGHTS[k] };
        let total: f64 = (0..3).map(weight).sum();
        let mut draw = rng.gen_range(0.0..total);
        let k = (0..3).find(|&k| {
            draw -= weight(k);
            draw < 0.0 && weight(k) > 0.0
        });
        let [top, mid, rest] = tiers;
        match k {
            Some(1) => mid,
            Some(2) => rest,
            _ => top,
        }
    };
    let head = tier[*turn % tier.len()];
    *turn = turn.wrapping_add(1);
    Some(head)
}
