//! The `session_leases` table (SPEC §R2.3): every lease taken, active or
//! ended. The lifecycle writes through (it is rare and must be durable);
//! the unique `active_owner` / `active_connection` columns refuse a second
//! active lease of one owner or on one connection, whichever process asks.

use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect, SqlErr, sea_query::Expr,
};

use super::entities::session_lease as row;

/// What taking a lease came to in the database.
pub enum Taken {
    Yes,
    /// An active lease already holds the owner or the connection.
    Conflict,
}

/// Ends the expired active leases that hold `connection_id` or `owner_hex`,
/// freeing their slots.
pub async fn clear_expired(
    db: &DatabaseConnection,
    connection_id: &str,
    owner_hex: &str,
    now: i64,
) -> Result<(), DbErr> {
    row::Entity::update_many()
        .col_expr(row::Column::State, Expr::value("EXPIRED"))
        .col_expr(row::Column::ActiveOwner, Expr::value(Option::<String>::None))
        .col_expr(row::Column::ActiveConnection, Expr::value(Option::<String>::None))
        .filter(
            Condition::any()
                .add(row::Column::ActiveConnection.eq(connection_id))
                .add(row::Column::ActiveOwner.eq(owner_hex)),
        )
        .filter(row::Column::ExpiresAt.lte(now))
        .exec(db)
        .await?;
    Ok(())
}

/// The highest generation the owner ever held (0: none).
pub async fn last_generation(db: &DatabaseConnection, owner_hex: &str) -> Result<u64, DbErr> {
    let max: Option<Option<i64>> = row::Entity::find()
        .select_only()
        .column_as(row::Column::Generation.max(), "max")
        .filter(row::Column::OwnerHash.eq(owner_hex))
        .into_tuple()
        .one(db)
        .await?;
    Ok(max.flatten().map_or(0, |g| u64::try_from(g).unwrap_or(0)))
}

/// Inserts an active lease row (see `routing::leases::Lease::active_row`).
pub async fn insert(db: &DatabaseConnection, active: row::Model) -> Result<Taken, DbErr> {
    let r = row::ActiveModel::from(active);
    match row::Entity::insert(r).exec(db).await {
        Ok(_) => Ok(Taken::Yes),
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(Taken::Conflict),
        Err(e) => Err(e),
    }
}

pub async fn renew(db: &DatabaseConnection, id: &str, expires_at: i64) -> Result<(), DbErr> {
    row::Entity::update_many()
        .col_expr(row::Column::ExpiresAt, Expr::value(expires_at))
        .filter(row::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

pub async fn release(db: &DatabaseConnection, id: &str, now: i64, reason: Option<&str>) -> Result<(), DbErr> {
    row::Entity::update_many()
        .col_expr(row::Column::State, Expr::value("RELEASED"))
        .col_expr(row::Column::ActiveOwner, Expr::value(Option::<String>::None))
        .col_expr(row::Column::ActiveConnection, Expr::value(Option::<String>::None))
        .col_expr(row::Column::ReleasedAt, Expr::value(now))
        .col_expr(row::Column::ReleaseReason, Expr::value(reason.map(str::to_owned)))
        .filter(row::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// The owner's active, unexpired lease, if any (the fence on a shared database).
pub async fn active_of(db: &DatabaseConnection, owner_hex: &str, now: i64) -> Result<Option<row::Model>, DbErr> {
    row::Entity::find()
        .filter(row::Column::ActiveOwner.eq(owner_hex))
        .filter(row::Column::ExpiresAt.gt(now))
        .one(db)
        .await
}

/// The active, unexpired leases (at start).
pub async fn load_active(db: &DatabaseConnection, now: i64) -> Result<Vec<row::Model>, DbErr> {
    row::Entity::find()
        .filter(row::Column::ActiveOwner.is_not_null())
        .filter(row::Column::ExpiresAt.gt(now))
        .all(db)
        .await
}
