//! `cargo xtask heap`: what open streams cost the gateway in memory, and
//! whether it gives the memory back (§T, issue [J] item 2).
//!
//! The release gateway streams from a fake upstream that sends one event
//! and then holds the stream open. The suite runs 500 streams one after
//! another, then opens a burst of `HEAP_BURST` (default 5,000) at once,
//! reads the gateway's RSS while they are all open, closes them, and
//! reads it again `HEAP_SETTLE_SECS` (default 60) later. It prints the
//! figures, the projection for 10,000 streams and the settled level
//! against the pre-burst one, and fails — as a regression guard — when an
//! open stream costs more than `HEAP_MAX_KB_PER_STREAM` (default 52 KB)
//! or less than [`MIN_RETURNED_PERCENT`] of what the burst added has come
//! back. Both bounds sit just outside the spread of runs of unchanged
//! code (41–47 KB, 89–96 % back on 2026-12-02), so a guard trips on a
//! regression, not on glibc's mood.

use anyhow::{Context, bail};
use serde_json::json;
use std::{sync::Arc, time::Duration};
use tokio::sync::Barrier;

use crate::{
    e2e::start_stack,
    util::{self, step},
};

/// The gateway's resident set, in KB.
pub fn rss_kb(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .context("no VmRSS")
}

/// The share of a burst's memory that must be back a minute after it.
const MIN_RETURNED_PERCENT: u64 = 80;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub fn run() -> anyhow::Result<()> {
    let burst = env_u64("HEAP_BURST", 5_000);
    let settle = Duration::from_secs(env_u64("HEAP_SETTLE_SECS", 60));
    let max_kb_per_stream = env_u64("HEAP_MAX_KB_PER_STREAM", 52);
    util::build_release_stack()?;
    let data_dir = util::target_dir().join(format!("heap-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    // Without request-queue pacing, so a burst is a burst.
    let env = [
        ("OMNIROUTE_MANAGEMENT_KEY", "heap-key"),
        ("STREAM_IDLE_TIMEOUT_MS", "600000"),
        ("RATE_LIMIT_AUTO_ENABLE", "false"),
    ];
    let result = (|| {
        let (gateway, _fake, gw, fake_url) = start_stack("release", &data_dir, "warn,omniroute=info", &env)?;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        rt.block_on(measure(gateway.pid(), &gw, &fake_url, burst, settle, max_kb_per_stream))
    })();
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}

async fn measure(pid: u32, gw: &str, fake: &str, burst: u64, settle: Duration, max_kb: u64) -> anyhow::Result<()> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    let api = |m: reqwest::Method, path: &str| http.request(m, format!("{gw}{path}")).bearer_auth("heap-key");
    let conn = json!({"provider": "openai", "name": "slow", "apiKey": "sk-heap", "baseUrl": format!("{fake}/v1")});
    api(reqwest::Method::POST, "/api/providers").json(&conn).send().await?.error_for_status()?;
    // One event, then the stream stays open until the client leaves.
    let rule = json!({"stallAfterChunks": 1});
    http.post(format!("{fake}/_control/rules")).json(&rule).send().await?.error_for_status()?;
    let start = rss_kb(pid)?;

    step("500 sequential streams");
    for _ in 0..500 {
        let mut resp = open_stream(&http, gw).await?;
        resp.chunk().await?;
    }
    let after_sequential = rss_kb(pid)?;

    step(&format!("a burst of {burst} concurrent streams"));
    let barrier = Arc::new(Barrier::new(usize::try_from(burst)? + 1));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..burst {
        let (http, gw, barrier) = (http.clone(), gw.to_owned(), barrier.clone());
        tasks.spawn(async move {
            let mut resp = open_stream(&http, &gw).await;
            let first = match resp.as_mut() {
                Ok(r) => r.chunk().await.map(|c| c.is_some()).unwrap_or(false),
                Err(_) => false,
            };
            barrier.wait().await;
            // Hold the stream until every other one is open and measured.
            barrier.wait().await;
            first
        });
    }
    barrier.wait().await;
    let peak = rss_kb(pid)?;
    barrier.wait().await;
    let mut opened = 0;
    while let Some(r) = tasks.join_next().await {
        opened += u64::from(r?);
    }
    if opened < burst {
        bail!("only {opened} of {burst} streams got their first event");
    }
    step(&format!("closed; waiting {} s for the memory to come back", settle.as_secs()));
    tokio::time::sleep(settle).await;
    let settled = rss_kb(pid)?;

    let added = peak.saturating_sub(after_sequential);
    let per_stream = added / burst;
    let projected_10k_mb = (after_sequential + per_stream * 10_000) / 1024;
    let above_pre_burst = (settled as f64 / after_sequential as f64 - 1.0) * 100.0;
    println!(
        "heap: start {} MB, after 500 sequential {} MB, {burst} open streams {} MB ({per_stream} KB each; 10,000 would be ~{projected_10k_mb} MB), {} s after closing {} MB ({above_pre_burst:+.0} % of the pre-burst level)",
        start / 1024,
        after_sequential / 1024,
        peak / 1024,
        settle.as_secs(),
        settled / 1024
    );
    if per_stream > max_kb {
        bail!("an open stream costs {per_stream} KB (at most {max_kb} KB)");
    }
    if settled.saturating_sub(after_sequential) * 100 > added * (100 - MIN_RETURNED_PERCENT) {
        bail!(
            "RSS stayed at {} MB after the burst (before it: {} MB, at its peak {} MB): less than {MIN_RETURNED_PERCENT} % came back",
            settled / 1024,
            after_sequential / 1024,
            peak / 1024
        );
    }
    Ok(())
}

async fn open_stream(http: &reqwest::Client, gw: &str) -> anyhow::Result<reqwest::Response> {
    let body = json!({"model": "openai/gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    Ok(http.post(format!("{gw}/v1/chat/completions")).json(&body).send().await?.error_for_status()?)
}
