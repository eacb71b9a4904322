//! The request log's store: rows read back as written, and only the
//! newest are kept.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use server::db::{self, logs, logs::LogRecord};

fn row(i: i64) -> LogRecord {
    LogRecord {
        created_at: i,
        request_id: format!("r{i}"),
        endpoint: "/v1/chat/completions".into(),
        provider: "openai".into(),
        model: "m".into(),
        status: 200,
        latency_ms: 1,
        ..Default::default()
    }
}

/// A row with every column set, each to a value of its own.
fn full_row(i: i64) -> LogRecord {
    LogRecord {
        id: 0,
        created_at: 1_700_000_000_000 + i,
        request_id: format!("req-{i}"),
        endpoint: "/v1/messages".into(),
        provider: "anthropic".into(),
        connection_id: Some(format!("conn-{i}")),
        model: "claude-sonnet".into(),
        status: 429,
        latency_ms: 1234 + i,
        ttfb_ms: Some(56),
        stream: i % 2 == 0,
        prompt_tokens: Some(7),
        completion_tokens: Some(8),
        cached_tokens: Some(9),
        error_kind: Some("rate_limited".into()),
        error_message: Some("slow down".into()),
        egress_ip: Some("10.0.0.1".into()),
        refused: i % 3 == 0,
        wait_ms: 350,
        key_id: Some("key-1".into()),
    }
}

/// 40 rows (two statements) go in and come back column for column.
async fn rows_read_back_as_written(db: &sea_orm::DatabaseConnection) {
    let written: Vec<LogRecord> = (0..40).map(full_row).collect();
    logs::insert_batch(db, written.clone()).await.unwrap();
    let mut read = logs::list(db, &logs::LogFilter { limit: 100, ..Default::default() }).await.unwrap();
    read.reverse();
    assert!(read.windows(2).all(|w| w[0].id < w[1].id), "ids grow in insertion order");
    let read: Vec<LogRecord> = read.into_iter().map(|r| LogRecord { id: 0, ..r }).collect();
    assert_eq!(read, written);
}

#[tokio::test]
async fn a_stored_row_reads_back_column_for_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = db::connect(&format!("sqlite://{}/t.db", dir.path().display())).await.unwrap();
    rows_read_back_as_written(&db).await;
}

#[cfg(feature = "postgres-tests")]
#[tokio::test]
async fn a_stored_row_reads_back_column_for_column_on_postgres() {
    let db = db::connect(&common::fresh_postgres_database().await).await.unwrap();
    rows_read_back_as_written(&db).await;
}

#[tokio::test]
async fn prune_keeps_the_newest_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = db::connect(&format!("sqlite://{}/t.db", dir.path().display())).await.unwrap();
    logs::insert_batch(&db, (0..25).map(row).collect()).await.unwrap();
    assert_eq!(logs::prune(&db, 10).await.unwrap(), 15);
    let left = logs::list(&db, &logs::LogFilter { limit: 100, ..Default::default() }).await.unwrap();
    let ids: Vec<String> = left.iter().map(|r| r.request_id.clone()).collect();
    assert_eq!(ids, (15..25).rev().map(|i| format!("r{i}")).collect::<Vec<_>>());
    assert_eq!(logs::prune(&db, 10).await.unwrap(), 0, "nothing more to prune");
}
