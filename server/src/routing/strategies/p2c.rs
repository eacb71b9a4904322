//! `p2c` (power of two choices): two distinct targets drawn at random; the
//! one with the better score leads (the first drawn on a tie), the rest
//! follow as listed. Score = success rate + 1 / log10(mean latency ms +
//! 10) − 0.25 while its breaker is half-open (or degraded: failures near
//! its threshold); an open breaker scores −∞.
//! A target without requests yet counts a 0.5 success rate and 0.25 for
//! latency. Use it to let load follow health without the herd that
//! "always the best" causes: a slower or failing target is chosen less,
//! never starved of the requests that would show it recovered.

use rand::Rng;

use super::{Candidate, Health};

pub fn order(targets: &[Candidate], rng: &mut impl Rng) -> Vec<usize> {
    let n = targets.len();
    if n <= 1 {
        return (0..n).collect();
    }
    let i = rng.gen_range(0..n);
    let mut j = rng.gen_range(0..n - 1);
    if j >= i {
        j += 1;
    }
    let winner = if score(&targets[j]) > score(&targets[i]) { j } else { i };
    std::iter::once(winner).chain((0..n).filter(|&k| k != winner)).collect()
}

/// How good a target looks now.
pub fn score(t: &Candidate) -> f64 {
    let s = &t.stats;
    let success = if s.requests == 0 { 0.5 } else { s.successes as f64 / s.requests as f64 };
    let latency = match s.mean_latency_ms() {
        Some(ms) if ms > 0.0 => 1.0 / (ms + 10.0).log10(),
        _ => 0.25,
    };
    match t.health {
        Health::Open => f64::NEG_INFINITY,
        Health::HalfOpen => success + latency - 0.25,
        Health::Closed => success + latency,
    }
}
