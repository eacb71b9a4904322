//! Client API keys: create (the key is returned once), list, revoke.

use app::types::{ApiKeyList, ApiKeyView, CreateApiKey, CreatedApiKey, FieldError};

use super::{ServiceError, changes};
use crate::db::feed::Change;
use crate::{
    auth::{api_keys, sha256_hex},
    db::api_keys as repo,
    state::AppState,
};

/// Characters of a key kept for display (`omr-AbCd…`).
const DISPLAY_PREFIX: usize = 8;

pub async fn create(state: &AppState, mut input: CreateApiKey) -> Result<CreatedApiKey, ServiceError> {
    input.validate().map_err(ServiceError::Invalid)?;
    if let Some(ids) = input.allowed_connections.as_mut() {
        ids.sort_unstable();
        ids.dedup();
        let known: Vec<String> =
            crate::db::connections::list(&state.db, None).await?.into_iter().map(|c| c.id).collect();
        if let Some(unknown) = ids.iter().find(|id| !known.contains(id)) {
            let message = format!("no connection has the id {unknown:?}");
            return Err(ServiceError::Invalid(vec![FieldError::new("allowedConnections", message)]));
        }
    }
    let key = api_keys::generate();
    let scopes: Vec<&str> = input.effective_scopes().iter().map(|s| s.as_str()).collect();
    let row = repo::ApiKeyRow {
        id: uuid::Uuid::new_v4().to_string(),
        name: input.name.trim().to_owned(),
        key_hash: sha256_hex(&key),
        key_prefix: key.chars().take(DISPLAY_PREFIX).collect(),
        scopes: serde_json::to_string(&scopes).unwrap_or_default(),
        allowed_connections: input
            .allowed_connections
            .as_ref()
            .map(|ids| serde_json::to_string(ids).unwrap_or_default()),
        created_at: state.clock.now_ms(),
        last_used_at: None,
    };
    let id = row.id.clone();
    repo::insert(&state.db, row).await?;
    changes::changed(state, Change::Keys).await?;
    tracing::info!(key_id = %id, "API key created");
    Ok(CreatedApiKey { id, key })
}

pub async fn list(state: &AppState) -> Result<ApiKeyList, ServiceError> {
    let keys = repo::list(&state.db)
        .await?
        .into_iter()
        .map(|r| ApiKeyView {
            // The registry knows uses not stored yet.
            last_used_at: state.auth.keys.last_used_at(&r.id).max(r.last_used_at),
            scopes: api_keys::parse_scopes(&r.scopes),
            allowed_connections: r.allowed_connections.as_deref().and_then(|s| serde_json::from_str(s).ok()),
            id: r.id,
            name: r.name,
            key_prefix: r.key_prefix,
            created_at: r.created_at,
        })
        .collect();
    Ok(ApiKeyList { keys })
}

pub async fn revoke(state: &AppState, id: &str) -> Result<(), ServiceError> {
    if !repo::delete(&state.db, id).await? {
        return Err(ServiceError::NotFound("API key"));
    }
    changes::changed(state, Change::Keys).await?;
    tracing::info!(key_id = %id, "API key revoked");
    Ok(())
}
