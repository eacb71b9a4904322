//! Values kept a few minutes for one later request — a new API key shown
//! once after a plain form post, a subscription sign-in waiting for its
//! code — in the database, sealed with the gateway's secret key. The
//! request that takes one may reach another worker or, with several
//! instances on one Postgres, another instance: each finds it there, and
//! only one takes it.

use crate::{
    auth::stash::Stashed,
    db::{self, entities::stash},
    state::AppState,
};

use super::ServiceError;

/// Keeps `value` under `id` for [`Stashed::TTL_MS`].
pub async fn put<T: Stashed>(state: &AppState, id: &str, value: &T) -> Result<(), ServiceError> {
    let json = serde_json::to_string(value).map_err(|e| ServiceError::Unavailable(e.to_string()))?;
    let now = state.clock.now_ms();
    db::stashes::put(&state.db, T::KIND, id, state.auth.secrets.encrypt(&json), now, now - T::TTL_MS).await?;
    Ok(())
}

/// The value under `id`, left in place, unless it waited too long.
pub async fn peek<T: Stashed>(state: &AppState, id: &str) -> Result<Option<T>, ServiceError> {
    Ok(db::stashes::peek(&state.db, T::KIND, id).await?.and_then(|row| open(state, &row)))
}

/// The value under `id`, once, unless it waited too long.
pub async fn take<T: Stashed>(state: &AppState, id: &str) -> Result<Option<T>, ServiceError> {
    Ok(db::stashes::take(&state.db, T::KIND, id).await?.and_then(|row| open(state, &row)))
}

fn open<T: Stashed>(state: &AppState, row: &stash::Model) -> Option<T> {
    if state.clock.now_ms() - row.put_at >= T::TTL_MS {
        return None;
    }
    let opened = state.auth.secrets.decrypt(&row.sealed).map_err(|e| e.to_string());
    match opened.and_then(|json| serde_json::from_str(&json).map_err(|e| e.to_string())) {
        Ok(value) => Some(value),
        Err(e) => {
            tracing::warn!(error = %e, kind = T::KIND, "a stashed value could not be read");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]
    use super::*;
    use crate::resilience::clock::ManualClock;
    use app::types::CreatedApiKey;
    use sea_orm::{EntityTrait, PaginatorTrait};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_value_is_sealed_taken_once_and_only_within_its_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_767_225_600_000));
        let config = crate::config::Config::for_data_dir(dir.path().to_path_buf());
        let state = crate::build_state_with_clock(config, clock.clone()).await.unwrap();
        let key = |id: &str| CreatedApiKey { id: id.into(), key: format!("omr-secret-{id}") };
        put(&state, "a", &key("a")).await.unwrap();
        put(&state, "b", &key("b")).await.unwrap();
        let rows = stash::Entity::find().all(&state.db).await.unwrap();
        assert!(rows.iter().all(|r| !r.sealed.contains("omr-secret")), "sealed at rest");
        assert_eq!(peek::<CreatedApiKey>(&state, "a").await.unwrap(), Some(key("a")), "a peek leaves it");
        assert_eq!(take::<CreatedApiKey>(&state, "a").await.unwrap(), Some(key("a")));
        assert_eq!(take::<CreatedApiKey>(&state, "a").await.unwrap(), None, "taken once");
        clock.advance(CreatedApiKey::TTL_MS);
        assert_eq!(take::<CreatedApiKey>(&state, "b").await.unwrap(), None, "too old");
        put(&state, "c", &key("c")).await.unwrap();
        assert_eq!(stash::Entity::find().count(&state.db).await.unwrap(), 1, "old values are forgotten");
    }
}
