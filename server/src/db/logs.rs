//! The `proxy_logs` table: batch inserts from the write-behind sink,
//! filtered reads for the API, and count-bounded retention.

use super::entities::proxy_log;
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
    TransactionTrait,
};

pub use proxy_log::Model as LogRecord;

/// Filters of `GET /api/logs`.
#[derive(Debug, Default, Clone)]
pub struct LogFilter {
    pub limit: u64,
    pub provider: Option<String>,
    pub status: Option<i32>,
    /// Epoch ms; only rows at or after it.
    pub since: Option<i64>,
}

/// Rows per INSERT statement. Every chunk size up to this gets its own
/// prepared statement, cached per connection, so a batch costs one round
/// trip to the database per chunk and no re-preparing.
const INSERT_CHUNK: usize = 32;

/// Inserts rows in one transaction, in multi-row chunks.
pub async fn insert_batch(db: &DatabaseConnection, mut rows: Vec<proxy_log::ActiveModel>) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let txn = db.begin().await?;
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(INSERT_CHUNK));
        proxy_log::Entity::insert_many(std::mem::replace(&mut rows, rest)).exec_without_returning(&txn).await?;
    }
    txn.commit().await
}

/// Newest first.
pub async fn list(db: &DatabaseConnection, f: &LogFilter) -> Result<Vec<LogRecord>, DbErr> {
    let mut q = proxy_log::Entity::find();
    if let Some(p) = &f.provider {
        q = q.filter(proxy_log::Column::Provider.eq(p.as_str()));
    }
    if let Some(s) = f.status {
        q = q.filter(proxy_log::Column::Status.eq(s));
    }
    if let Some(since) = f.since {
        q = q.filter(proxy_log::Column::CreatedAt.gte(since));
    }
    q.order_by_desc(proxy_log::Column::Id).limit(f.limit).all(db).await
}

/// The newest egress IP each connection was seen leaving from since
/// `since` (epoch ms): `(connection_id, ip, created_at)` — read at start
/// for the egress-bucketed lock (SPEC §R7).
pub async fn recent_egress(db: &DatabaseConnection, since: i64) -> Result<Vec<(String, String, i64)>, DbErr> {
    use sea_orm::sea_query::{Expr, Func};
    proxy_log::Entity::find()
        .select_only()
        .column(proxy_log::Column::ConnectionId)
        .column(proxy_log::Column::EgressIp)
        .column_as(Expr::expr(Func::max(Expr::col(proxy_log::Column::CreatedAt))), "at")
        .filter(proxy_log::Column::CreatedAt.gte(since))
        .filter(proxy_log::Column::ConnectionId.is_not_null())
        .filter(proxy_log::Column::EgressIp.is_not_null())
        .group_by(proxy_log::Column::ConnectionId)
        .group_by(proxy_log::Column::EgressIp)
        .into_tuple()
        .all(db)
        .await
}

/// Deletes all but the newest `keep` rows; returns how many went.
pub async fn prune(db: &DatabaseConnection, keep: u64) -> Result<u64, DbErr> {
    let total = proxy_log::Entity::find().count(db).await?;
    if total <= keep {
        return Ok(0);
    }
    let cutoff: Option<i64> = proxy_log::Entity::find()
        .select_only()
        .column(proxy_log::Column::Id)
        .order_by_desc(proxy_log::Column::Id)
        .offset(keep)
        .limit(1)
        .into_tuple()
        .one(db)
        .await?;
    let Some(cutoff) = cutoff else { return Ok(0) };
    let res = proxy_log::Entity::delete_many().filter(proxy_log::Column::Id.lte(cutoff)).exec(db).await?;
    Ok(res.rows_affected)
}
