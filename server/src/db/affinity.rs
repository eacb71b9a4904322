//! The `session_account_affinity` table (SPEC §R2.2): one row per pinned
//! session and provider, keyed by the session's hash. Written behind the
//! request by [`crate::resilience_store`]; read once at start.

use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::OnConflict,
};

use super::entities::session_affinity as row;
use crate::routing::affinity::{MAX_PINS, Pin};

/// The unexpired pins, most recently used first (at most [`MAX_PINS`]);
/// expired rows are deleted.
pub async fn load(db: &DatabaseConnection, now: i64) -> Result<Vec<row::Model>, DbErr> {
    row::Entity::delete_many().filter(row::Column::ExpiresAt.lte(now)).exec(db).await?;
    row::Entity::find()
        .order_by_desc(row::Column::LastUsedAt)
        .limit(u64::try_from(MAX_PINS).unwrap_or(u64::MAX))
        .all(db)
        .await
}

pub async fn save(db: &DatabaseConnection, session_hex: &str, provider: &str, pin: &Pin) -> Result<(), DbErr> {
    let r = row::ActiveModel {
        key: Set(session_hex.to_owned()),
        provider: Set(provider.to_owned()),
        connection_id: Set(pin.connection_id.to_string()),
        created_at: Set(pin.created_at),
        last_used_at: Set(pin.last_used_at),
        expires_at: Set(pin.expires_at),
    };
    use row::Column as C;
    row::Entity::insert(r)
        .on_conflict(
            OnConflict::columns([C::Key, C::Provider])
                .update_columns([C::ConnectionId, C::CreatedAt, C::LastUsedAt, C::ExpiresAt])
                .to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

pub async fn delete(db: &DatabaseConnection, session_hex: &str, provider: &str) -> Result<(), DbErr> {
    row::Entity::delete_by_id((session_hex.to_owned(), provider.to_owned())).exec(db).await?;
    Ok(())
}
