//! Resilience settings (SPEC §S): load at start, read, and PATCH. The
//! database keeps only what an operator changed (a sparse JSON document
//! under `resilienceSettings`), so values left alone keep following the
//! defaults and the environment.

use anyhow::bail;
use app::types::settings::{ResilienceSettings, apply_patch, effective, merge, turns_on_saved};
use serde_json::Value;

use super::ServiceError;
use crate::{
    db::{
        feed::{self, Change},
        settings as kv,
    },
    resilience::settings::SettingsHandle,
    state::AppState,
    upstream::catalog,
};

/// `key_value` key of the persisted (sparse) settings document.
pub const KEY: &str = "resilienceSettings";

/// The handle the engine reads, from env and the stored document. Stored
/// fields that no longer parse are reported and ignored rather than
/// keeping the gateway from starting; `OMNIROUTE_EMERGENCY_FALLBACK=true`
/// with no target saved stops the start (never a silent "off").
pub async fn load(
    db: &sea_orm::DatabaseConnection,
    env: Vec<app::types::settings::EnvSource>,
) -> anyhow::Result<SettingsHandle> {
    let (settings, dropped) = effective(&env, &stored(db).await?);
    for e in dropped {
        tracing::warn!(field = %e.field, problem = %e.message, "ignoring an unreadable stored resilience setting");
    }
    if let Some(flag) = env.iter().find(|s| turns_on_saved(s))
        && settings.emergency_fallback.is_empty()
    {
        bail!(
            "{}=true turns on the emergency fallback target saved on Settings → Resilience (Feature flags), \
             but none is saved: save one there, or set the variable to provider/model",
            flag.variable
        );
    }
    Ok(SettingsHandle::new(settings, env))
}

async fn stored(db: &sea_orm::DatabaseConnection) -> Result<Value, sea_orm::DbErr> {
    Ok(parse_stored(kv::get(db, KEY).await?.as_deref()))
}

/// Merges `patch` into the stored document. Another instance saving at
/// the same moment makes the swap fail; the document is read again, so
/// neither save is lost.
async fn save_merged(db: &sea_orm::DatabaseConnection, patch: &Value, now: i64) -> Result<(), sea_orm::DbErr> {
    for _ in 0..SAVE_TRIES {
        let raw = kv::get(db, KEY).await?;
        let mut doc = parse_stored(raw.as_deref());
        merge(&mut doc, patch);
        if kv::swap(db, KEY, raw.as_deref(), &doc.to_string(), now).await? {
            return Ok(());
        }
    }
    Err(sea_orm::DbErr::Custom(format!("the settings changed under this save {SAVE_TRIES} times in a row; save again")))
}

/// Saves tried before giving up (each lost to another instance's save).
const SAVE_TRIES: usize = 10;

fn parse_stored(raw: Option<&str>) -> Value {
    raw.and_then(|r| serde_json::from_str(r).ok()).unwrap_or_else(|| Value::Object(Default::default()))
}

/// Rebuilds the live settings from the stored document (another instance
/// saved it). Fields that no longer parse are reported and ignored, as at start.
pub async fn reload(state: &AppState) -> Result<(), sea_orm::DbErr> {
    let handle = &state.resilience;
    let _turn = handle.write_turn().await;
    let (settings, dropped) = effective(handle.env(), &stored(&state.db).await?);
    for e in dropped {
        tracing::warn!(field = %e.field, problem = %e.message, "ignoring an unreadable stored resilience setting");
    }
    handle.replace(settings);
    Ok(())
}

/// Validates `patch` against the current settings, stores it on top of
/// the persisted document and makes the result live. Invalid → nothing
/// is stored and nothing changes.
pub async fn patch(state: &AppState, patch: &Value) -> Result<ResilienceSettings, ServiceError> {
    let handle = &state.resilience;
    let _turn = handle.write_turn().await;
    let next = apply_patch(&handle.current(), patch, handle.env()).map_err(ServiceError::Invalid)?;
    if patch.get("emergencyFallback").is_some()
        && let Some((provider, _)) = next.emergency_fallback.split_once('/')
        && catalog::find(provider).is_none()
    {
        return Err(ServiceError::field("emergencyFallback", format!("{provider:?} is not a provider of the catalog")));
    }
    save_merged(&state.db, patch, state.clock.now_ms()).await?;
    tracing::info!(sections = ?patch.as_object().map(|o| o.keys().collect::<Vec<_>>()), "resilience settings changed");
    handle.replace(next.clone());
    feed::announce(&state.db, &state.store.instance, &Change::Settings).await;
    Ok(next)
}
