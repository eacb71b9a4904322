//! The `api_keys` table.

use super::entities::api_key;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, ModelTrait, QueryOrder};

pub use api_key::Model as ApiKeyRow;

pub async fn list(db: &DatabaseConnection) -> Result<Vec<ApiKeyRow>, DbErr> {
    api_key::Entity::find().order_by_asc(api_key::Column::CreatedAt).all(db).await
}

pub async fn insert(db: &DatabaseConnection, row: ApiKeyRow) -> Result<(), DbErr> {
    api_key::Entity::insert(api_key::ActiveModel::from(row)).exec(db).await?;
    Ok(())
}

/// Records when the key was last used (written behind the request).
pub async fn touch(db: &DatabaseConnection, id: &str, at: i64) -> Result<(), DbErr> {
    let row = api_key::ActiveModel { id: Set(id.to_owned()), last_used_at: Set(Some(at)), ..Default::default() };
    // A key revoked meanwhile has no row to update: nothing to do.
    match api_key::Entity::update(row).exec(db).await {
        Ok(_) | Err(DbErr::RecordNotUpdated) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the key; `false` when no such key existed.
pub async fn delete(db: &DatabaseConnection, id: &str) -> Result<bool, DbErr> {
    match api_key::Entity::find_by_id(id.to_owned()).one(db).await? {
        Some(row) => Ok(row.delete(db).await?.rows_affected > 0),
        None => Ok(false),
    }
}
