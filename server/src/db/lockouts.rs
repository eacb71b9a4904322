//! The `model_lockouts` table (SPEC §R3), on a shared database only: each
//! connection's model locks, replaced whole when they change
//! (write-behind, `store::state`), read when another instance on the
//! database stored them and by the change feed's catch-up.

use app::types::settings::ErrorReason;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, TransactionTrait};

use super::entities::model_lockout as row;
use crate::resilience::lockout::{ESCALATION_WINDOW_MS, Lock};

/// Makes `locks` the stored locks of `connection_id`.
pub async fn replace(db: &DatabaseConnection, connection_id: &str, locks: &[(String, Lock)]) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    row::Entity::delete_many().filter(row::Column::ConnectionId.eq(connection_id)).exec(&txn).await?;
    if !locks.is_empty() {
        row::Entity::insert_many(locks.iter().map(|(key, l)| row::ActiveModel::from(to_row(key, l))))
            .exec(&txn)
            .await?;
    }
    txn.commit().await
}

/// One connection's stored locks.
pub async fn of_connection(db: &DatabaseConnection, connection_id: &str) -> Result<Vec<(String, Lock)>, DbErr> {
    let rows = row::Entity::find().filter(row::Column::ConnectionId.eq(connection_id)).all(db).await?;
    Ok(rows.into_iter().filter_map(from_row).collect())
}

/// Every stored lock that can still matter, by connection; rows past their
/// lock and escalation window are deleted.
pub async fn load(db: &DatabaseConnection, now: i64) -> Result<Vec<(String, Lock)>, DbErr> {
    let stale = now.saturating_sub_unsigned(ESCALATION_WINDOW_MS);
    row::Entity::delete_many().filter(row::Column::Until.lt(stale)).exec(db).await?;
    Ok(row::Entity::find().all(db).await?.into_iter().filter_map(from_row).collect())
}

fn to_row(key: &str, l: &Lock) -> row::Model {
    row::Model {
        key: key.to_owned(),
        provider: l.provider.clone(),
        connection_id: l.connection_id.clone(),
        model: l.model.clone(),
        reason: l.reason.as_str().to_owned(),
        until: l.until,
        failure_count: i64::from(l.failure_count),
        last_failure_at: l.last_failure_at,
        last_cooldown_ms: i64::try_from(l.last_cooldown_ms).unwrap_or(i64::MAX),
    }
}

fn from_row(r: row::Model) -> Option<(String, Lock)> {
    let lock = Lock {
        provider: r.provider,
        connection_id: r.connection_id,
        model: r.model,
        reason: ErrorReason::parse(&r.reason)?,
        until: r.until,
        failure_count: u32::try_from(r.failure_count).ok()?,
        last_failure_at: r.last_failure_at,
        last_cooldown_ms: u64::try_from(r.last_cooldown_ms).ok()?,
    };
    Some((r.key, lock))
}
