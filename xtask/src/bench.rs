//! `cargo xtask bench`: the gateway against the direct-to-fake baseline in
//! one run, on one machine. Reports ratios, not absolute numbers: the load
//! generator, the gateway and the fake share the cores.
//!
//! Phases (each run directly against the fake, then through the gateway):
//! 1. throughput: c=32 non-stream requests for 10 s after a 2 s warm-up;
//! 2. light load: 20 req/s for 5 s → latency p50/p99, "added" = gateway − direct;
//! 3. streams: 50 sequential stream requests → time to first chunk.
//!
//! Also the gateway's CPU time per request (from /proc, during phase 1) and
//! its RSS idle and under load. Writes `target/bench/latest.json`.

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use crate::{
    e2e::start_stack,
    util::{self, cargo, step},
};

const CONCURRENCY: usize = 32;
const WARMUP: Duration = Duration::from_secs(2);
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(10);
const LIGHT_RATE_PER_SEC: u64 = 20;
const LIGHT_WINDOW: Duration = Duration::from_secs(5);
const STREAM_SAMPLES: usize = 50;
const MGMT_KEY: &str = "bench-management-key";

pub fn run() -> anyhow::Result<()> {
    step("build release binaries");
    util::run(cargo().args(["build", "--release", "-p", "server", "-p", "fake-upstream"]))?;
    let out_dir = util::target_dir().join("bench");
    let data_dir = out_dir.join("data");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&out_dir)?;
    let env = [("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY)];
    let (gateway, fake, gw_url, fake_url) = start_stack("release", &data_dir, "info", &env)?;
    let pid = gateway.pid();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let report = rt.block_on(measure(&gw_url, &fake_url, pid))?;
    drop((gateway, fake));
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::write(out_dir.join("latest.json"), serde_json::to_string_pretty(&report)?)?;
    print_report(&report);
    eprintln!("\nwritten to {}", out_dir.join("latest.json").display());
    Ok(())
}

struct Target {
    name: &'static str,
    url: String,
    model: &'static str,
    key: Option<String>,
}

async fn measure(gw_url: &str, fake_url: &str, pid: u32) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(CONCURRENCY * 2).tcp_nodelay(true).build()?;
    let key = setup_gateway(&http, gw_url, fake_url).await?;
    let direct =
        Target { name: "direct", url: format!("{fake_url}/v1/chat/completions"), model: "fake-model", key: None };
    let gateway = Target {
        name: "gateway",
        url: format!("{gw_url}/v1/chat/completions"),
        model: "openai/fake-model",
        key: Some(key),
    };
    let rss_idle = rss_bytes(pid)?;

    step("throughput (c=32)");
    let d_tp = throughput(&http, &direct, None).await?;
    let cpu_before = cpu_ticks(pid)?;
    let g_tp = throughput(&http, &gateway, Some(pid)).await?;
    let cpu_ticks_used = cpu_ticks(pid)? - cpu_before;
    let ticks_per_sec = 100.0; // USER_HZ on Linux
    let cpu_us_per_req = cpu_ticks_used as f64 / ticks_per_sec * 1e6 / g_tp.completed.max(1) as f64;

    step("light load (20 req/s)");
    let d_light = light_load(&http, &direct).await?;
    let g_light = light_load(&http, &gateway).await?;

    step("streams: time to first chunk");
    let d_ttfb = first_chunk_latencies(&http, &direct).await?;
    let g_ttfb = first_chunk_latencies(&http, &gateway).await?;

    let (dp50, dp99) = (percentile(&d_light, 0.50), percentile(&d_light, 0.99));
    let (gp50, gp99) = (percentile(&g_light, 0.50), percentile(&g_light, 0.99));
    Ok(json!({
        "throughput": {
            "concurrency": CONCURRENCY,
            "windowSecs": THROUGHPUT_WINDOW.as_secs(),
            "directRps": d_tp.rps(),
            "gatewayRps": g_tp.rps(),
            "ratio": g_tp.rps() / d_tp.rps().max(f64::MIN_POSITIVE),
            "gatewayErrors": g_tp.errors,
            "directErrors": d_tp.errors,
        },
        "lightLoadLatencyMs": {
            "ratePerSec": LIGHT_RATE_PER_SEC,
            "direct": {"p50": dp50, "p99": dp99},
            "gateway": {"p50": gp50, "p99": gp99},
            "added": {"p50": gp50 - dp50, "p99": gp99 - dp99},
        },
        "streamFirstChunkMs": {
            "direct": {"p50": percentile(&d_ttfb, 0.5), "p99": percentile(&d_ttfb, 0.99)},
            "gateway": {"p50": percentile(&g_ttfb, 0.5), "p99": percentile(&g_ttfb, 0.99)},
            "addedP50": percentile(&g_ttfb, 0.5) - percentile(&d_ttfb, 0.5),
        },
        "gateway": {
            "cpuMicrosPerRequest": cpu_us_per_req,
            "rssIdleBytes": rss_idle,
            "rssUnderLoadBytes": g_tp.peak_rss,
        },
    }))
}

/// A management-created connection to the fake and a client key.
async fn setup_gateway(http: &reqwest::Client, gw: &str, fake: &str) -> anyhow::Result<String> {
    let resp = http
        .post(format!("{gw}/api/providers"))
        .bearer_auth(MGMT_KEY)
        .json(&json!({"provider": "openai", "name": "bench", "apiKey": "sk-bench", "baseUrl": format!("{fake}/v1")}))
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("creating the bench connection failed: {}", resp.text().await?);
    }
    let key: Value = http
        .post(format!("{gw}/api/keys"))
        .bearer_auth(MGMT_KEY)
        .json(&json!({"name": "bench"}))
        .send()
        .await?
        .json()
        .await?;
    key["key"].as_str().map(str::to_owned).context("no key in the answer")
}

fn body(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello in five words."}]})
}

async fn one(http: &reqwest::Client, t: &Target, stream: bool) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut req = http.post(&t.url).json(&body(t.model, stream));
    if let Some(k) = &t.key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await?;
    if !resp.status().is_success() {
        bail!("{} answered {}", t.name, resp.status());
    }
    resp.bytes().await?;
    Ok(started.elapsed())
}

struct Throughput {
    completed: u64,
    errors: u64,
    elapsed: Duration,
    peak_rss: u64,
}

impl Throughput {
    fn rps(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64()
    }
}

async fn throughput(http: &reqwest::Client, t: &Target, rss_of: Option<u32>) -> anyhow::Result<Throughput> {
    run_for(http, t, WARMUP).await;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let sampler = rss_of.map(|pid| {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                peak = peak.max(rss_bytes(pid).unwrap_or(0));
            }
            peak
        })
    });
    let (completed, errors) = run_for(http, t, THROUGHPUT_WINDOW).await;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let peak_rss = match sampler {
        Some(s) => s.await.unwrap_or(0),
        None => 0,
    };
    eprintln!("{:>8}: {:.0} req/s ({errors} errors)", t.name, completed as f64 / elapsed.as_secs_f64());
    Ok(Throughput { completed, errors, elapsed, peak_rss })
}

/// c=32 closed loop for `window`; (completed, errors).
async fn run_for(http: &reqwest::Client, t: &Target, window: Duration) -> (u64, u64) {
    let deadline = Instant::now() + window;
    let workers = (0..CONCURRENCY).map(|_| async {
        let (mut ok, mut err) = (0u64, 0u64);
        while Instant::now() < deadline {
            match one(http, t, false).await {
                Ok(_) => ok += 1,
                Err(_) => err += 1,
            }
        }
        (ok, err)
    });
    futures_util::future::join_all(workers).await.into_iter().fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Latencies (ms) at a fixed arrival rate.
async fn light_load(http: &reqwest::Client, t: &Target) -> anyhow::Result<Vec<f64>> {
    let n = LIGHT_RATE_PER_SEC * LIGHT_WINDOW.as_secs();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / LIGHT_RATE_PER_SEC));
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        tick.tick().await;
        out.push(one(http, t, false).await?.as_secs_f64() * 1000.0);
    }
    Ok(out)
}

/// Time to the first body chunk of a stream (ms), sequentially.
async fn first_chunk_latencies(http: &reqwest::Client, t: &Target) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(STREAM_SAMPLES);
    for _ in 0..STREAM_SAMPLES {
        let started = Instant::now();
        let mut req = http.post(&t.url).json(&body(t.model, true));
        if let Some(k) = &t.key {
            req = req.bearer_auth(k);
        }
        let mut resp = req.send().await?;
        resp.chunk().await?.context("empty stream")?;
        out.push(started.elapsed().as_secs_f64() * 1000.0);
        while resp.chunk().await?.is_some() {}
    }
    Ok(out)
}

fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).context("bad /proc stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    Ok(fields.get(11).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0)
        + fields.get(12).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0))
}

fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    Ok(kb.unwrap_or(0) * 1024)
}

fn print_report(r: &Value) {
    let f = |p: &str| r.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    println!("\n== OmniRoute bench (gateway vs direct-to-fake, same run) ==");
    println!(
        "throughput c=32      direct {:>8.0} req/s   gateway {:>8.0} req/s   ratio {:.3}",
        f("/throughput/directRps"),
        f("/throughput/gatewayRps"),
        f("/throughput/ratio")
    );
    println!(
        "latency @20 req/s    added p50 {:.3} ms   added p99 {:.3} ms   (direct p50 {:.3} / p99 {:.3})",
        f("/lightLoadLatencyMs/added/p50"),
        f("/lightLoadLatencyMs/added/p99"),
        f("/lightLoadLatencyMs/direct/p50"),
        f("/lightLoadLatencyMs/direct/p99")
    );
    println!(
        "stream first chunk   added p50 {:.3} ms   (direct p50 {:.3})",
        f("/streamFirstChunkMs/addedP50"),
        f("/streamFirstChunkMs/direct/p50")
    );
    println!("gateway CPU          {:.1} µs/request", f("/gateway/cpuMicrosPerRequest"));
    println!(
        "gateway RSS          idle {:.1} MB   under load {:.1} MB",
        f("/gateway/rssIdleBytes") / 1e6,
        f("/gateway/rssUnderLoadBytes") / 1e6
    );
}
