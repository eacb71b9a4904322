//! `cost-optimized`: the cheapest model leads, by its list price per
//! million input tokens ([`crate::upstream::model_facts`]); a model without
//! a known price goes last; ties keep the listed order. Use it when the
//! targets are interchangeable for the work and the bill matters: the
//! dearer ones serve only when the cheaper fail or are excluded. Resellers
//! listing a maker's model id rank at the maker's price.

use super::Candidate;

pub fn order(targets: &[Candidate]) -> Vec<usize> {
    let price = |i: usize| targets[i].facts.map_or(f64::INFINITY, |f| f.input_price);
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by(|&a, &b| price(a).total_cmp(&price(b)));
    order
}
