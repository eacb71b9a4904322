//! `reset-aware`: one target per account (the plan expands each target
//! over its provider's connections), ranked by a score that weighs the
//! quota left against how soon it renews — the reference's formula:
//! per window `a × left + b × urgency × (1 − left)`, urgency `1 − time to
//! reset / window length`, session (5 h; a = 0.45, b = 0.55) weighted 0.35
//! and weekly (7 d; a = 0.25, b = 0.75) weighted 0.65, cut down sharply
//! below 10 % left in the session; an unknown account scores 0.5, a
//! used-up one −∞. Scores within 0.05 of the best take turns leading.
//!
//! On a subscription the session and weekly windows are the plan's
//! ([`crate::routing::quota`]): it drains the account about to renew and
//! saves the one that must last. An API-key account reports only short
//! windows (per minute or day) through its rate-limit headers; those all
//! renew soon, so a reset says nothing of which account to save: its score
//! is the share left of its binding window (the same guard below 10 %),
//! and the account with the most left leads.

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
    if !q.has_plan() {
        return guarded(left, left);
    }
    // Each plan window; a missing one reads the binding window, urgency unknown.
    let window = |plan: Option<(f64, Option<u64>)>, length_ms: f64| {
        plan.map_or((left, 0.5), |(used, reset_in_ms)| (1.0 - used, urgency(reset_in_ms, length_ms)))
    };
    let (session_left, session_urgency) = window(q.session, SESSION_MS);
    let (weekly_left, weekly_urgency) = window(q.weekly, WEEK_MS);
    let part = |a: f64, b: f64, left: f64, urgency: f64| a * left + b * urgency * (1.0 - left);
    let score = SESSION_WEIGHT * part(0.45, 0.55, session_left, session_urgency)
        + WEEKLY_WEIGHT * part(0.25, 0.75, weekly_left, weekly_urgency);
    guarded(score, session_left)
}

/// `score` cut in proportion once less than 10 % is `left`.
fn guarded(score: f64, left: f64) -> f64 {
    if left < EXHAUSTION_GUARD { score * (left / EXHAUSTION_GUARD).max(0.05) } else { score }
}

/// How near a reset is, 0–1: 0.5 when unknown.
fn urgency(reset_in_ms: Option<u64>, window_ms: f64) -> f64 {
    reset_in_ms.map_or(0.5, |ms| (1.0 - ms as f64 / window_ms).clamp(0.0, 1.0))
}
