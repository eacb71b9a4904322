//! `headroom`: one target per account (the plan expands each target over
//! its provider's connections); the account furthest from its limit leads
//! — headroom = 1 − the share used of its most used window — ties as
//! listed. An account the gateway has no report of counts as untouched
//! (headroom 1) and so leads: fail-open, as in the reference. Use it to
//! keep every account well clear of its rate limit instead of running one
//! into it. The shares come from the upstream's rate-limit headers
//! ([`crate::routing::quota`]).

use super::Candidate;

pub fn order(targets: &[Candidate]) -> Vec<usize> {
    let headroom: Vec<f64> = targets.iter().map(|t| t.quota.as_ref().map_or(1.0, |q| 1.0 - q.used())).collect();
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by(|&a, &b| headroom[b].total_cmp(&headroom[a]));
    order
}
