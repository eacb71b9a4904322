//! `lkgp` (last known good provider): the target that served this combo
//! last leads — the same provider and account when the combo lists it,
//! else the first target of that provider — and the others follow as
//! listed. Use it to stay on what works: after a failover the combo keeps
//! using the provider that answered instead of returning to a failing head
//! on every request. Kept in memory: after a restart it starts as listed.

use super::Candidate;
use crate::routing::combo_state::LastGood;

pub fn order(targets: &[Candidate], last: Option<&LastGood>) -> Vec<usize> {
    let n = targets.len();
    let found = last.and_then(|g| {
        let exact = targets.iter().position(|t| t.key == g.key);
        exact.or_else(|| targets.iter().position(|t| t.provider == g.provider))
    });
    match found {
        Some(head) => std::iter::once(head).chain((0..n).filter(|&k| k != head)).collect(),
        None => (0..n).collect(),
    }
}
