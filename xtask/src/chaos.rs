//! `cargo xtask chaos`: a bounded, randomized fault run on loopback (first
//! cut; SPEC §R6, §T). A combo lists four targets, one per upstream
//! protocol; every target but the last gets a random fault for each
//! request it sees — response headers that never come, headers then
//! silence, an end before the first event, a dropped connection (at once,
//! or after the first events: stream recovery is on and must hide it),
//! 503 / 429 / 529 storms — and the last one is healthy. Requests mix the four
//! client protocols, streaming and not, several at a time.
//!
//! Passes when nothing hung (every request answered within its bound),
//! every answer was a 2xx and no stream ended in an error event: faults
//! that strike before a stream's commit point must be failed over
//! invisibly. (Stalls after the first event are left out: no recovery can
//! tell them from a slow model inside its hold-back window.)
//! `CHAOS_REQUESTS` (default 400), `CHAOS_CONCURRENCY` (16) and
//! `CHAOS_SEED` (random) tune the run; the seed is printed to replay it.

use anyhow::{Context, bail};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use std::{sync::Arc, time::Duration};
use tokio::sync::Semaphore;

use crate::{
    e2e::start_stack,
    util::{self, cargo, step},
};

const MGMT_KEY: &str = "chaos-management-key";
/// Longest any request may take before it counts as hung.
const HANG_BOUND: Duration = Duration::from_secs(20);

/// (provider, model, the fake's path prefix for it, base URL suffix).
const TARGETS: [(&str, &str, &str, &str); 4] = [
    ("openai", "gpt-4o-mini", "/v1/chat/completions", "/v1"),
    ("anthropic", "claude-sonnet-4", "/v1/messages", ""),
    ("openai-responses", "gpt-5", "/v1/responses", "/v1"),
    ("gemini", "gemini-2.5-flash", "/v1beta/models/", "/v1beta"),
];

#[derive(Clone, Copy, Debug)]
enum Client {
    Chat,
    Messages,
    Responses,
    Gemini,
}

const CLIENTS: [Client; 4] = [Client::Chat, Client::Messages, Client::Responses, Client::Gemini];

/// What one request came to.
#[derive(Default)]
struct Tally {
    ok: u64,
    hung: u64,
    non_2xx: u64,
    error_events: u64,
    examples: Vec<String>,
}

pub fn run() -> anyhow::Result<()> {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let requests = env("CHAOS_REQUESTS").unwrap_or(400);
    let concurrency = env("CHAOS_CONCURRENCY").unwrap_or(16);
    let seed = env("CHAOS_SEED").unwrap_or_else(rand::random);
    step("build the gateway and the fake upstream");
    util::run(cargo().args(["build", "-p", "server", "-p", "fake-upstream"]))?;
    let data_dir = util::target_dir().join(format!("chaos-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let budgets = [
        ("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY),
        ("STREAM_READINESS_TIMEOUT_MS", "500"),
        ("FETCH_TIMEOUT_MS", "1500"),
        ("STREAM_IDLE_TIMEOUT_MS", "3000"),
        ("STREAM_RECOVERY_ENABLED", "true"),
        // The faults are the upstream's; the request queue would only pace the run.
        ("RATE_LIMIT_AUTO_ENABLE", "false"),
    ];
    let (gateway, fake, gw, fake_url) = start_stack("debug", &data_dir, "warn,omniroute=info,server=error", &budgets)?;
    step(&format!("chaos: {requests} requests, {concurrency} at a time, seed {seed}"));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let tally = rt.block_on(async {
        let http = reqwest::Client::builder().timeout(HANG_BOUND).build()?;
        setup(&http, &gw, &fake_url, seed, requests).await?;
        let tally = drive(&http, &gw, seed, requests, concurrency).await?;
        anyhow::Ok((tally, faults_struck(&http, &fake_url).await?))
    });
    drop((gateway, fake));
    let _ = std::fs::remove_dir_all(&data_dir);
    let (t, struck) = tally?;
    let report = json!({"seed": seed, "requests": requests, "ok": t.ok, "hung": t.hung,
                        "non2xx": t.non_2xx, "errorEvents": t.error_events, "faultsStruck": struck});
    println!("{report}");
    if struck == 0 {
        bail!("no fault struck: the run tested nothing");
    }
    if t.hung + t.non_2xx + t.error_events > 0 {
        bail!("chaos run failed (replay with CHAOS_SEED={seed}):\n{}", t.examples.join("\n"));
    }
    Ok(())
}

/// Connections on the fake, no connection cooldowns and short breaker
/// holds (so faults keep coming; breakers still open and recover), the
/// combo, and the faults.
async fn setup(http: &reqwest::Client, gw: &str, fake: &str, seed: u64, requests: u64) -> anyhow::Result<()> {
    let api = |method: reqwest::Method, path: &str| http.request(method, format!("{gw}{path}")).bearer_auth(MGMT_KEY);
    for (provider, _, _, suffix) in TARGETS {
        let body = json!({"provider": provider, "name": provider, "apiKey": format!("key-{provider}"), "baseUrl": format!("{fake}{suffix}")});
        let resp = api(reqwest::Method::POST, "/api/providers").json(&body).send().await?;
        if !resp.status().is_success() {
            bail!("adding the {provider} connection: {}", resp.text().await?);
        }
    }
    // Breakers reopen for 1 s only, so faulty targets are probed often.
    let off = json!({"connectionCooldown": {"oauth": {"baseCooldownMs": 0}, "apikey": {"baseCooldownMs": 0}},
                     "providerBreaker": {"apikey": {"resetTimeoutMs": 1000, "maxResetMultiplier": 1}}});
    api(reqwest::Method::PATCH, "/api/resilience").json(&off).send().await?.error_for_status()?;
    let targets: Vec<Value> = TARGETS.iter().map(|(p, m, _, _)| json!({"model": format!("{p}/{m}")})).collect();
    let combo = json!({"name": "chaos", "strategy": "priority", "targets": targets});
    api(reqwest::Method::POST, "/api/combos").json(&combo).send().await?.error_for_status()?;
    // Newest rule first: a stack of single-use faults per faulty target.
    let mut rng = StdRng::seed_from_u64(seed);
    for (provider, _, _, _) in &TARGETS[..3] {
        for _ in 0..requests {
            let rule = fault(&mut rng, &format!("key-{provider}"));
            http.post(format!("{fake}/_control/rules")).json(&rule).send().await?.error_for_status()?;
        }
    }
    Ok(())
}

/// How many upstream requests reached a faulty target.
async fn faults_struck(http: &reqwest::Client, fake: &str) -> anyhow::Result<usize> {
    let requests: Vec<Value> = http.get(format!("{fake}/_control/requests")).send().await?.json().await?;
    let faulty: Vec<String> = TARGETS[..3].iter().map(|(p, _, _, _)| format!("key-{p}")).collect();
    Ok(requests.iter().filter(|r| faulty.iter().any(|k| r["headers"].to_string().contains(k.as_str()))).count())
}

/// One fault that strikes before a stream is committed.
fn fault(rng: &mut StdRng, key: &str) -> Value {
    let mut rule = json!({"apiKey": key, "times": 1});
    match rng.gen_range(0..8) {
        7 => rule["dropAfterChunks"] = json!(2),
        0 => rule["latencyMs"] = json!(60_000),
        1 => rule["stallAfterChunks"] = json!(0),
        2 => rule["endAfterChunks"] = json!(0),
        3 => rule["dropAfterChunks"] = json!(0),
        4 => rule["status"] = json!(503),
        5 => {
            rule["status"] = json!(429);
            rule["headers"] = json!({"retry-after": "1"});
        }
        _ => rule["status"] = json!(529),
    }
    rule
}

async fn drive(http: &reqwest::Client, gw: &str, seed: u64, requests: u64, concurrency: u64) -> anyhow::Result<Tally> {
    let slots = Arc::new(Semaphore::new(usize::try_from(concurrency)?));
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut running = tokio::task::JoinSet::new();
    for i in 0..requests {
        let permit = slots.clone().acquire_owned().await?;
        let client = CLIENTS[usize::try_from(i % 4)?];
        let stream = rng.gen_bool(0.5);
        let (http, gw) = (http.clone(), gw.to_owned());
        running.spawn(async move {
            let outcome = one(&http, &gw, client, stream).await;
            drop(permit);
            (client, stream, outcome)
        });
    }
    let mut t = Tally::default();
    while let Some(done) = running.join_next().await {
        let (client, stream, outcome) = done.context("a request task panicked")?;
        let bad = match outcome {
            Outcome::Ok => {
                t.ok += 1;
                None
            }
            Outcome::Hung(e) => {
                t.hung += 1;
                Some(format!("hung: {e}"))
            }
            Outcome::Status(s, body) => {
                t.non_2xx += 1;
                Some(format!("{s}: {body}"))
            }
            Outcome::ErrorEvent(body) => {
                t.error_events += 1;
                Some(format!("error event: {body}"))
            }
        };
        if let Some(b) = bad.filter(|_| t.examples.len() < 10) {
            t.examples.push(format!("{client:?} stream={stream} {}", b.chars().take(400).collect::<String>()));
        }
    }
    Ok(t)
}

enum Outcome {
    Ok,
    Hung(String),
    Status(u16, String),
    ErrorEvent(String),
}

async fn one(http: &reqwest::Client, gw: &str, client: Client, stream: bool) -> Outcome {
    let q = "Say hello";
    let (path, body) = match client {
        Client::Chat => (
            "/v1/chat/completions".to_owned(),
            json!({"model": "chaos", "stream": stream, "messages": [{"role": "user", "content": q}]}),
        ),
        Client::Messages => (
            "/v1/messages".to_owned(),
            json!({"model": "chaos", "stream": stream, "max_tokens": 64, "messages": [{"role": "user", "content": q}]}),
        ),
        Client::Responses => ("/v1/responses".to_owned(), json!({"model": "chaos", "stream": stream, "input": q})),
        Client::Gemini => (
            format!(
                "/v1beta/models/chaos:{}",
                if stream { "streamGenerateContent?alt=sse" } else { "generateContent" }
            ),
            json!({"contents": [{"role": "user", "parts": [{"text": q}]}]}),
        ),
    };
    let resp = match http.post(format!("{gw}{path}")).json(&body).send().await {
        Ok(r) => r,
        Err(e) => return Outcome::Hung(e.to_string()),
    };
    let status = resp.status().as_u16();
    let text = match resp.text().await {
        Ok(t) => t,
        Err(e) => return Outcome::Hung(e.to_string()),
    };
    if status != 200 {
        return Outcome::Status(status, text);
    }
    let failed = stream
        && (text.contains("event: error") || text.contains("response.failed") || text.contains("data: {\"error\""));
    if failed { Outcome::ErrorEvent(text) } else { Outcome::Ok }
}
