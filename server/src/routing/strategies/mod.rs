//! Combo strategies (SPEC §R8): each a pure function from a combo's
//! targets — with what the gateway knows about them now — to the order
//! their attempts are made in. A strategy only orders: the dispatch loop
//! still skips what its gates exclude, so an ineligible target a strategy
//! leaves in the list costs a lookup, never an upstream call.
//!
//! The state some strategies keep between requests (a rotation counter,
//! a deck, the last good provider, per-target counts) lives in
//! [`super::combo_state`]; a strategy reads it and returns the order, and
//! the dispatch loop reports back what served.

mod auto;
pub mod cache_optimized;
mod context_optimized;
mod context_relay;
mod cost_optimized;
mod fill_first;
mod headroom;
mod least_used;
mod lkgp;
mod p2c;
mod priority;
mod quota_weighted;
mod random;
mod reset_aware;
mod reset_window;
pub mod round_robin;
pub mod strict_random;
mod weighted;

#[cfg(test)]
mod quota_tests;
#[cfg(test)]
mod tests;

use app::types::combo::Strategy;
use rand::Rng;

use super::{
    combo_state::{ComboState, TargetStats},
    quota::Quota,
};
use crate::upstream::model_facts::ModelFacts;

/// A provider breaker as a strategy sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Health {
    #[default]
    Closed,
    HalfOpen,
    Open,
}

/// One combo target, as the strategies see it.
#[derive(Clone, Debug, Default)]
pub struct Candidate {
    /// Stable identity of the target within its combo:
    /// `provider/model`, plus `@connection` when pinned.
    pub key: String,
    pub provider: String,
    /// `weighted` share, 0–100.
    pub weight: u32,
    /// Its provider breaker (`Closed` when unknown; `HalfOpen` also stands
    /// for degraded).
    pub health: Health,
    /// Whether it could be tried now: breaker not open and some
    /// connection usable. Computed only for strategies that read it.
    pub eligible: bool,
    /// Its requests through this combo so far.
    pub stats: TargetStats,
    /// Its model's context window and price, if known.
    pub facts: Option<ModelFacts>,
    /// Its account's quota, for a target of one account; `None`: unknown.
    pub quota: Option<Quota>,
    /// Attempts in flight on its account, for a target of one account.
    pub in_flight: u32,
    /// Its rendezvous weight for the request's session (0–1), when the
    /// request has one: the same session and target always weigh the same.
    pub rendezvous: Option<f64>,
    /// Other client sessions in flight on its account, when the request
    /// has a session and the target is one subscription account.
    pub foreign_sessions: usize,
}

/// Whether `strategy` reads [`Candidate::eligible`] (it costs a lookup per
/// target and connection).
pub fn needs_eligibility(strategy: Strategy) -> bool {
    matches!(strategy, Strategy::Weighted | Strategy::QuotaWeighted)
}

/// Whether `strategy` ranks accounts: the plan then makes one target per
/// connection of each target that is not pinned to one (the reference's
/// per-account expansion).
pub fn per_account(strategy: Strategy) -> bool {
    matches!(
        strategy,
        Strategy::ResetWindow
            | Strategy::ResetAware
            | Strategy::Headroom
            | Strategy::QuotaWeighted
            | Strategy::CacheOptimized
    )
}

/// Lets the leading entries of `order` for which `tied` holds take turns:
/// they are rotated left by one more place on each call.
fn rotate_leading_ties(order: &mut [usize], tied: impl Fn(usize) -> bool, turn: &mut usize) {
    let band = order.iter().take_while(|&&i| tied(i)).count();
    if band > 1 {
        order[..band].rotate_left(*turn % band);
        *turn = turn.wrapping_add(1);
    }
}

/// The attempt order of `targets`: a permutation of their indexes.
pub fn order(strategy: Strategy, targets: &[Candidate], state: &mut ComboState, rng: &mut impl Rng) -> Vec<usize> {
    let n = targets.len();
    match strategy {
        // fusion and pipeline run every target by their own plans
        // (`proxy::multi`); their plan, when one is made, is as listed.
        Strategy::Priority | Strategy::Fusion | Strategy::Pipeline => priority::order(n),
        Strategy::FillFirst => fill_first::order(n),
        Strategy::Weighted => weighted::order(targets, rng),
        Strategy::RoundRobin => round_robin::order(n, &mut state.rotation),
        Strategy::P2c => p2c::order(targets, rng),
        Strategy::Random => random::order(n, rng),
        Strategy::StrictRandom => strict_random::order(targets, &mut state.deck, rng),
        Strategy::LeastUsed => least_used::order(targets),
        Strategy::Lkgp => lkgp::order(targets, state.last_good.as_ref()),
        Strategy::CostOptimized => cost_optimized::order(targets),
        Strategy::ContextOptimized => context_optimized::order(targets),
        Strategy::ResetWindow => reset_window::order(targets, &mut state.tie_turn),
        Strategy::ResetAware => reset_aware::order(targets, &mut state.tie_turn),
        Strategy::Headroom => headroom::order(targets),
        Strategy::QuotaWeighted => quota_weighted::order(targets, rng),
        Strategy::CacheOptimized => cache_optimized::order(targets),
        Strategy::Auto => auto::order(targets, &mut state.auto_turn, rng),
        Strategy::ContextRelay => context_relay::order(n),
    }
}
