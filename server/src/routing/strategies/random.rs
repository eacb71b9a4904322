//! `random`: a fresh uniform shuffle (Fisher–Yates) for every request. Use
//! it to spread load without any state; over many requests every target
//! leads equally often, but nothing stops one leading twice in a row
//! (`strict-random` does).

use rand::{Rng, seq::SliceRandom};

pub fn order(n: usize, rng: &mut impl Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    order
}
