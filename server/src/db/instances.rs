//! The `gateway_instances` table: each instance's heartbeat on a shared
//! database (`services::instances`), read by Health.

use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    sea_query::OnConflict,
};

use super::entities::gateway_instance as row;

/// Stores this instance's heartbeat, and forgets instances not heard
/// since `forget_before`.
pub async fn beat(db: &DatabaseConnection, instance: row::Model, forget_before: i64) -> Result<(), DbErr> {
    row::Entity::delete_many().filter(row::Column::LastSeenAt.lt(forget_before)).exec(db).await?;
    let r = row::ActiveModel {
        id: Set(instance.id),
        version: Set(instance.version),
        started_at: Set(instance.started_at),
        last_seen_at: Set(instance.last_seen_at),
        caught_up: Set(instance.caught_up),
    };
    use row::Column as C;
    row::Entity::insert(r)
        .on_conflict(OnConflict::column(C::Id).update_columns([C::Version, C::LastSeenAt, C::CaughtUp]).to_owned())
        .exec(db)
        .await?;
    Ok(())
}

/// Every instance heard recently, oldest first.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<row::Model>, DbErr> {
    row::Entity::find().order_by_asc(row::Column::StartedAt).all(db).await
}

/// An instance stopping cleanly leaves the list.
pub async fn remove(db: &DatabaseConnection, id: &str) -> Result<(), DbErr> {
    row::Entity::delete_by_id(id).exec(db).await?;
    Ok(())
}
