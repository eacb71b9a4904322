//! The request log keeps only the newest rows.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use sea_orm::{ActiveValue::Set, NotSet};
use server::db::{self, entities::proxy_log, logs};

fn row(i: i64) -> proxy_log::ActiveModel {
    proxy_log::ActiveModel {
        id: NotSet,
        created_at: Set(i),
        request_id: Set(format!("r{i}")),
        endpoint: Set("/v1/chat/completions".into()),
        provider: Set("openai".into()),
        connection_id: Set(None),
        model: Set("m".into()),
        status: Set(200),
        latency_ms: Set(1),
        ttfb_ms: Set(None),
        stream: Set(false),
        prompt_tokens: Set(None),
        completion_tokens: Set(None),
        cached_tokens: Set(None),
        error_kind: Set(None),
        error_message: Set(None),
        egress_ip: Set(None),
        refused: Set(false),
        wait_ms: Set(0),
        key_id: Set(None),
    }
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
