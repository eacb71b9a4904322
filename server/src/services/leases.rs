//! The lease lifecycle (SPEC §R2.3): acquire, renew, release. Each change
//! is written through to `session_leases` before it is answered — a lease
//! is durable ownership — and one change runs at a time in this process;
//! between processes the table's unique columns decide.
//!
//! Acquire picks, in routing order, the first of the key's allowed
//! connections of the model's provider that is eligible now (not cooling,
//! locked, terminal or behind an open breaker) and free (no other owner's
//! unexpired lease). Eligible connections that are all held answer
//! `WAITING_FOR_CAPACITY` with the time until the first of those leases
//! ends; no eligible connection at all is not a lease conflict and answers
//! as routing would.
//!
//! A lease owns a connection, not a model, and the normal health rules
//! still apply to it: when the leased connection stops being eligible
//! (cooling, locked for the model, terminal, gone), the next leased request
//! moves the lease to a free eligible connection under the next generation
//! ([`follow_health`]); its answer says the new generation.

use sea_orm::{DatabaseConnection, DbErr};

use crate::{
    auth::api_keys::KeyEntry,
    db::{
        entities::session_lease,
        feed::{self, Change},
        leases::{self as repo, Taken},
    },
    resilience::breaker::BreakerState,
    routing::{
        leases::{Lease, Owner, Stale},
        resolve::{ResolveError, resolve},
        view::{Asker, Refusal},
    },
    state::AppState,
    upstream::catalog,
};

/// A lease's lifetime when the request names none.
pub const DEFAULT_TTL_MS: u64 = 300_000;
pub const MIN_TTL_MS: u64 = 10_000;
pub const MAX_TTL_MS: u64 = 3_600_000;
/// `retryAfter` of a capacity answer is clamped to this range (seconds).
const RETRY_AFTER_SECS: (u64, u64) = (1, 120);

pub enum LeaseError {
    /// `409 LEASE_FENCE_STALE`.
    Stale(Stale),
    /// `429 WAITING_FOR_CAPACITY`: every eligible connection is held.
    Capacity {
        retry_after_secs: u64,
    },
    /// The model names nothing a lease could hold.
    Model(ResolveError),
    /// None of the key's connections is of the model's provider.
    NoCredentials {
        provider: &'static str,
    },
    /// The provider's breaker is open.
    BreakerOpen {
        provider: &'static str,
    },
    /// Every allowed connection is cooling down or otherwise excluded.
    AllCooling {
        provider: &'static str,
    },
    Db(DbErr),
}

impl From<DbErr> for LeaseError {
    fn from(e: DbErr) -> Self {
        Self::Db(e)
    }
}

pub async fn acquire(
    state: &AppState,
    key: &KeyEntry,
    owner: Owner,
    model: &str,
    ttl_ms: u64,
) -> Result<Lease, LeaseError> {
    let _one_at_a_time = state.routing.leases.lifecycle.lock().await;
    if let Some(held) = state.routing.leases.of(&owner) {
        if held.key_id != key.id {
            return Err(LeaseError::Stale(Stale::ForeignKey));
        }
        // Re-acquire: the same lease and generation, its time renewed.
        return extend(state, held, ttl_ms).await;
    }
    let (provider, model) = target_of(state, model)?;
    let eligible = eligible_connections(state, key, provider, &model)?;
    let owner_hex = owner.hex();
    let mut soonest_end: Option<i64> = None;
    for conn in eligible {
        if let Some(end) = held_until(state, &conn) {
            soonest_end = Some(soonest_end.map_or(end, |s| s.min(end)));
            continue;
        }
        let now = state.routing.leases.now();
        repo::clear_expired(&state.db, &conn, &owner_hex, now).await?;
        state.routing.leases.drop_expired_on(&conn);
        let lease = Lease {
            id: uuid::Uuid::new_v4().to_string(),
            owner,
            key_id: key.id.clone(),
            provider,
            connection_id: conn.as_str().into(),
            generation: repo::last_generation(&state.db, &owner_hex).await? + 1,
            expires_at: now.saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX)),
        };
        match repo::insert(&state.db, lease.active_row(now)).await? {
            Taken::Yes => {
                state.routing.leases.put(lease.clone());
                feed::announce(&state.db, &state.store.instance, &Change::Leases).await;
                tracing::info!(provider, generation = lease.generation, "session lease acquired");
                return Ok(lease);
            }
            // Another instance took it meanwhile.
            Taken::Conflict => soonest_end = Some(soonest_end.unwrap_or(now + 1_000)),
        }
    }
    let now = state.routing.leases.now();
    let secs =
        soonest_end.map_or(RETRY_AFTER_SECS.0, |end| u64::try_from((end - now).max(0)).unwrap_or(0).div_ceil(1000));
    Err(LeaseError::Capacity { retry_after_secs: secs.clamp(RETRY_AFTER_SECS.0, RETRY_AFTER_SECS.1) })
}

pub async fn renew(
    state: &AppState,
    key: &KeyEntry,
    owner: Owner,
    generation: u64,
    ttl_ms: u64,
) -> Result<Lease, LeaseError> {
    let _one_at_a_time = state.routing.leases.lifecycle.lock().await;
    let lease = fence(state, &owner, generation, &key.id).await?;
    extend(state, lease, ttl_ms).await
}

/// Releases the lease; releasing one that is no longer active is a no-op.
pub async fn release(
    state: &AppState,
    key: &KeyEntry,
    owner: Owner,
    generation: u64,
    reason: Option<&str>,
) -> Result<(), LeaseError> {
    let _one_at_a_time = state.routing.leases.lifecycle.lock().await;
    let lease = match fence(state, &owner, generation, &key.id).await {
        Ok(lease) => lease,
        Err(LeaseError::Stale(Stale::NoLease)) => return Ok(()),
        Err(e) => return Err(e),
    };
    repo::release(&state.db, &lease.id, state.routing.leases.now(), reason).await?;
    state.routing.leases.remove(&owner);
    feed::announce(&state.db, &state.store.instance, &Change::Leases).await;
    tracing::info!(provider = lease.provider, generation, "session lease released");
    Ok(())
}

/// The lease a fenced request goes on with: the same one while its
/// connection is eligible for `model`; else moved to the first free
/// eligible connection under the next generation; else the same one (the
/// request then meets the normal routing errors).
pub async fn follow_health(state: &AppState, key: &KeyEntry, lease: Lease, model: &str) -> Result<Lease, LeaseError> {
    let usable = |conn: &str| {
        let snapshot = state.routing.connections.snapshot();
        let settings = state.resilience.current();
        snapshot.connection(conn).is_some()
            && state
                .view(&snapshot, &settings)
                .may_serve(&Asker::new(Some(key), Some(&lease)), lease.provider, conn, model)
                .is_ok()
    };
    if usable(&lease.connection_id) {
        return Ok(lease);
    }
    let _one_at_a_time = state.routing.leases.lifecycle.lock().await;
    // Another request may have moved it meanwhile.
    let current = match fence(state, &lease.owner, lease.generation, &key.id).await {
        Ok(current) => current,
        Err(LeaseError::Stale(_)) => return Ok(state.routing.leases.of(&lease.owner).unwrap_or(lease)),
        Err(e) => return Err(e),
    };
    let Ok(eligible) = eligible_connections(state, key, current.provider, model) else { return Ok(current) };
    let Some(free) = eligible.into_iter().find(|c| held_until(state, c).is_none()) else { return Ok(current) };
    let now = state.routing.leases.now();
    repo::clear_expired(&state.db, &free, &current.owner.hex(), now).await?;
    repo::release(&state.db, &current.id, now, Some("moved: its connection is no longer eligible")).await?;
    state.routing.leases.remove(&current.owner);
    let moved = Lease {
        id: uuid::Uuid::new_v4().to_string(),
        connection_id: free.as_str().into(),
        generation: current.generation + 1,
        ..current.clone()
    };
    if matches!(repo::insert(&state.db, moved.active_row(now)).await?, Taken::Conflict) {
        // Another instance took that connection in between: the lease is
        // gone, and the client acquires again.
        return Err(LeaseError::Stale(Stale::NoLease));
    }
    state.routing.leases.put(moved.clone());
    feed::announce(&state.db, &state.store.instance, &Change::Leases).await;
    tracing::info!(
        provider = moved.provider,
        generation = moved.generation,
        "session lease moved to an eligible connection"
    );
    Ok(moved)
}

async fn extend(state: &AppState, mut lease: Lease, ttl_ms: u64) -> Result<Lease, LeaseError> {
    lease.expires_at = state.routing.leases.now().saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX));
    repo::renew(&state.db, &lease.id, lease.expires_at).await?;
    state.routing.leases.put(lease.clone());
    feed::announce(&state.db, &state.store.instance, &Change::Leases).await;
    Ok(lease)
}

/// The active, unexpired leases stored (at start, and when another
/// instance changed one).
pub async fn stored(db: &DatabaseConnection, now: i64) -> Result<Vec<Lease>, DbErr> {
    Ok(repo::load_active(db, now).await?.into_iter().filter_map(lease_of).collect())
}

fn lease_of(row: session_lease::Model) -> Option<Lease> {
    let owner = hex::decode(&row.owner_hash).ok().and_then(|b| <[u8; 32]>::try_from(b).ok())?;
    Some(Lease {
        id: row.id,
        owner: Owner(owner),
        key_id: row.key_id,
        provider: catalog::find(&row.provider)?.id,
        connection_id: row.connection_id.into(),
        generation: u64::try_from(row.generation).unwrap_or(0),
        expires_at: row.expires_at,
    })
}

/// The fence (SPEC §R2.3): the owner's active lease, if `generation` is
/// its current one and the request comes through the key that took it.
/// With several instances on one Postgres the owner's row decides: another
/// instance may have moved, renewed or released the lease a moment ago,
/// before its notification arrived. One read per fenced request, there
/// only; a single instance's memory is the truth.
pub async fn fence(state: &AppState, owner: &Owner, generation: u64, key_id: &str) -> Result<Lease, LeaseError> {
    if feed::shared(&state.db) {
        let now = state.routing.leases.now();
        match repo::active_of(&state.db, &owner.hex(), now).await?.and_then(lease_of) {
            Some(stored) => state.routing.leases.put(stored),
            None => state.routing.leases.remove(owner),
        }
    }
    state.routing.leases.fence(owner, generation, key_id).map_err(LeaseError::Stale)
}

/// The provider (and model) a lease for `model` holds a connection of.
fn target_of(state: &AppState, model: &str) -> Result<(&'static str, String), LeaseError> {
    let snapshot = state.routing.connections.snapshot();
    let aliased = state.routing.aliases.resolve(model);
    let target = resolve(aliased.as_deref().unwrap_or(model), &snapshot).map_err(LeaseError::Model)?;
    Ok((target.provider.id, target.model))
}

/// The key's connections of `provider` that could serve `model` now, in
/// routing order — held by another session's lease or not (that is the
/// capacity answer's concern); none is a routing error.
fn eligible_connections(
    state: &AppState,
    key: &KeyEntry,
    provider: &'static str,
    model: &str,
) -> Result<Vec<String>, LeaseError> {
    let snapshot = state.routing.connections.snapshot();
    let settings = state.resilience.current();
    let view = state.view(&snapshot, &settings);
    let asker = Asker::new(Some(key), None);
    let verdicts: Vec<_> =
        snapshot.candidates(provider).iter().map(|c| (c, view.may_serve(&asker, provider, &c.id, model))).collect();
    let allowed: Vec<_> = verdicts.iter().filter(|(_, v)| !matches!(v, Err(Refusal::NotAllowed))).collect();
    let Some((first, _)) = allowed.first() else { return Err(LeaseError::NoCredentials { provider }) };
    if view.breaker(first.provider) == BreakerState::Open {
        return Err(LeaseError::BreakerOpen { provider });
    }
    let eligible: Vec<String> =
        allowed.iter().filter(|(_, v)| matches!(v, Ok(()) | Err(Refusal::Leased))).map(|(c, _)| c.id.clone()).collect();
    if eligible.is_empty() {
        return Err(LeaseError::AllCooling { provider });
    }
    Ok(eligible)
}

/// Until when another owner's unexpired lease holds the connection.
fn held_until(state: &AppState, connection_id: &str) -> Option<i64> {
    state.routing.leases.active().into_iter().filter(|l| *l.connection_id == *connection_id).map(|l| l.expires_at).min()
}
