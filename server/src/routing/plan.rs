//! The plan: the ordered targets one request may be served by. A single
//! model is a plan of one target; a combo lists its targets — a nested
//! combo's targets in its place — in the order its strategy gives
//! (`routing::strategies`). A target that names no known provider stays
//! in the plan, to be reported as skipped. For a strategy that ranks
//! accounts, each target not pinned to a connection becomes one target per
//! connection the request may use, pinned to it (`key@connection`), so
//! the strategy orders accounts across the whole combo.

use app::types::combo::{Combo, ComboTarget, MAX_COMBO_DEPTH, Strategy};
use std::sync::Arc;

use super::{
    affinity::SessionId,
    combos::ComboRegistry,
    quota::{Quota, QuotaSource},
    registry::Snapshot,
    resolve::{self, Target},
    strategies::{self, Candidate, Health},
    view::{Asker, RoutingView},
};
use crate::upstream::model_facts;

/// One target of the plan.
pub struct Planned {
    /// The target as the combo lists it (`provider/model`).
    pub spec: String,
    /// Its identity within the combo (its position — through nested
    /// combos — its model and pinned connection): what the strategies'
    /// memory is keyed by.
    pub key: String,
    /// Its position in the combo's (flattened) list.
    pub index: usize,
    /// Its `weighted` share.
    pub weight: u32,
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
    /// One target, on connection `pinned` only when given.
    pub fn single(target: Target, pinned: Option<String>) -> Self {
        let spec = format!("{}/{}", target.provider.id, target.model);
        let planned = Planned { key: spec.clone(), spec, index: 0, weight: 0, target: Some(target), pinned };
        Self { combo: None, targets: vec![planned] }
    }

    /// The combo's targets in its strategy's order for a request of
    /// `asker` (whose key's allowed connections and lease bound the
    /// accounts) in `session`.
    pub fn combo(combo: Arc<Combo>, view: &RoutingView<'_>, asker: &Asker<'_>, session: Option<SessionId>) -> Self {
        let mut targets: Vec<Planned> = combo_targets(&view.routing().combos, &combo)
            .into_iter()
            .enumerate()
            .map(|(i, (key, t))| planned(i, key, t, view.snapshot))
            .collect();
        if strategies::per_account(combo.strategy) {
            targets = targets.into_iter().flat_map(|p| per_account(p, view, asker)).collect();
        }
        if combo.strategy != Strategy::Priority {
            let order = strategy_order(&combo, &targets, view, asker, session);
            let mut slots: Vec<Option<Planned>> = targets.into_iter().map(Some).collect();
            targets = order.into_iter().filter_map(|i| slots[i].take()).collect();
        }
        Self { combo: Some(combo), targets }
    }
}

/// The combo's targets with nested combos expanded in place, each with
/// its key (as the strategies' memory names it).
pub fn combo_targets(combos: &ComboRegistry, combo: &Combo) -> Vec<(String, ComboTarget)> {
    let mut flat = Vec::new();
    flatten(combos, combo, "", 1, &mut vec![combo.name.clone()], &mut flat);
    flat
}

/// The combo's targets with nested combos expanded in place, depth first.
/// Saving refuses cycles and nesting deeper than `MAX_COMBO_DEPTH`; should
/// the stored combos hold one anyway, the repeated or too-deep combo is
/// left out rather than followed.
fn flatten(
    combos: &ComboRegistry,
    combo: &Combo,
    path: &str,
    depth: usize,
    on_path: &mut Vec<String>,
    out: &mut Vec<(String, ComboTarget)>,
) {
    for (i, t) in combo.targets.iter().enumerate() {
        let position = format!("{path}{i}");
        match t.combo_ref() {
            None => {
                let pin = t.connection_id.as_ref().map(|c| format!("@{c}")).unwrap_or_default();
                out.push((format!("{position}:{}{pin}", t.model), t.clone()));
            }
            Some(name) if depth < MAX_COMBO_DEPTH && !on_path.iter().any(|n| n == name) => {
                let Some(sub) = combos.get(name) else { continue };
                on_path.push(name.to_owned());
                flatten(combos, &sub, &format!("{position}>"), depth + 1, on_path, out);
                on_path.pop();
            }
            Some(name) => {
                tracing::warn!(combo = %combo.name, nested = name, "nested combo left out (cycle or too deep)")
            }
        }
    }
}

/// One target per connection the request may use of an unpinned target
/// (the target itself when it has none, or is pinned).
fn per_account(p: Planned, view: &RoutingView<'_>, asker: &Asker<'_>) -> Vec<Planned> {
    let Some(target) = p.target.as_ref().filter(|_| p.pinned.is_none()) else { return vec![p] };
    let accounts: Vec<&str> = view.addressable(asker, target.provider.id, None).map(|c| c.id.as_str()).collect();
    if accounts.is_empty() {
        return vec![p];
    }
    accounts
        .into_iter()
        .map(|id| Planned {
            spec: p.spec.clone(),
            key: format!("{}@{id}", p.key),
            index: p.index,
            weight: p.weight,
            target: p.target.clone(),
            pinned: Some(id.to_owned()),
        })
        .collect()
}

fn planned(index: usize, key: String, t: ComboTarget, snapshot: &Snapshot) -> Planned {
    Planned {
        target: resolve::resolve(&t.model, snapshot).ok(),
        spec: t.model,
        key,
        index,
        weight: t.weight.unwrap_or(0),
        pinned: t.connection_id,
    }
}

/// What the strategy sees of each target, and the order it gives.
fn strategy_order(
    combo: &Combo,
    targets: &[Planned],
    view: &RoutingView<'_>,
    asker: &Asker<'_>,
    session: Option<SessionId>,
) -> Vec<usize> {
    let session = session.filter(|_| combo.strategy == Strategy::CacheOptimized);
    let memory = view.routing().combo_states.of(&combo.name);
    let mut memory = memory.lock();
    let eligibility = strategies::needs_eligibility(combo.strategy);
    let accounts = strategies::per_account(combo.strategy);
    let now = view.engine().now();
    let candidates: Vec<Candidate> = targets
        .iter()
        .map(|p| {
            let health = p.target.as_ref().map_or(Health::Open, |target| view.health(target.provider));
            Candidate {
                key: p.key.clone(),
                provider: p.spec.split_once('/').map_or("", |(provider, _)| provider).to_owned(),
                weight: p.weight,
                health,
                eligible: eligibility && health != Health::Open && usable(view, asker, p),
                stats: memory.targets.get(&p.key).copied().unwrap_or_default(),
                facts: p.target.as_ref().and_then(|t| model_facts::of(&t.model)),
                quota: accounts.then(|| account_quota(view, p, now)).flatten(),
                in_flight: p.pinned.as_deref().and_then(|c| view.snapshot.connection(c)).map_or(0, |c| c.in_flight()),
                rendezvous: session.map(|s| rendezvous(&s, p)),
                foreign_sessions: session
                    .zip(p.pinned.as_deref().and_then(|c| view.snapshot.connection(c)))
                    .map_or(0, |(s, c)| c.foreign_sessions(s)),
            }
        })
        .collect();
    strategies::order(combo.strategy, &candidates, &mut memory, &mut rand::thread_rng())
}

/// The target's rendezvous weight for `session`: an account is known by
/// its connection, a target of no account by its key.
fn rendezvous(session: &SessionId, p: &Planned) -> f64 {
    let identity = match &p.pinned {
        Some(connection) => format!("connection:{connection}"),
        None => format!("execution:{}", p.key),
    };
    strategies::cache_optimized::weight(&session.0, &identity)
}

/// The quota of a one-account target's account, if reported.
fn account_quota(view: &RoutingView<'_>, p: &Planned, now: i64) -> Option<Quota> {
    let source: &dyn QuotaSource = &view.routing().quotas;
    source.quota(p.pinned.as_deref()?, &p.target.as_ref()?.model, now)
}

/// Whether some connection of the target could serve the request now.
fn usable(view: &RoutingView<'_>, asker: &Asker<'_>, p: &Planned) -> bool {
    let Some(target) = &p.target else { return false };
    view.usable(asker, target.provider.id, &target.model, p.pinned.as_deref())
}
