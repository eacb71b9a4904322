//! `context-optimized`: the model with the largest context window leads
//! ([`crate::upstream::model_facts`]); a model without a known window goes
//! last; ties keep the listed order. Use it for long conversations and big
//! repositories, where the roomiest model should take the request first.
//! Like the original it does not weigh the request's own size: a request
//! too long for a model is refused by that upstream and fails over.

use std::cmp::Reverse;

use super::Candidate;

pub fn order(targets: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by_key(|&i| Reverse(targets[i].facts.map_or(0, |f| f.context_window)));
    order
}
