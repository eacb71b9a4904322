//! `fill-first`: the declared order, like `priority`. Use it to use up one
//! account (or plan) before the next: the head takes every request until
//! it fails or is excluded (a cooldown, a lockout, its breaker), and only
//! then does traffic move on. The original differs from `priority` only in
//! features this gateway does not have (protected steps, pre-screening).

/// The declared order.
pub fn order(n: usize) -> Vec<usize> {
    super::priority::order(n)
}
