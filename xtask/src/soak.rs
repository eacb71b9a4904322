//! `cargo xtask soak [--minutes N]`: the release gateway under steady load
//! for a long time (opt-in; §T, issue [J] item 8).
//!
//! `SOAK_RATE` (default 100) proxied requests a second — alternately a
//! plain answer and a stream — plus `GET /api/monitoring/health` 20 times
//! a second, both on a fixed schedule, for N minutes (default 30). Every
//! minute prints both sides' p50 / p95 / p99, their errors and the
//! gateway's RSS. Fails when over the whole run the proxy's p95 exceeds
//! `SOAK_P95_MS` (default 10), its p99 `SOAK_P99_MS` (default 25), or
//! either side's error rate `SOAK_MAX_ERROR_RATE` (default 0.001); the
//! health endpoint gets the same latency limits times four (it reads the
//! request log's aggregates, which grow through the run).

use anyhow::bail;
use serde_json::json;
use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use loadgen::paced::{self, Samples};

use crate::{
    e2e::start_stack,
    util::{self, step},
};

const MGMT_KEY: &str = "soak-key";
const HEALTH_PER_SEC: f64 = 20.0;

struct Limits {
    p95_ms: f64,
    p99_ms: f64,
    error_rate: f64,
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let minutes: u64 = util::flag(args, "--minutes")?.unwrap_or(30);
    let rate = env_f64("SOAK_RATE", 100.0);
    let limits = Limits {
        p95_ms: env_f64("SOAK_P95_MS", 10.0),
        p99_ms: env_f64("SOAK_P99_MS", 25.0),
        error_rate: env_f64("SOAK_MAX_ERROR_RATE", 0.001),
    };
    util::build_release_stack()?;
    let data_dir = util::target_dir().join(format!("soak-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let env = [("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY), ("RATE_LIMIT_AUTO_ENABLE", "false")];
    let result = (|| {
        let (gateway, _fake, gw, fake_url) = start_stack("release", &data_dir, "warn,omniroute=info", &env)?;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        rt.block_on(soak(gateway.pid(), &gw, &fake_url, minutes, rate, &limits))
    })();
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}

async fn soak(pid: u32, gw: &str, fake: &str, minutes: u64, rate: f64, limits: &Limits) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let conn = json!({"provider": "openai", "name": "fake", "apiKey": "sk-soak", "baseUrl": format!("{fake}/v1")});
    let add = http.post(format!("{gw}/api/providers")).bearer_auth(MGMT_KEY).json(&conn);
    add.send().await?.error_for_status()?;
    let sent = AtomicU64::new(0);
    let proxy = || {
        let stream = sent.fetch_add(1, Ordering::Relaxed) % 2 == 1;
        let body = json!({"model": "openai/fake-model", "stream": stream,
                          "messages": [{"role": "user", "content": "hi"}]});
        paced::status_of(http.post(format!("{gw}/v1/chat/completions")).json(&body))
    };
    let health = || paced::status_of(http.get(format!("{gw}/api/monitoring/health")).bearer_auth(MGMT_KEY));
    step(&format!("soak: {minutes} min, {rate} proxied requests/s + {HEALTH_PER_SEC} health reads/s"));
    let (mut proxied, mut read) = (Samples::default(), Samples::default());
    let rss_start = crate::heap::rss_kb(pid)?;
    let mut rss_end = rss_start;
    for minute in 1..=minutes {
        let window = Duration::from_secs(60);
        let (p, h) = tokio::join!(paced::run(rate, window, proxy), paced::run(HEALTH_PER_SEC, window, health));
        rss_end = crate::heap::rss_kb(pid)?;
        eprintln!("min {minute:>3}: proxy {} | health {} | RSS {} MB", p.summary(), h.summary(), rss_end / 1024);
        proxied.merge(p);
        read.merge(h);
    }
    let side = |s: &Samples| {
        json!({"sent": s.sent(), "p50Ms": s.quantile(0.5), "p95Ms": s.quantile(0.95), "p99Ms": s.quantile(0.99),
               "errorRate": s.error_rate(), "statuses": format!("{:?}", s.statuses)})
    };
    let report = json!({"minutes": minutes, "proxy": side(&proxied), "health": side(&read),
                        "rssStartMb": rss_start / 1024, "rssEndMb": rss_end / 1024});
    println!("{report}");
    let mut failed = Vec::new();
    for (name, s, scale) in [("proxy", &proxied, 1.0), ("health", &read, 4.0)] {
        if s.quantile(0.95) > limits.p95_ms * scale {
            failed.push(format!("{name} p95 {:.2} ms > {} ms", s.quantile(0.95), limits.p95_ms * scale));
        }
        if s.quantile(0.99) > limits.p99_ms * scale {
            failed.push(format!("{name} p99 {:.2} ms > {} ms", s.quantile(0.99), limits.p99_ms * scale));
        }
        if s.error_rate() > limits.error_rate {
            failed.push(format!("{name} error rate {:.4} > {}", s.error_rate(), limits.error_rate));
        }
    }
    if !failed.is_empty() {
        bail!("soak thresholds missed: {}", failed.join("; "));
    }
    Ok(())
}
