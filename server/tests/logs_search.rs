//! The Logs page's search over real rows: connections by name,
//! case-insensitive substrings taken literally, status classes, time
//! windows and the older-page cursor.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use app::types::{LogSearch, StatusClass};
use common::Gateway;
use server::db::logs::{self, LogRecord};

fn row(i: i64, provider: &str, model: &str, connection: Option<&str>, status: i32, at: i64) -> LogRecord {
    LogRecord {
        created_at: at,
        request_id: format!("r{i}"),
        endpoint: "/v1/chat/completions".into(),
        provider: provider.into(),
        connection_id: connection.map(str::to_owned),
        model: model.into(),
        status,
        latency_ms: 1,
        ..Default::default()
    }
}

#[tokio::test]
async fn the_logs_search_filters_by_name_substring_class_window_and_pages() {
    let (fake, gw) = Gateway::with_fake().await;
    let main = gw.add_connection("openai", "Main-Box", "sk-main-1", &common::v1(&fake), 0).await;
    let spare = gw.add_connection("deepseek", "spare", "sk-spare-1", &common::v1(&fake), 0).await;
    let now = gw.state.clock.now_ms();
    let rows = vec![
        row(1, "openai", "gpt-4o-mini", Some(&main), 200, now - 2 * 3_600_000),
        row(2, "openai", "GPT_4o", Some(&main), 429, now - 1000),
        row(3, "deepseek", "deepseek-chat", Some(&spare), 503, now - 1000),
        row(4, "deepseek", "deepseek-chat", Some(&spare), 400, now - 1000),
        row(5, "openai", "gpt-4o-mini", None, 0, now - 1000),
    ];
    logs::insert_batch(&gw.state.db, rows).await.unwrap();
    let ids = |s: LogSearch| {
        let state = gw.state.clone();
        async move {
            let list = server::services::logs::search(&state, s, 100).await.unwrap();
            list.logs.iter().map(|r| r.request_id.clone()).collect::<Vec<_>>()
        }
    };
    let by = |f: fn(&mut LogSearch)| {
        let mut s = LogSearch::default();
        f(&mut s);
        s
    };
    assert_eq!(ids(by(|s| s.connection = Some("main-b".into()))).await, ["r2", "r1"], "by name, any case");
    assert_eq!(ids(by(|s| s.provider = Some("SEEK".into()))).await, ["r4", "r3"]);
    assert_eq!(ids(by(|s| s.model = Some("4o_".into()))).await, Vec::<String>::new(), "`_` is no wildcard");
    assert_eq!(ids(by(|s| s.model = Some("t_4".into()))).await, ["r2"]);
    assert_eq!(ids(by(|s| s.status = Some(StatusClass::ClientError))).await, ["r4"], "4xx leaves 429 out");
    assert_eq!(ids(by(|s| s.status = Some(StatusClass::RateLimited))).await, ["r2"]);
    assert_eq!(ids(by(|s| s.status = Some(StatusClass::Transport))).await, ["r5"]);
    assert_eq!(ids(by(|s| s.window = Some("1h".into()))).await, ["r5", "r4", "r3", "r2"]);

    let list = server::services::logs::search(&gw.state, LogSearch::default(), 2).await.unwrap();
    assert_eq!(list.logs.iter().map(|r| r.connection_name.as_deref()).collect::<Vec<_>>(), [None, Some("spare")]);
    let older = list.older.expect("a full page has an older one");
    let next = server::services::logs::search(&gw.state, LogSearch { before: Some(older), ..Default::default() }, 2)
        .await
        .unwrap();
    assert_eq!(next.logs.iter().map(|r| r.request_id.as_str()).collect::<Vec<_>>(), ["r3", "r2"]);
    gw.stop().await;
}
