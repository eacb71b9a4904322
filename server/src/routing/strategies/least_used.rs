//! `least-used`: the target with the fewest requests through this combo so
//! far leads (ties as listed). Use it to even out usage over accounts or
//! providers that started at different times; every attempt counts, a
//! failed one too, since it spent the target's rate as well.

use super::Candidate;

pub fn order(targets: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by_key(|&i| targets[i].stats.requests);
    order
}
