//! The plan: the ordered targets one request may be served by. A single
//! model is a plan of one target; a combo lists its targets in the order
//! its strategy gives (`routing::strategies`). A target that names no
//! known provider stays in the plan, to be reported as skipped.

use app::types::combo::{Combo, ComboTarget, Strategy};
use std::sync::Arc;

use crate::{
    resilience::{breaker::BreakerState, engine},
    routing::{
        registry::Snapshot,
        resolve::{self, Target},
        strategies::{self, Candidate, Health},
    },
    state::AppState,
};

/// One target of the plan.
pub struct Planned {
    /// The target as the combo lists it (`provider/model`).
    pub spec: String,
    /// Its identity within the combo (position, model, pinned connection):
    /// what the strategies' memory is keyed by.
    pub key: String,
    /// Its position in the combo's list.
    pub index: usize,
    /// `None` when it names no known provider.
    pub target: Option<Target>,
    /// A combo target pinned to one connection.
    pub pinned: Option<String>,
}

pub struct Plan {
    /// The combo being served, if any.
    pub combo: Option<Arc<Combo>>,
    pub targets: Vec<Planned>,
}

impl Plan {
    pub fn single(target: Target) -> Self {
        let spec = format!("{}/{}", target.provider.id, target.model);
        let planned = Planned { key: spec.clone(), spec, index: 0, target: Some(target), pinned: None };
        Self { combo: None, targets: vec![planned] }
    }

    /// The combo's targets in its strategy's order.
    pub fn combo(combo: Arc<Combo>, snapshot: &Snapshot, state: &AppState) -> Self {
        let mut targets: Vec<Planned> =
            combo.targets.iter().enumerate().map(|(i, t)| planned(i, t, snapshot)).collect();
        if combo.strategy != Strategy::Priority {
            let order = strategy_order(&combo, &targets, snapshot, state);
            let mut slots: Vec<Option<Planned>> = targets.into_iter().map(Some).collect();
            targets = order.into_iter().filter_map(|i| slots[i].take()).collect();
        }
        Self { combo: Some(combo), targets }
    }
}

fn planned(index: usize, t: &ComboTarget, snapshot: &Snapshot) -> Planned {
    let key = match &t.connection_id {
        Some(c) => format!("{index}:{}@{c}", t.model),
        None => format!("{index}:{}", t.model),
    };
    Planned {
        spec: t.model.clone(),
        key,
        index,
        target: resolve::resolve(&t.model, snapshot).ok(),
        pinned: t.connection_id.clone(),
    }
}

/// What the strategy sees of each target, and the order it gives.
fn strategy_order(combo: &Combo, targets: &[Planned], snapshot: &Snapshot, state: &AppState) -> Vec<usize> {
    let settings = state.resilience.current();
    let memory = state.combo_states.of(&combo.name);
    let mut memory = memory.lock();
    let eligibility = strategies::needs_eligibility(combo.strategy);
    let candidates: Vec<Candidate> = targets
        .iter()
        .zip(&combo.targets)
        .map(|(p, t)| {
            let health = p.target.as_ref().map_or(Health::Open, |target| {
                let cfg = engine::breaker_config(&settings, target.provider.category);
                match state.engine.breaker_state(target.provider.id, &cfg) {
                    BreakerState::Closed => Health::Closed,
                    BreakerState::HalfOpen | BreakerState::Degraded => Health::HalfOpen,
                    BreakerState::Open => Health::Open,
                }
            });
            Candidate {
                key: p.key.clone(),
                provider: p.spec.split_once('/').map_or("", |(provider, _)| provider).to_owned(),
                weight: t.weight.unwrap_or(0),
                health,
                eligible: eligibility && health != Health::Open && usable(state, snapshot, p),
                stats: memory.targets.get(&p.key).copied().unwrap_or_default(),
            }
        })
        .collect();
    strategies::order(combo.strategy, &candidates, &mut memory, &mut rand::thread_rng())
}

/// Whether some connection of the target could serve it now.
fn usable(state: &AppState, snapshot: &Snapshot, p: &Planned) -> bool {
    let Some(target) = &p.target else { return false };
    snapshot
        .candidates(target.provider.id)
        .iter()
        .filter(|c| p.pinned.as_deref().is_none_or(|pin| pin == c.id))
        .any(|c| state.engine.exclusion(target.provider.id, &c.id, &target.model).is_none())
}
