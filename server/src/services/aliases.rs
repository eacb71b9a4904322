//! Aliases as the API manages them: checked (it names a known provider or
//! an existing combo; it takes no provider's, model's or combo's name),
//! stored, and the registry the proxy reads refreshed.

use app::types::{
    FieldError,
    alias::{Alias, AliasList},
};

use super::{ServiceError, changes, combos::shadowed};
use crate::db::feed::Change;
use crate::{db::aliases as repo, state::AppState, upstream::catalog};

pub fn list(state: &AppState) -> AliasList {
    AliasList { aliases: state.routing.aliases.all() }
}

/// Creates the alias or points it elsewhere.
pub async fn put(state: &AppState, alias: Alias) -> Result<Alias, ServiceError> {
    alias.validate().map_err(ServiceError::Invalid)?;
    let mut errors = Vec::new();
    if let Some(taken) = shadowed(&alias.alias) {
        errors.push(FieldError::new("alias", format!("is already {taken}; choose another name")));
    } else if state.routing.combos.get(&alias.alias).is_some() {
        errors.push(FieldError::new("alias", "is already a combo's name; choose another name"));
    }
    match alias.model.split_once('/') {
        Some((provider, _)) if catalog::find(provider).is_none() => {
            errors.push(FieldError::new("model", format!("unknown provider {provider:?}")));
        }
        Some(_) => {}
        None if state.routing.combos.get(&alias.model).is_none() => {
            errors.push(FieldError::new("model", "must be provider/model or the name of an existing combo"));
        }
        None => {}
    }
    if !errors.is_empty() {
        return Err(ServiceError::Invalid(errors));
    }
    repo::put(&state.db, &alias, state.clock.now_ms()).await?;
    changes::changed(state, Change::Aliases).await?;
    tracing::info!(alias = %alias.alias, model = %alias.model, "alias saved");
    Ok(alias)
}

pub async fn delete(state: &AppState, alias: &str) -> Result<(), ServiceError> {
    if !repo::delete(&state.db, alias).await? {
        return Err(ServiceError::NotFound("alias"));
    }
    changes::changed(state, Change::Aliases).await?;
    Ok(())
}
