//! Persistence: the connection, migrations, and one repository per table.
//! Queries live here only; services call repositories.

pub mod affinity;
pub mod aliases;
pub mod api_keys;
pub mod combos;
pub mod connections;
pub mod dashboard_sessions;
pub mod entities;
pub mod feed;
pub mod files;
pub mod instances;
pub mod leases;
pub mod lockouts;
pub mod logs;
pub mod resilience;
pub mod settings;
pub mod slots;
pub mod stashes;

use migrations::{Migrator, MigratorTrait};
use sea_orm::{
    ConnectOptions, Database, DatabaseConnection, DbErr,
    sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous},
};
use std::time::Duration;

/// Opens the database at `url` (SQLite file or Postgres) and applies every
/// pending migration. SQLite files are created when missing and run in WAL
/// mode (the write-behind log writer does not block dashboard reads) with
/// `synchronous=NORMAL`, the safe setting for WAL: a commit is not fsynced
/// on its own, so request-log batches cost no disk flush each. The files
/// are private to the gateway's user ([`files`]).
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    files::private_sqlite_files(url).map_err(|e| DbErr::Custom(format!("creating the database file: {e}")))?;
    let url = if url.starts_with("sqlite:") && !url.contains("mode=") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}mode=rwc")
    } else {
        url.to_owned()
    };
    let mut opts = ConnectOptions::new(url);
    opts.max_connections(8)
        .min_connections(1)
        .connect_timeout(Duration::from_secs(10))
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|o| o.journal_mode(SqliteJournalMode::Wal).synchronous(SqliteSynchronous::Normal));
    let db = Database::connect(opts).await?;
    Migrator::up(&db, None).await?;
    Ok(db)
}
