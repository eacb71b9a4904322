//! The `session_account_affinity` table (SPEC §R2.2): one row per pinned
//! session and provider, keyed by the session's hash. Written behind the
//! request by the store (`store::state`); read at start, and by id when
//! another instance on the database stored one (`services::changes`).

use sea_orm::{
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, sea_query::OnConflict,
};

use super::entities::session_affinity as row;

/// The unexpired pins, most recently used first (at most `max`); expired
/// rows are deleted.
pub async fn load(db: &DatabaseConnection, now: i64, max: usize) -> Result<Vec<row::Model>, DbErr> {
    row::Entity::delete_many().filter(row::Column::ExpiresAt.lte(now)).exec(db).await?;
    row::Entity::find()
        .order_by_desc(row::Column::LastUsedAt)
        .limit(u64::try_from(max).unwrap_or(u64::MAX))
        .all(db)
        .await
}

/// The pin stored for one session and provider.
pub async fn get(db: &DatabaseConnection, session_hex: &str, provider: &str) -> Result<Option<row::Model>, DbErr> {
    row::Entity::find_by_id((session_hex.to_owned(), provider.to_owned())).one(db).await
}

pub async fn save(db: &DatabaseConnection, pin: row::Model) -> Result<(), DbErr> {
    let r = row::ActiveModel::from(pin);
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
