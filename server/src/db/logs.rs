//! The `proxy_logs` table: batch inserts from the write-behind sink,
//! filtered reads for the API, and count-bounded retention.

use super::entities::proxy_log;
use app::types::{StatusClass, usage::UsageGroupBy};
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, RuntimeErr,
    sea_query::{Expr, ExprTrait, Func, LikeExpr, SimpleExpr},
    sqlx::{self, AssertSqlSafe, Database, Encode, Error as SqlxError, Executor, IntoArguments, Pool, Type},
};
use std::{fmt::Write, sync::Arc};

pub use proxy_log::Model as LogRecord;

/// Filters of `GET /api/logs` and the Logs page.
#[derive(Debug, Default, Clone)]
pub struct LogFilter {
    pub limit: u64,
    pub provider: Option<String>,
    pub status: Option<i32>,
    /// Epoch ms; only rows at or after it.
    pub since: Option<i64>,
    /// Case-insensitive substrings of the provider and the model.
    pub provider_contains: Option<String>,
    pub model_contains: Option<String>,
    /// Only these connections.
    pub connection_ids: Option<Vec<String>>,
    pub status_class: Option<StatusClass>,
    /// Only rows older than this id (the next page).
    pub before_id: Option<i64>,
    /// One client request's rows, oldest first (its attempt trail).
    pub request_id: Option<String>,
}

/// `lower(column) LIKE '%text%'`, with the text's own `%`, `_` and `\`
/// taken literally.
fn contains(column: proxy_log::Column, text: &str) -> SimpleExpr {
    let escaped: String = text
        .to_lowercase()
        .chars()
        .flat_map(|c| match c {
            '%' | '_' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    Expr::expr(Func::lower(Expr::col(column))).like(LikeExpr::new(format!("%{escaped}%")).escape('\\'))
}

fn in_class(class: StatusClass) -> SimpleExpr {
    let status = proxy_log::Column::Status;
    match class {
        StatusClass::Success => status.between(200, 299),
        StatusClass::ClientError => status.between(400, 499).and(status.ne(429)),
        StatusClass::RateLimited => status.eq(429),
        StatusClass::ServerError => status.between(500, 599),
        StatusClass::Transport => status.eq(0),
    }
}

/// Rows per INSERT statement. Every chunk size up to this gets its own
/// prepared statement, cached per connection, so a batch costs one round
/// trip to the database per chunk and no re-preparing.
const INSERT_CHUNK: usize = 32;

/// The columns a new row fills, in the order [`insert_chunks`] binds them.
const COLUMNS: [&str; 19] = [
    "created_at",
    "request_id",
    "endpoint",
    "provider",
    "connection_id",
    "model",
    "status",
    "latency_ms",
    "ttfb_ms",
    "stream",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "error_kind",
    "error_message",
    "egress_ip",
    "refused",
    "wait_ms",
    "key_id",
];

/// `INSERT INTO proxy_logs (…) VALUES (…), …` for `rows` rows, with the
/// backend's placeholders.
fn insert_sql(backend: DbBackend, rows: usize) -> String {
    let mut sql = format!("INSERT INTO proxy_logs ({}) VALUES ", COLUMNS.join(", "));
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for col in 0..COLUMNS.len() {
            if col > 0 {
                sql.push_str(", ");
            }
            match backend {
                DbBackend::Postgres => {
                    let _ = write!(sql, "${}", row * COLUMNS.len() + col + 1);
                }
                _ => sql.push('?'),
            }
        }
        sql.push(')');
    }
    sql
}

/// Inserts rows (their `id`s ignored) in one transaction, in multi-row
/// chunks. The statement is written and its values bound here, on the
/// pool under sea-orm, rather than by the query builder: the log writer
/// runs on the gateway's own cores, and building and cloning every value
/// through sea-query (and again through sea-orm's binding) cost it more
/// than the database's insert itself.
pub async fn insert_batch(db: &DatabaseConnection, rows: Vec<LogRecord>) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    match db.get_database_backend() {
        DbBackend::Postgres => insert_chunks(db.get_postgres_connection_pool(), DbBackend::Postgres, rows).await,
        _ => insert_chunks(db.get_sqlite_connection_pool(), DbBackend::Sqlite, rows).await,
    }
    .map_err(|e| DbErr::Exec(RuntimeErr::SqlxError(Arc::new(e))))
}

/// [`insert_batch`] on one backend's pool (SQLite's or Postgres').
async fn insert_chunks<DB: Database>(pool: &Pool<DB>, backend: DbBackend, rows: Vec<LogRecord>) -> Result<(), SqlxError>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> i32: Encode<'e, DB> + Type<DB>,
    for<'e> bool: Encode<'e, DB> + Type<DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> Option<i64>: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB> + Type<DB>,
{
    let mut txn = pool.begin().await?;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<LogRecord> = rows.by_ref().take(INSERT_CHUNK).collect();
        let sql = insert_sql(backend, chunk.len());
        // Each row's values in `COLUMNS`' order, moved out of it (`id` is
        // the database's to assign).
        let query = chunk.into_iter().fold(sqlx::query(AssertSqlSafe(sql)), |q, r| {
            q.bind(r.created_at)
                .bind(r.request_id)
                .bind(r.endpoint)
                .bind(r.provider)
                .bind(r.connection_id)
                .bind(r.model)
                .bind(r.status)
                .bind(r.latency_ms)
                .bind(r.ttfb_ms)
                .bind(r.stream)
                .bind(r.prompt_tokens)
                .bind(r.completion_tokens)
                .bind(r.cached_tokens)
                .bind(r.error_kind)
                .bind(r.error_message)
                .bind(r.egress_ip)
                .bind(r.refused)
                .bind(r.wait_ms)
                .bind(r.key_id)
        });
        query.execute(&mut *txn).await?;
    }
    txn.commit().await
}

/// Newest first; a request's trail oldest first.
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
    if let Some(p) = &f.provider_contains {
        q = q.filter(contains(proxy_log::Column::Provider, p));
    }
    if let Some(m) = &f.model_contains {
        q = q.filter(contains(proxy_log::Column::Model, m));
    }
    if let Some(ids) = &f.connection_ids {
        q = q.filter(proxy_log::Column::ConnectionId.is_in(ids.iter().map(String::as_str)));
    }
    if let Some(class) = f.status_class {
        q = q.filter(in_class(class));
    }
    if let Some(before) = f.before_id {
        q = q.filter(proxy_log::Column::Id.lt(before));
    }
    if let Some(id) = &f.request_id {
        return q
            .filter(proxy_log::Column::RequestId.eq(id.as_str()))
            .order_by_asc(proxy_log::Column::Id)
            .limit(f.limit)
            .all(db)
            .await;
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

/// The upstream attempts since `since` (epoch ms), for the traffic
/// rollup at start: an indexed range read, once.
pub async fn recent_attempts(db: &DatabaseConnection, since: i64) -> Result<Vec<LogRecord>, DbErr> {
    proxy_log::Entity::find()
        .filter(proxy_log::Column::CreatedAt.gte(since))
        .filter(proxy_log::Column::Refused.eq(false))
        .filter(proxy_log::Column::ConnectionId.is_not_null())
        .all(db)
        .await
}

/// Deletes all but the newest `keep` rows; returns how many went.
///
/// Ids only grow, one per row, so the cutoff is the newest id less `keep`:
/// one index lookup and a range delete of what goes, never a count or an
/// `OFFSET` walk over the rows kept (those cost a scan of the whole
/// retention on every prune, several times a second under load). Ids a
/// failed insert skipped (Postgres sequences) make it keep a few less.
pub async fn prune(db: &DatabaseConnection, keep: u64) -> Result<u64, DbErr> {
    let newest: Option<Option<i64>> = proxy_log::Entity::find()
        .select_only()
        .column_as(proxy_log::Column::Id.max(), "newest")
        .into_tuple()
        .one(db)
        .await?;
    let Some(newest) = newest.flatten() else { return Ok(0) };
    let cutoff = newest.saturating_sub(i64::try_from(keep).unwrap_or(i64::MAX));
    if cutoff <= 0 {
        return Ok(0);
    }
    let res = proxy_log::Entity::delete_many().filter(proxy_log::Column::Id.lte(cutoff)).exec(db).await?;
    Ok(res.rows_affected)
}

/// A usage group's SQL (the same on SQLite and Postgres), as text: the
/// key id, `provider/model`, the connection id, or UTC days since 1970.
fn group_expr(by: UsageGroupBy) -> &'static str {
    match by {
        UsageGroupBy::Key => "key_id",
        UsageGroupBy::Model => "provider || '/' || model",
        UsageGroupBy::Connection => "connection_id",
        UsageGroupBy::Day => "CAST(created_at / 86400000 AS TEXT)",
    }
}

/// One group's requests (distinct request ids) and tokens.
#[derive(Debug, Clone, PartialEq, sea_orm::FromQueryResult)]
pub struct UsageGroup {
    pub grouped: Option<String>,
    pub requests: i64,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cached_tokens: Option<i64>,
}

/// Requests and tokens of the rows in `[since, until)`, grouped, the
/// most requests first.
pub async fn usage(
    db: &DatabaseConnection,
    (since, until): (i64, i64),
    by: UsageGroupBy,
) -> Result<Vec<UsageGroup>, DbErr> {
    let sum = |column: &str| Expr::cust(format!("CAST(SUM({column}) AS BIGINT)"));
    proxy_log::Entity::find()
        .select_only()
        .expr_as(Expr::cust(group_expr(by)), "grouped")
        .expr_as(Expr::cust("COUNT(DISTINCT request_id)"), "requests")
        .expr_as(sum("prompt_tokens"), "input_tokens")
        .expr_as(sum("completion_tokens"), "output_tokens")
        .expr_as(sum("cached_tokens"), "cached_tokens")
        .filter(proxy_log::Column::CreatedAt.gte(since))
        .filter(proxy_log::Column::CreatedAt.lt(until))
        .group_by(Expr::cust(group_expr(by)))
        .order_by_desc(Expr::cust("requests"))
        .into_model::<UsageGroup>()
        .all(db)
        .await
}
