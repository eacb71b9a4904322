//! The `provider_connections` table.

use super::entities::provider_connection;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, IntoActiveModel, QueryFilter, QueryOrder, Statement, TransactionTrait, sea_query::Expr,
};

pub use provider_connection::Model as ConnectionRow;

/// On a shared database (Postgres), waits until no other instance is
/// refreshing `id`'s OAuth tokens and holds that turn until the returned
/// transaction ends (commit or drop). `None` on SQLite: one instance,
/// whose own turn is enough.
pub async fn refresh_turn(db: &DatabaseConnection, id: &str) -> Result<Option<DatabaseTransaction>, DbErr> {
    if !super::feed::shared(db) {
        return Ok(None);
    }
    let txn = db.begin().await?;
    let sql = "SELECT pg_advisory_xact_lock(hashtext($1))";
    txn.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, [format!("oauth-refresh:{id}").into()]))
        .await?;
    Ok(Some(txn))
}

/// Every connection, in routing order: priority, then age.
pub async fn list(db: &DatabaseConnection, provider: Option<&str>) -> Result<Vec<ConnectionRow>, DbErr> {
    let mut q = provider_connection::Entity::find();
    if let Some(p) = provider {
        q = q.filter(provider_connection::Column::Provider.eq(p));
    }
    q.order_by_asc(provider_connection::Column::Priority)
        .order_by_asc(provider_connection::Column::CreatedAt)
        .all(db)
        .await
}

pub async fn get(db: &DatabaseConnection, id: &str) -> Result<Option<ConnectionRow>, DbErr> {
    provider_connection::Entity::find_by_id(id.to_owned()).one(db).await
}

pub async fn insert(db: &DatabaseConnection, row: ConnectionRow) -> Result<(), DbErr> {
    provider_connection::Entity::insert(provider_connection::ActiveModel::from(row)).exec(db).await?;
    Ok(())
}

/// Writes every column of `row` (an edited copy of a stored row).
pub async fn save(db: &DatabaseConnection, row: ConnectionRow) -> Result<(), DbErr> {
    row.into_active_model().reset_all().update(db).await?;
    Ok(())
}

/// Writes only `row`'s credential (a refreshed OAuth token set), leaving
/// every other column as it is stored.
pub async fn set_credential(db: &DatabaseConnection, row: &ConnectionRow) -> Result<(), DbErr> {
    use provider_connection::Column as C;
    provider_connection::Entity::update_many()
        .col_expr(C::CredentialEnc, Expr::value(row.credential_enc.clone()))
        .col_expr(C::CredentialSuffix, Expr::value(row.credential_suffix.clone()))
        .col_expr(C::UpdatedAt, Expr::value(row.updated_at))
        .filter(C::Id.eq(row.id.as_str()))
        .exec(db)
        .await?;
    Ok(())
}

/// Stores what the provider last stated of connection `id`'s plan windows.
pub async fn set_plan_usage(db: &DatabaseConnection, id: &str, json: String) -> Result<(), DbErr> {
    use provider_connection::Column as C;
    provider_connection::Entity::update_many()
        .col_expr(C::PlanUsage, Expr::value(json))
        .filter(C::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes the connection; `false` when no such connection existed.
pub async fn delete(db: &DatabaseConnection, id: &str) -> Result<bool, DbErr> {
    let res = provider_connection::Entity::delete_by_id(id.to_owned()).exec(db).await?;
    Ok(res.rows_affected > 0)
}
