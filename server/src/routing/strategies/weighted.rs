//! `weighted`: one eligible target drawn with probability weight / Σ
//! weights leads (an even draw when every weight is 0), then the other
//! eligible targets by weight, heaviest first (ties as listed), then the
//! ineligible ones (which the dispatch loop will skip). Use it to split
//! traffic in proportion — 90/10 between a cheap and a premium provider,
//! or to move traffic over gradually.

use rand::Rng;

use super::Candidate;

pub fn order(targets: &[Candidate], rng: &mut impl Rng) -> Vec<usize> {
    let eligible: Vec<usize> = (0..targets.len()).filter(|&i| targets[i].eligible).collect();
    let mut rest: Vec<usize> = (0..targets.len()).filter(|&i| !targets[i].eligible).collect();
    let Some(head) = draw(targets, &eligible, rng) else {
        return rest;
    };
    let mut others: Vec<usize> = eligible.into_iter().filter(|&i| i != head).collect();
    // Stable: equal weights keep the declared order.
    others.sort_by_key(|&i| std::cmp::Reverse(targets[i].weight));
    let mut order = vec![head];
    order.append(&mut others);
    order.append(&mut rest);
    order
}

/// The index drawn from `among` by weight.
fn draw(targets: &[Candidate], among: &[usize], rng: &mut impl Rng) -> Option<usize> {
    let total: u64 = among.iter().map(|&i| u64::from(targets[i].weight)).sum();
    if total == 0 {
        return (!among.is_empty()).then(|| among[rng.gen_range(0..among.len())]);
    }
    let mut r = rng.gen_range(0..total);
    for &i in among {
        let w = u64::from(targets[i].weight);
        if r < w {
            return Some(i);
        }
        r -= w;
    }
    among.last().copied()
}
