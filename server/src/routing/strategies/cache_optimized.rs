//! `cache-optimized`: one target per account (the plan expands each target
//! over its provider's connections), ordered by rendezvous (highest random
//! weight) hashing of the request's session with each account: a
//! conversation always leads with the same account, so the upstream's
//! prompt cache for its prefix stays warm — without a pin table, and it
//! comes back to that account once an exclusion ends. When accounts come
//! and go, only the sessions of the account that left move. The session
//! is the one session affinity names (its header, body id or first user
//! message, [`crate::routing::affinity`]); a request without one keeps the
//! listed order. The reference also weighs OAuth session occupancy; the
//! gateway has no such count, so every account weighs the same.

use super::Candidate;

pub fn order(targets: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    if targets.iter().any(|t| t.rendezvous.is_some()) {
        let weight = |i: usize| targets[i].rendezvous.unwrap_or(0.0);
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
