//! `loadgen`: the load generator of `cargo xtask bench`, built in release
//! so the generator is not the bottleneck. One run = one phase against one
//! URL; prints one JSON line with counts and latencies (ms).
//!
//! `loadgen --url U --model M [--key K] --mode throughput|light|stream
//!   [--concurrency 32] [--secs 10] [--warmup 2] [--rate 20] [--samples 50]
//!   [--vs-url U2 --vs-model M2 [--vs-key K2]]`
//!
//! With `--vs-*`, `light` and `stream` alternate requests between the two
//! targets, so both see the same machine conditions (latencies of the
//! second target come as `vsLatenciesMs`).

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Where requests go.
#[derive(Clone, Default)]
struct Target {
    url: String,
    model: String,
    key: Option<String>,
}

struct Args {
    target: Target,
    vs: Option<Target>,
    mode: String,
    concurrency: usize,
    secs: u64,
    warmup: u64,
    rate: u64,
    samples: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        target: Target::default(),
        vs: None,
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
            "--url" => a.target.url = value,
            "--model" => a.target.model = value,
            "--key" => a.target.key = Some(value),
            "--vs-url" => a.vs.get_or_insert_with(Target::default).url = value,
            "--vs-model" => a.vs.get_or_insert_with(Target::default).model = value,
            "--vs-key" => a.vs.get_or_insert_with(Target::default).key = Some(value),
            "--mode" => a.mode = value,
            "--concurrency" => a.concurrency = value.parse()?,
            "--secs" => a.secs = value.parse()?,
            "--warmup" => a.warmup = value.parse()?,
            "--rate" => a.rate = value.parse()?,
            "--samples" => a.samples = value.parse()?,
            other => bail!("unknown flag {other}"),
        }
    }
    for t in std::iter::once(&a.target).chain(a.vs.as_ref()) {
        if t.url.is_empty() || t.model.is_empty() {
            bail!("--url and --model (and --vs-url with --vs-model) are required");
        }
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

/// The same small chat turn, in Anthropic Messages form when the URL is a
/// `/v1/messages` endpoint (the bench's translated path), else OpenAI chat.
fn request(http: &reqwest::Client, t: &Target, stream: bool) -> reqwest::RequestBuilder {
    let body = if t.url.ends_with("/v1/messages") {
        json!({"model": t.model, "stream": stream, "max_tokens": 64, "system": "You are terse.",
               "messages": [{"role": "user", "content": "Say hello in five words."}]})
    } else {
        json!({"model": t.model, "stream": stream, "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello in five words."}]})
    };
    let req = http.post(&t.url).json(&body);
    match &t.key {
        Some(k) => req.bearer_auth(k),
        None => req,
    }
}

/// One non-stream request, read to the end.
async fn one(http: &reqwest::Client, t: &Target) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let resp = request(http, t, false).send().await?;
    if !resp.status().is_success() {
        bail!("status {}", resp.status());
    }
    resp.bytes().await?;
    Ok(started.elapsed())
}

/// One stream request: time to its first chunk (read to the end).
async fn first_chunk(http: &reqwest::Client, t: &Target) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut resp = request(http, t, true).send().await?;
    resp.chunk().await?.context("empty stream")?;
    let elapsed = started.elapsed();
    while resp.chunk().await?.is_some() {}
    Ok(elapsed)
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
            match one(http, &a.target).await {
                Ok(_) => ok += 1,
                Err(_) => err += 1,
            }
        }
        (ok, err)
    });
    futures_util::future::join_all(workers).await.into_iter().fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Latencies of `n` rounds of `probe`, alternating between the targets.
async fn paired<'a, F, Fut>(
    a: &'a Args,
    n: usize,
    mut pace: Option<tokio::time::Interval>,
    probe: F,
) -> anyhow::Result<Value>
where
    F: Fn(&'a Target) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Duration>>,
{
    let (mut main, mut vs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        for (t, out) in std::iter::once((&a.target, &mut main)).chain(a.vs.as_ref().map(|v| (v, &mut vs))) {
            if let Some(p) = pace.as_mut() {
                p.tick().await;
            }
            out.push(probe(t).await?.as_secs_f64() * 1000.0);
        }
    }
    Ok(json!({"latenciesMs": main, "vsLatenciesMs": vs}))
}

/// Open loop at `rate` req/s for `secs`: per-request latency.
async fn light(http: &reqwest::Client, a: &Args) -> anyhow::Result<Value> {
    for t in std::iter::once(&a.target).chain(a.vs.as_ref()) {
        for _ in 0..a.rate {
            one(http, t).await?;
        }
    }
    let pace = tokio::time::interval(Duration::from_micros(1_000_000 / a.rate.max(1)));
    paired(a, (a.rate * a.secs) as usize, Some(pace), |t| one(http, t)).await
}

/// Sequential streams: time to the first body chunk.
async fn stream(http: &reqwest::Client, a: &Args) -> anyhow::Result<Value> {
    for t in std::iter::once(&a.target).chain(a.vs.as_ref()) {
        for _ in 0..5 {
            first_chunk(http, t).await?;
        }
    }
    paired(a, a.samples, None, |t| first_chunk(http, t)).await
}
