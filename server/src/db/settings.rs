//! The `key_value` table: small JSON settings and the admin password hash.

use super::entities::key_value;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, sea_query::OnConflict};

/// Key of the admin password's argon2 PHC string.
pub const ADMIN_PASSWORD_HASH: &str = "adminPasswordHash";

pub async fn get(db: &DatabaseConnection, key: &str) -> Result<Option<String>, DbErr> {
    Ok(key_value::Entity::find_by_id(key.to_owned()).one(db).await?.map(|m| m.value))
}

/// Inserts or replaces `key`.
pub async fn put(db: &DatabaseConnection, key: &str, value: &str, now: i64) -> Result<(), DbErr> {
    let row = key_value::ActiveModel { key: Set(key.to_owned()), value: Set(value.to_owned()), updated_at: Set(now) };
    key_value::Entity::insert(row)
        .on_conflict(
            OnConflict::column(key_value::Column::Key)
                .update_columns([key_value::Column::Value, key_value::Column::UpdatedAt])
                .to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}
