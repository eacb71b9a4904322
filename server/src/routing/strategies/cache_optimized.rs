//! `cache-optimized`: one target per account (the plan expands each target
//! over its provider's connections), ordered by rendezvous (highest random
//! weight) hashing of the request's session with each account: a
//! conversation always leads with the same account, so the upstream's
//! prompt cache for its prefix stays warm — without a pin table, and it
//! comes back to that account once an exclusion ends. When accounts come
//! and go, only the sessions of the account that left move. The session
//! is the one session affinity names (its header, body id or first user
//! message, [`crate::routing::affinity`]); a request without one keeps the
//! listed order. As in the reference, a quarter of the weight is the
//! account's availability, 1 / (1 + other client sessions in flight on
//! it) — 1 for an API key — so a busy subscription yields to a free one.

use super::Candidate;

/// The rendezvous weight's share of the score; availability has the rest.
const RENDEZVOUS_SHARE: f64 = 0.75;

pub fn order(targets: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    if targets.iter().any(|t| t.rendezvous.is_some()) {
        let weight = |i: usize| {
            let availability = 1.0 / (1.0 + targets[i].foreign_sessions as f64);
            RENDEZVOUS_SHARE * targets[i].rendezvous.unwrap_or(0.0) + (1.0 - RENDEZVOUS_SHARE) * availability
        };
        order.sort_by(|&a, &b| weight(b).total_cmp(&weight(a)));
    }
    order
}

/// The rendezvous weight of `identity` for `session`, 0–1.
pub fn weight(session: &[u8], identity: &str) -> f64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    session.hash(&mut h);
    identity.hash(&mut h);
    h.finish() as f64 / u64::MAX as f64
}
