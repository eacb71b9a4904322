//! `reset-aware`: one target per account (the plan expands each target
//! over its provider's connections), ranked by a score that weighs the
//! quota left against how soon it renews — the reference's formula:
//! per window `a × left + b × urgency × (1 − left)`, urgency `1 − time to
//! reset / window length`, session (5 h; a = 0.45, b = 0.55) weighted 0.35
//! and weekly (7 d; a = 0.25, b = 0.75) weighted 0.65, cut down sharply
//! below 10 % left; an unknown account scores 0.5, a used-up one −∞.
//! Scores within 0.05 of the best take turns leading. Use it on accounts
//! with renewing quotas: it drains the one about to reset and saves the
//! one that must last. The windows come from the upstream's rate-limit
//! headers ([`crate::routing::quota`]), which name no session or weekly
//! window: both read the binding (most used) window's share, and its
//! reset stands for the weekly one, as the reference falls back to.

use super::{Candidate, rotate_leading_ties};
use crate::routing::quota::Quota;

const SESSION_MS: f64 = 5.0 * 3_600_000.0;
const WEEK_MS: f64 = 7.0 * 86_400_000.0;
const SESSION_WEIGHT: f64 = 0.35;
const WEEKLY_WEIGHT: f64 = 0.65;
const TIE_BAND: f64 = 0.05;
const EXHAUSTION_GUARD: f64 = 0.10;

pub fn order(targets: &[Candidate], turn: &mut usize) -> Vec<usize> {
    let scores: Vec<f64> = targets.iter().map(|t| score(t.quota.as_ref())).collect();
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    if let Some(&best) = order.first().map(|&i| &scores[i]).filter(|b| b.is_finite()) {
        rotate_leading_ties(&mut order, |i| best - scores[i] <= TIE_BAND, turn);
    }
    order
}

/// How much the account is worth using now.
pub fn score(quota: Option<&Quota>) -> f64 {
    let Some(q) = quota else { return 0.5 };
    if q.limit_reached() {
        return f64::NEG_INFINITY;
    }
    let left = 1.0 - q.used();
    let window = |a: f64, b: f64, urgency: f64| a * left + b * urgency * (1.0 - left);
    let session = window(0.45, 0.55, urgency(None, SESSION_MS));
    let weekly = window(0.25, 0.75, urgency(q.binding_reset_in_ms(), WEEK_MS));
    let score = SESSION_WEIGHT * session + WEEKLY_WEIGHT * weekly;
    if left < EXHAUSTION_GUARD { score * (left / EXHAUSTION_GUARD).max(0.05) } else { score }
}

/// How near a reset is, 0–1: 0.5 when unknown.
fn urgency(reset_in_ms: Option<u64>, window_ms: f64) -> f64 {
    reset_in_ms.map_or(0.5, |ms| (1.0 - ms as f64 / window_ms).clamp(0.0, 1.0))
}
