//! Combos as the API manages them: validated (known providers), stored,
//! and the in-memory registry the proxy reads refreshed.

use app::types::combo::{Combo, ComboList, ComboStatus, ComboStatusList, ComboTarget, MAX_COMBO_DEPTH, TargetStatus};

use super::{ServiceError, changes};
use crate::db::feed::Change;
use crate::{
    db::combos as repo,
    resilience::{breaker::BreakerState, engine::Exclusion},
    routing::{
        plan,
        registry::Snapshot,
        resolve,
        view::{Asker, Refusal, RoutingView},
    },
    state::AppState,
    upstream::catalog,
};

pub fn list(state: &AppState) -> ComboList {
    ComboList { combos: state.routing.combos.all().iter().map(|c| c.as_ref().clone()).collect() }
}

pub fn get(state: &AppState, name: &str) -> Result<Combo, ServiceError> {
    state.routing.combos.get(name).map(|c| c.as_ref().clone()).ok_or(ServiceError::NotFound("combo"))
}

/// Creates or replaces `combo`.
pub async fn put(state: &AppState, combo: Combo) -> Result<Combo, ServiceError> {
    combo.validate().map_err(ServiceError::Invalid)?;
    let mut errors = Vec::new();
    if let Some(taken) = shadowed(&combo.name) {
        errors.push(app::types::FieldError::new("name", format!("is already {taken}; choose another name")));
    } else if state.routing.aliases.resolve(&combo.name).is_some() {
        errors.push(app::types::FieldError::new("name", "is already an alias; choose another name"));
    }
    if let Some(why) = flattened_by_parent(state, &combo) {
        errors.push(app::types::FieldError::new("strategy", why));
    }
    for (i, t) in combo.targets.iter().enumerate() {
        let runs_itself =
            t.combo_ref().and_then(|name| state.routing.combos.get(name)).filter(|c| c.strategy.is_multi_call());
        if let Some(sub) = runs_itself.filter(|_| !combo.strategy.is_multi_call()) {
            let why = format!(
                "combo {} runs its own plan ({}); name it as the judge, through an alias, or from another fusion or pipeline combo",
                sub.name,
                sub.strategy.as_str()
            );
            errors.push(app::types::FieldError::new(format!("targets.{i}.model"), why));
        }
    }
    let cfg = &combo.config;
    let judge = cfg.judge_model.as_deref().map(|m| ("config.judgeModel".to_owned(), m));
    let summariser = cfg.handoff_model.as_deref().map(|m| ("config.handoffModel".to_owned(), m));
    let models = combo.targets.iter().enumerate().map(|(i, t)| (format!("targets.{i}.model"), t.model.as_str()));
    for (i, provider) in cfg.handoff_providers.iter().flatten().enumerate() {
        if catalog::find(provider).is_none() {
            let field = format!("config.handoffProviders.{i}");
            errors.push(app::types::FieldError::new(field, format!("unknown provider {provider:?}")));
        }
    }
    for (field, model) in models.chain(judge).chain(summariser) {
        if let Err(why) = routable(state, &combo.name, model) {
            errors.push(app::types::FieldError::new(field, why));
        }
    }
    if !errors.is_empty() {
        return Err(ServiceError::Invalid(errors));
    }
    repo::put(&state.db, &combo, state.clock.now_ms()).await?;
    changes::changed(state, Change::Combos).await?;
    tracing::info!(combo = %combo.name, targets = combo.targets.len(), "combo saved");
    Ok(combo)
}

/// Why `combo` may not be a fusion or pipeline combo: a combo that orders
/// targets lists it as a target, and would spread its targets among its
/// own instead of running its plan.
fn flattened_by_parent(state: &AppState, combo: &Combo) -> Option<String> {
    if !combo.strategy.is_multi_call() {
        return None;
    }
    let parent = state.routing.combos.all().into_iter().find(|c| {
        !c.strategy.is_multi_call() && c.targets.iter().any(|t| t.combo_ref() == Some(combo.name.as_str()))
    })?;
    Some(format!(
        "combo {} lists this combo as a target and orders its targets ({}); {} runs its own plan, so remove it there first",
        parent.name,
        parent.strategy.as_str(),
        combo.strategy.as_str()
    ))
}

/// Whether combo `root` may send requests to `model`: a known provider's
/// `provider/model`, or a combo it may nest.
fn routable(state: &AppState, root: &str, model: &str) -> Result<(), String> {
    match model.split_once('/') {
        None => nesting(state, root, model),
        Some((provider, _)) if catalog::find(provider).is_none() => Err(format!("unknown provider {provider:?}")),
        Some(_) => Ok(()),
    }
}

/// Whether combo `root` may name combo `name` (as a target or its judge): it exists,
/// does not lead back to `root`, and nests at most `MAX_COMBO_DEPTH` deep.
fn nesting(state: &AppState, root: &str, name: &str) -> Result<(), String> {
    fn depth(state: &AppState, root: &str, combo: &Combo, level: usize) -> Result<usize, String> {
        let mut deepest = level;
        for sub in combo.combo_refs() {
            if sub == root {
                return Err(format!("combo {:?} leads back to {root:?}: combos cannot contain themselves", combo.name));
            }
            if level > MAX_COMBO_DEPTH {
                break;
            }
            if let Some(c) = state.routing.combos.get(sub) {
                deepest = deepest.max(depth(state, root, &c, level + 1)?);
            }
        }
        Ok(deepest)
    }
    if name == root {
        return Err("a combo cannot contain itself".to_owned());
    }
    let Some(combo) = state.routing.combos.get(name) else {
        return Err(format!("names no provider/model and no combo called {name:?}"));
    };
    match depth(state, root, &combo, 2)? {
        d if d > MAX_COMBO_DEPTH => Err(format!("nests combos {d} deep; at most {MAX_COMBO_DEPTH}")),
        _ => Ok(()),
    }
}

/// What a combo named `name` would take traffic from: a provider id, or
/// a model id a provider serves (clients may send it bare).
pub fn shadowed(name: &str) -> Option<String> {
    if let Some(p) = catalog::find(name) {
        return Some(format!("the id of provider {}", p.name));
    }
    catalog::all()
        .iter()
        .find(|p| p.models.iter().any(|m| m.eq_ignore_ascii_case(name)))
        .map(|p| format!("a model of {} ({}/{name})", p.name, p.id))
}

/// Deletes the combo, unless an alias still points at it.
pub async fn delete(state: &AppState, name: &str) -> Result<(), ServiceError> {
    if let Some(a) = state.routing.aliases.all().into_iter().find(|a| a.model == name) {
        let why = format!("alias {} points at this combo; delete or re-point it first", a.alias);
        return Err(ServiceError::field("name", why));
    }
    if let Some(parent) = state.routing.combos.all().into_iter().find(|c| c.combo_refs().any(|r| r == name)) {
        let why = format!("combo {} names this combo (a target or its judge); remove it there first", parent.name);
        return Err(ServiceError::field("name", why));
    }
    if !repo::delete(&state.db, name).await? {
        return Err(ServiceError::NotFound("combo"));
    }
    changes::changed(state, Change::Combos).await?;
    state.routing.combo_states.retain(|n| state.routing.combos.get(n).is_some());
    state.routing.handoffs.retain(|n| state.routing.combos.get(n).is_some());
    Ok(())
}

/// Each combo as it stands now: which of its targets could be tried, why
/// the others could not (and until when), and the one that served last.
pub fn status(state: &AppState) -> ComboStatusList {
    let snapshot = state.routing.connections.snapshot();
    let settings = state.resilience.current();
    let view = state.view(&snapshot, &settings);
    let combos = state
        .routing
        .combos
        .all()
        .iter()
        .map(|c| {
            let targets =
                plan::combo_targets(&state.routing.combos, c).into_iter().map(|(_, t)| target_status(&view, &t));
            let last = state.routing.combo_states.of(&c.name).lock().last_good.clone();
            ComboStatus {
                name: c.name.clone(),
                targets: targets.collect(),
                last_served: last.map(|g| served_name(&snapshot, &g.key)),
            }
        })
        .collect();
    ComboStatusList { combos }
}

/// A target's key (`position:model`, `@connection` when pinned) as the page
/// shows it: the model, and the connection by its name.
fn served_name(snapshot: &Snapshot, key: &str) -> String {
    let model = key.split_once(':').map_or(key, |(_, m)| m);
    match model.split_once('@') {
        Some((model, id)) => {
            let name = snapshot.connection(id).map_or("a deleted connection", |c| c.name.as_str());
            format!("{model} @ {name}")
        }
        None => model.to_owned(),
    }
}

fn target_status(view: &RoutingView<'_>, t: &ComboTarget) -> TargetStatus {
    let held = |reason: &str, retry_after_ms: Option<u64>| TargetStatus {
        model: t.model.clone(),
        ready: false,
        reason: Some(reason.to_owned()),
        retry_after_ms,
    };
    let Ok(target) = resolve::resolve(&t.model, view.snapshot) else {
        return held("no active connection serves it", None);
    };
    let provider = target.provider;
    let anyone = Asker::anyone();
    let pinned = t.connection_id.as_deref();
    let conns: Vec<_> =
        view.snapshot.candidates(provider.id).iter().filter(|c| pinned.is_none_or(|p| p == c.id)).collect();
    if conns.is_empty() {
        return held("no active connection serves it", None);
    }
    if view.breaker(provider) == BreakerState::Open {
        let retry = view
            .engine()
            .breakers(view.settings(), catalog::category_of)
            .into_iter()
            .find(|b| b.provider == provider.id)
            .map(|b| b.retry_after_ms);
        return held("the provider's circuit breaker is open", retry);
    }
    let refused: Vec<Refusal> =
        conns.iter().filter_map(|c| view.may_serve(&anyone, provider.id, &c.id, &target.model).err()).collect();
    if refused.len() < conns.len() {
        return TargetStatus { model: t.model.clone(), ready: true, reason: None, retry_after_ms: None };
    }
    let excluded: Vec<&Exclusion> =
        refused.iter().filter_map(|r| if let Refusal::Excluded(e) = r { Some(e) } else { None }).collect();
    let soonest = excluded.iter().filter_map(|e| e.remaining_ms()).min();
    let reason = if excluded.len() < refused.len() {
        "every connection is held by another session's lease"
    } else if excluded.iter().any(|e| matches!(e, Exclusion::Cooling { .. })) {
        "every connection is cooling down"
    } else if excluded.iter().any(|e| matches!(e, Exclusion::ModelLocked { .. })) {
        "the model is locked on every connection"
    } else {
        "every account is banned, expired or out of credits"
    };
    held(reason, soonest)
}
