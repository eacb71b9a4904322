//! The plan: the ordered targets one request may be served by. A single
//! model is a plan of one target; a combo lists its targets in strategy
//! order (`priority`: as listed). A target that names no known provider
//! stays in the plan, to be reported as skipped.

use app::types::combo::Combo;
use std::sync::Arc;

use crate::routing::{
    registry::Snapshot,
    resolve::{self, Target},
};

/// One target of the plan.
pub struct Planned {
    /// The target as the combo lists it (`provider/model`).
    pub spec: String,
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
        Self { combo: None, targets: vec![Planned { spec, target: Some(target), pinned: None }] }
    }

    pub fn combo(combo: Arc<Combo>, snapshot: &Snapshot) -> Self {
        let targets = combo
            .targets
            .iter()
            .map(|t| Planned {
                spec: t.model.clone(),
                target: resolve::resolve(&t.model, snapshot).ok(),
                pinned: t.connection_id.clone(),
            })
            .collect();
        Self { combo: Some(combo), targets }
    }
}
