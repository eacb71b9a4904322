//! `loadgen`: the load generator of `cargo xtask bench`, built in release
//! so the generator is not the bottleneck. One run = one phase against one
//! URL; prints one JSON line with counts and latencies (ms).
//!
//! `loadgen --url U --model M [--key K] --mode throughput|light|stream
//!   [--concurrency 32] [--secs 10] [--warmup 2] [--rate 20] [--samples 50]`

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

struct Args {
    url: String,
    model: String,
    key: Option<String>,
    mode: String,
    concurrency: usize,
    secs: u64,
    warmup: u64,
    rate: u64,
    samples: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        url: String::new(),
        model: String::new(),
        key: None,
        mode: String::new(),
        concurrency: 32,
        secs: 10,
        warmup: 2,
        rate: 20,
        samples: 50,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => a.url = value,
            "--model" => a.model = value,
            "--key" => a.key = Some(value),
            "--mode" => a.mode = value,
            "--concurrency" => a.concurrency = value.parse()?,
            "--secs" => a.secs = value.parse()?,
            "--warmup" => a.warmup = value.parse()?,
            "--rate" => a.rate = value.parse()?,
            "--samples" => a.samples = value.parse()?,
            other => bail!("unknown flag {other}"),
        }
    }
    if a.url.is_empty() || a.model.is_empty() {
        bail!("--url and --model are required");
    }
    Ok(a)
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let result = rt.block_on(async {
        let http = reqwest::Client::builder().pool_max_idle_per_host(args.concurrency * 2).tcp_nodelay(true).build()?;
        match args.mode.as_str() {
            "throughput" => throughput(&http, &args).await,
            "light" => light(&http, &args).await,
            "stream" => stream(&http, &args).await,
            other => bail!("unknown mode {other}"),
        }
    })?;
    println!("{result}");
    Ok(())
}

fn request(http: &reqwest::Client, a: &Args, stream: bool) -> reqwest::RequestBuilder {
    let body = json!({"model": a.model, "stream": stream, "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hello in five words."}]});
    let req = http.post(&a.url).json(&body);
    match &a.key {
        Some(k) => req.bearer_auth(k),
        None => req,
    }
}

async fn one(http: &reqwest::Client, a: &Args) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let resp = request(http, a, false).send().await?;
    if !resp.status().is_success() {
        bail!("status {}", resp.status());
    }
    resp.bytes().await?;
    Ok(started.elapsed())
}

/// Closed loop at `concurrency` for `secs` after `warmup`.
async fn throughput(http: &reqwest::Client, a: &Args) -> anyhow::Result<Value> {
    closed_loop(http, a, Duration::from_secs(a.warmup)).await;
    let started = Instant::now();
    let (completed, errors) = closed_loop(http, a, Duration::from_secs(a.secs)).await;
    let elapsed = started.elapsed().as_secs_f64();
    Ok(json!({"completed": completed, "errors": errors, "elapsedSecs": elapsed, "rps": completed as f64 / elapsed}))
}

async fn closed_loop(http: &reqwest::Client, a: &Args, window: Duration) -> (u64, u64) {
    let deadline = Instant::now() + window;
    let workers = (0..a.concurrency).map(|_| async move {
        let (mut ok, mut err) = (0u64, 0u64);
        while Instant::now() < deadline {
            match one(http, a).await {
                Ok(_) => ok += 1,
                Err(_) => err += 1,
            }
        }
        (ok, err)
    });
    futures_util::future::join_all(workers).await.into_iter().fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Open loop at `rate` req/s for `secs`: per-request latency.
async fn light(http: &reqwest::Client, a: &Args) -> anyhow::Result<Value> {
    for _ in 0..a.rate {
        one(http, a).await?;
    }
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / a.rate.max(1)));
    let mut latencies = Vec::new();
    for _ in 0..a.rate * a.secs {
        tick.tick().await;
        latencies.push(one(http, a).await?.as_secs_f64() * 1000.0);
    }
    Ok(json!({"latenciesMs": latencies}))
}

/// Sequential streams: time to the first body chunk.
async fn stream(http: &reqwest::Client, a: &Args) -> anyhow::Result<Value> {
    let mut latencies = Vec::new();
    for i in 0..a.samples + 5 {
        let started = Instant::now();
        let mut resp = request(http, a, true).send().await?;
        resp.chunk().await?.context("empty stream")?;
        if i >= 5 {
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        while resp.chunk().await?.is_some() {}
    }
    Ok(json!({"latenciesMs": latencies}))
}
