//! The `dashboard_sessions` table: signed-in dashboard sessions by token
//! hash. Written through (sign-in and sign-out are rare); read once per
//! dashboard request, never on the proxy path.

use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use super::entities::dashboard_session as row;

/// Stores a new session and drops the expired ones.
pub async fn insert(db: &DatabaseConnection, token_hash: String, now: i64, expires_at: i64) -> Result<(), DbErr> {
    row::Entity::delete_many().filter(row::Column::ExpiresAt.lte(now)).exec(db).await?;
    let r = row::ActiveModel { token_hash: Set(token_hash), created_at: Set(now), expires_at: Set(expires_at) };
    row::Entity::insert(r).exec(db).await?;
    Ok(())
}

/// Whether the session exists and has not expired.
pub async fn is_live(db: &DatabaseConnection, token_hash: &str, now: i64) -> Result<bool, DbErr> {
    Ok(row::Entity::find_by_id(token_hash).one(db).await?.is_some_and(|s| s.expires_at > now))
}

pub async fn delete(db: &DatabaseConnection, token_hash: &str) -> Result<(), DbErr> {
    row::Entity::delete_by_id(token_hash).exec(db).await?;
    Ok(())
}

/// Ends every session (a password reset).
pub async fn delete_all(db: &DatabaseConnection) -> Result<(), DbErr> {
    row::Entity::delete_many().exec(db).await?;
    Ok(())
}
