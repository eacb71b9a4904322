//! `cargo xtask chaos [--seconds N] [--seed S]`: a bounded, randomized
//! fault run on loopback (SPEC §R6, §T). A combo lists four targets, one
//! per upstream protocol, spread over two fake upstream processes; every
//! target but the last gets a random fault for each request it sees —
//! response headers that never come, headers then silence, an end before
//! the first event, a dropped connection (at once, or after the first
//! events: stream recovery is on and must hide it), 503 / 429 (with and
//! without a retry hint) / 529, an error body that never finishes, a slow
//! trickle; and in streams: a clean end before the answer is whole, a line
//! that is not JSON, a 2 MB line, bare-CR framing, a role chunk then
//! silence, an in-band error event, the terminator then a connection kept
//! open with more data; part of an answer (a JSON body or a stream's first
//! frame) then silence — and the last one is healthy. For N seconds
//! (default 60; `cargo xtask test` runs 180) requests mix the four client
//! protocols, streaming and not, `CHAOS_CONCURRENCY` (default 16) at a
//! time.
//!
//! Passes when nothing hung (every request answered within its bound),
//! every answer was a 2xx, no stream ended in an error event — faults
//! that strike before a stream's commit point must be failed over
//! invisibly — and every answer that claims to be complete carries the
//! fake's whole answer, word for word (a cut answer is never passed off
//! as finished). (Stalls after the first event are left out: no recovery can
//! tell them from a slow model inside its hold-back window.) The fault
//! schedule follows the seed, which is printed so a failure can be
//! replayed; which request meets which fault depends on timing.

use anyhow::{Context, bail};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use std::{
    collections::BTreeMap,
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::sync::Semaphore;

use crate::{
    e2e::{Service, start_stack},
    util::{self, cargo, step},
};

const MGMT_KEY: &str = "chaos-management-key";
/// Longest any request may take before it counts as hung.
const HANG_BOUND: Duration = Duration::from_secs(20);

/// (provider, model, base URL suffix, which fake serves it).
const TARGETS: [(&str, &str, &str, usize); 4] = [
    ("openai", "gpt-4o-mini", "/v1", 0),
    ("anthropic", "claude-sonnet-4", "", 1),
    ("openai-responses", "gpt-5", "/v1", 0),
    ("gemini", "gemini-2.5-flash", "/v1beta", 1),
];
/// The targets that get faults: all but the last.
const FAULTY: usize = 3;

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
    /// Answers that claimed completion with less (or other) than the whole text.
    truncated: u64,
    examples: Vec<String>,
}

/// What the run is told on its command line.
pub struct Options {
    pub seconds: u64,
    pub seed: u64,
}

impl Options {
    /// `--seconds N` (default 60) and `--seed S` (random).
    pub fn parse(args: &[String]) -> anyhow::Result<Self> {
        Ok(Self {
            seconds: util::flag(args, "--seconds")?.unwrap_or(60),
            seed: util::flag(args, "--seed")?.unwrap_or_else(rand::random),
        })
    }
}

pub fn run(opts: &Options) -> anyhow::Result<()> {
    let concurrency = std::env::var("CHAOS_CONCURRENCY").ok().and_then(|v| v.parse().ok()).unwrap_or(16u64);
    let (seconds, seed) = (opts.seconds, opts.seed);
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
    let (gateway, fake_a, gw, url_a) = start_stack("debug", &data_dir, "warn,omniroute=info,server=error", &budgets)?;
    let (fake_b, url_b) = Service::start(Command::new(util::target_dir().join("debug/fake-upstream")), "http://")?;
    let fakes = [url_a, url_b.trim().to_owned()];
    step(&format!("chaos: {seconds} s, {concurrency} requests at a time, seed {seed}"));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let run = Run { gw, fakes, seed };
    let tally = rt.block_on(async {
        let http = reqwest::Client::builder().timeout(HANG_BOUND).build()?;
        run.setup(&http).await?;
        let (tally, scheduled) = run.drive(&http, Duration::from_secs(seconds), concurrency).await?;
        anyhow::Ok((tally, scheduled, run.faults_struck(&http).await?))
    });
    drop((gateway, fake_a, fake_b));
    let _ = std::fs::remove_dir_all(&data_dir);
    let (t, scheduled, struck) = tally?;
    let requests = t.ok + t.hung + t.non_2xx + t.error_events + t.truncated;
    let report = json!({"seed": seed, "seconds": seconds, "requests": requests,
                        "ok": t.ok, "hung": t.hung, "non2xx": t.non_2xx, "errorEvents": t.error_events,
                        "truncatedCalledComplete": t.truncated,
                        "faultsScheduled": scheduled, "faultsStruck": struck});
    println!("{report}");
    if struck == 0 {
        bail!("no fault struck: the run tested nothing");
    }
    if t.hung + t.non_2xx + t.error_events + t.truncated > 0 {
        bail!(
            "chaos run failed (replay: cargo xtask chaos --seconds {seconds} --seed {seed}):\n{}",
            t.examples.join("\n")
        );
    }
    Ok(())
}

/// One chaos run: the gateway, the fakes, the seed.
struct Run {
    gw: String,
    fakes: [String; 2],
    seed: u64,
}

impl Run {
    /// Connections on the fakes, no connection cooldowns and short breaker
    /// holds (so faults keep coming; breakers still open and recover), and
    /// the combo.
    async fn setup(&self, http: &reqwest::Client) -> anyhow::Result<()> {
        let api = |method: reqwest::Method, path: &str| {
            http.request(method, format!("{}{path}", self.gw)).bearer_auth(MGMT_KEY)
        };
        for (provider, _, suffix, fake) in TARGETS {
            let base = format!("{}{suffix}", self.fakes[fake]);
            let body = json!({"provider": provider, "name": provider, "apiKey": key(provider), "baseUrl": base});
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
        Ok(())
    }

    /// Gives every faulty target one more single-use fault (the newest
    /// rule wins, so faults meet requests newest first).
    async fn schedule(
        &self,
        http: &reqwest::Client,
        rng: &mut StdRng,
        counts: &mut BTreeMap<&'static str, u64>,
    ) -> anyhow::Result<()> {
        for (provider, _, _, fake) in &TARGETS[..FAULTY] {
            let (kind, rule) = fault(rng, provider);
            *counts.entry(kind).or_default() += 1;
            let url = format!("{}/_control/rules", self.fakes[*fake]);
            http.post(url).json(&rule).send().await?.error_for_status()?;
        }
        Ok(())
    }

    /// How many upstream requests reached a faulty target.
    async fn faults_struck(&self, http: &reqwest::Client) -> anyhow::Result<usize> {
        let faulty: Vec<String> = TARGETS[..FAULTY].iter().map(|(p, _, _, _)| key(p)).collect();
        let mut struck = 0;
        for fake in &self.fakes {
            let requests: Vec<Value> = http.get(format!("{fake}/_control/requests")).send().await?.json().await?;
            struck += requests
                .iter()
                .filter(|r| faulty.iter().any(|k| r["headers"].to_string().contains(k.as_str())))
                .count();
        }
        Ok(struck)
    }
}

fn key(provider: &str) -> String {
    format!("key-{provider}")
}

/// How many frames of the fake's stream for `provider` come before its
/// first model output (metadata, which commits nothing).
fn leading_metadata(provider: &str) -> u32 {
    match provider {
        "openai" => 1,
        "anthropic" => 2,
        "openai-responses" => 3,
        _ => 0,
    }
}

/// One fault, named, that strikes before a stream is committed (or, for
/// the trickle, a slow answer that must still arrive; for the linger, a
/// whole answer whose upstream does not close).
fn fault(rng: &mut StdRng, provider: &str) -> (&'static str, Value) {
    let mut rule = json!({"apiKey": key(provider), "times": 1});
    let lead = leading_metadata(provider);
    let kind = match rng.gen_range(0..19) {
        0 => {
            rule["latencyMs"] = json!(60_000);
            "no headers"
        }
        1 => {
            rule["stallAfterChunks"] = json!(0);
            "headers then silence"
        }
        2 => {
            rule["endAfterChunks"] = json!(0);
            "early EOF"
        }
        3 => {
            rule["dropAfterChunks"] = json!(0);
            "reset at once"
        }
        4 => {
            rule["dropAfterChunks"] = json!(2);
            "drop after the first events"
        }
        5 => {
            rule["status"] = json!(503);
            "503"
        }
        6 => {
            rule["status"] = json!(429);
            rule["headers"] = json!({"retry-after": "1"});
            "429 with a hint"
        }
        7 => {
            rule["status"] = json!(429);
            "429 without a hint"
        }
        8 => {
            rule["status"] = json!(529);
            "529"
        }
        9 => {
            rule["status"] = json!(503);
            rule["stallAfterChunks"] = json!(1);
            "error body that never ends"
        }
        11 => {
            rule["endAfterChunks"] = json!(lead + 2);
            "clean end before the answer is whole"
        }
        12 => {
            rule["garbleAfterChunks"] = json!(lead + 1);
            "a line that is not JSON"
        }
        13 => {
            rule["garbleAfterChunks"] = json!(lead + 1);
            rule["garble"] = json!("oversize");
            "a 2 MB line"
        }
        14 => {
            rule["garbleAfterChunks"] = json!(lead + 1);
            rule["garble"] = json!("bare-cr");
            "bare-CR framing"
        }
        15 => {
            rule["stallAfterChunks"] = json!(lead);
            "metadata (a role chunk) then silence"
        }
        16 => {
            rule["errorAfterChunks"] = json!(lead + 1);
            "an in-band error event"
        }
        17 => {
            rule["linger"] = json!(true);
            "the terminator, then the upstream lingers"
        }
        18 => {
            rule["stallAfterChunks"] = json!(1);
            "part of the answer, then silence"
        }
        _ => {
            rule["trickleMs"] = json!(150);
            "trickle"
        }
    };
    (kind, rule)
}

impl Run {
    /// Sends requests for `length`, `concurrency` at a time, each after
    /// one more fault per faulty target; returns the tally and the faults
    /// scheduled by kind.
    async fn drive(
        &self,
        http: &reqwest::Client,
        length: Duration,
        concurrency: u64,
    ) -> anyhow::Result<(Tally, BTreeMap<&'static str, u64>)> {
        let slots = Arc::new(Semaphore::new(usize::try_from(concurrency)?));
        let (mut faults, mut requests) = (StdRng::seed_from_u64(self.seed), StdRng::seed_from_u64(self.seed ^ 0x5eed));
        let mut scheduled = BTreeMap::new();
        let mut running = tokio::task::JoinSet::new();
        let mut t = Tally::default();
        let started = Instant::now();
        let mut i = 0usize;
        while started.elapsed() < length {
            let permit = slots.clone().acquire_owned().await?;
            self.schedule(http, &mut faults, &mut scheduled).await?;
            let client = CLIENTS[i % CLIENTS.len()];
            i += 1;
            let stream = requests.gen_bool(0.5);
            let (http, gw) = (http.clone(), self.gw.clone());
            running.spawn(async move {
                let outcome = one(&http, &gw, client, stream).await;
                drop(permit);
                (client, stream, outcome)
            });
            while let Some(done) = running.try_join_next() {
                t.count(done.context("a request task panicked")?);
            }
        }
        while let Some(done) = running.join_next().await {
            t.count(done.context("a request task panicked")?);
        }
        Ok((t, scheduled))
    }
}

impl Tally {
    fn count(&mut self, (client, stream, outcome): (Client, bool, Outcome)) {
        let bad = match outcome {
            Outcome::Ok => {
                self.ok += 1;
                None
            }
            Outcome::Hung(e) => {
                self.hung += 1;
                Some(format!("hung: {e}"))
            }
            Outcome::Status(s, body) => {
                self.non_2xx += 1;
                Some(format!("{s}: {body}"))
            }
            Outcome::ErrorEvent(body) => {
                self.error_events += 1;
                Some(format!("error event: {body}"))
            }
            Outcome::Truncated(body) => {
                self.truncated += 1;
                Some(format!("not the whole answer, yet no error: {body}"))
            }
        };
        if let Some(b) = bad.filter(|_| self.examples.len() < 10) {
            self.examples.push(format!("{client:?} stream={stream} {}", b.chars().take(400).collect::<String>()));
        }
    }
}

enum Outcome {
    Ok,
    Hung(String),
    Status(u16, String),
    ErrorEvent(String),
    /// A 2xx without an error whose text is not the whole answer.
    Truncated(String),
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
    if failed {
        Outcome::ErrorEvent(text)
    } else if answer_text(client, stream, &text) != fake_upstream::DEFAULT_CONTENT {
        Outcome::Truncated(text)
    } else {
        Outcome::Ok
    }
}

/// The assistant text of an answer in `client`'s protocol, JSON or SSE.
fn answer_text(client: Client, stream: bool, body: &str) -> String {
    let parts = |v: &Value| -> String {
        let parts = v["candidates"][0]["content"]["parts"].as_array().cloned().unwrap_or_default();
        parts.iter().filter_map(|p| p["text"].as_str().map(str::to_owned)).collect()
    };
    if !stream {
        let v: Value = serde_json::from_str(body).unwrap_or_default();
        return match client {
            Client::Chat => v["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_owned(),
            Client::Messages => {
                v["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
            }
            Client::Responses => v["output"][0]["content"][0]["text"].as_str().unwrap_or_default().to_owned(),
            Client::Gemini => parts(&v),
        };
    }
    let events = body
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok());
    let piece = |v: &Value| -> String {
        match client {
            Client::Chat => v["choices"][0]["delta"]["content"].as_str().unwrap_or_default().to_owned(),
            Client::Messages => v["delta"]["text"].as_str().unwrap_or_default().to_owned(),
            Client::Responses if v["type"] == "response.output_text.delta" => {
                v["delta"].as_str().unwrap_or_default().to_owned()
            }
            Client::Responses => String::new(),
            Client::Gemini => parts(v),
        }
    };
    events.map(|v| piece(&v)).collect()
}
