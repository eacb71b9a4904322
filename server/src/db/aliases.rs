//! The `model_aliases` table: one row per alias.

use app::types::alias::Alias;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, QueryOrder, sea_query::OnConflict};

use super::entities::model_alias;

pub async fn list(db: &DatabaseConnection) -> Result<Vec<Alias>, DbErr> {
    let rows = model_alias::Entity::find().order_by_asc(model_alias::Column::Alias).all(db).await?;
    Ok(rows.into_iter().map(|r| Alias { alias: r.alias, model: r.target }).collect())
}

/// Inserts or re-points the alias.
pub async fn put(db: &DatabaseConnection, a: &Alias, now: i64) -> Result<(), DbErr> {
    let row =
        model_alias::ActiveModel { alias: Set(a.alias.clone()), target: Set(a.model.clone()), created_at: Set(now) };
    model_alias::Entity::insert(row)
        .on_conflict(
            OnConflict::column(model_alias::Column::Alias).update_column(model_alias::Column::Target).to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes the alias; `false` when there was none.
pub async fn delete(db: &DatabaseConnection, alias: &str) -> Result<bool, DbErr> {
    Ok(model_alias::Entity::delete_by_id(alias.to_owned()).exec(db).await?.rows_affected > 0)
}
