//! `reset-window`: one target per account (the plan expands each target
//! over its provider's connections); the account whose quota window resets
//! soonest leads, an account whose reset is unknown — or whose limit is
//! reached — goes last. Accounts whose resets lie within a minute of the
//! soonest take turns leading, one request each. Use it to spend quota
//! that is about to be renewed anyway before touching quota that must
//! last. The resets are those the upstream's rate-limit headers reported
//! ([`crate::routing::quota`]): today the per-minute and per-day windows of
//! API keys, since the gateway reads no subscription-plan windows.

use super::{Candidate, rotate_leading_ties};

/// Accounts whose resets are this close to the soonest take turns.
pub const TIE_BAND_MS: f64 = 60_000.0;

pub fn order(targets: &[Candidate], turn: &mut usize) -> Vec<usize> {
    let remaining: Vec<f64> = targets
        .iter()
        .map(|t| match &t.quota {
            Some(q) if !q.limit_reached() => q.soonest_reset_in_ms().map_or(f64::INFINITY, |ms| ms as f64),
            _ => f64::INFINITY,
        })
        .collect();
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by(|&a, &b| remaining[a].total_cmp(&remaining[b]));
    if let Some(&best) = order.first().map(|&i| &remaining[i]).filter(|b| b.is_finite()) {
        rotate_leading_ties(&mut order, |i| remaining[i] - best <= TIE_BAND_MS, turn);
    }
    order
}
