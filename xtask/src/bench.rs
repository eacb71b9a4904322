//! `cargo xtask bench`: the gateway against the direct-to-fake baseline in
//! one run, on one machine. Reports ratios and differences, not absolute
//! numbers: the load generator, the gateway and the fake share the cores.
//!
//! Every gateway is measured at its steady state: its request log is first
//! filled to retention (`OMNIROUTE_LOG_RETENTION_ROWS=50000`), so the log
//! writer prunes as it does once a gateway has served a while.
//!
//! Phases (run by the release-built `loadgen`; the machine is shared and
//! noisy, so direct and gateway measurements are interleaved):
//! 1. throughput: c=32 non-stream requests, 3 rounds of (direct 4 s,
//!    gateway 4 s), each after a 1 s warm-up; ratio = median round ratio;
//! 2. light load: 20 req/s for 5 s per target, requests alternating between
//!    direct and gateway → latency p50/p99, added = gateway − direct; then
//!    the same for `relay` (a bare hyper forwarder, `end2end/loadgen`): the
//!    floor any proxy pays on this machine in this run;
//! 3. streams: 50 stream requests per target, alternating → time to first chunk;
//! 4. the translated path: throughput rounds as in 1, the gateway taking
//!    Anthropic `/v1/messages` requests for an OpenAI upstream;
//! 5. the resilience gates alone (`server/benches/gates.rs`): ns per
//!    request with state for 100 providers × 10 connections; and each combo
//!    strategy ordering 20 targets (`server/benches/strategies.rs`); the
//!    session affinity lookup and touch with 50,000 pins
//!    (`server/benches/affinity.rs`); the lease fence and the leased-
//!    connection check with 1,000 leases (`server/benches/leases.rs`).
//!
//! 6. the request queue (SPEC §R5), which the other phases run without
//!    (`RATE_LIMIT_AUTO_ENABLE=false`): its CPU per request with limits never
//!    reached (paired rounds, and its path alone in
//!    `server/benches/request_queue.rs`), and the RSS of 1,000 requests
//!    waiting in it (`protection`).
//!
//! 7. one worker against the bare relay: a second gateway process with
//!    `OMNIROUTE_WORKERS=1` (the relay has one thread) in paired throughput
//!    rounds with `relay`: the gateway's throughput as a share of the
//!    least any proxy costs.
//!
//! With `--against OMNIROUTE_BINARY` (another build of the gateway, say
//! the parent commit's release binary), paired throughput rounds of this
//! gateway and that one on the same fake: the A/B of a change in one run.
//!
//! Also the gateway's CPU time per request (from /proc, during phase 1)
//! and its RSS idle and under load. Writes `target/bench/latest.json`.

mod protection;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::{
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use crate::{
    e2e::{Service, start_stack},
    util::{self, cargo, step},
};

const MGMT_KEY: &str = "bench-management-key";
/// Every gateway's environment. Request-queue protection is off for every
/// phase but its own.
const ENV: [(&str, &str); 3] = [
    ("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY),
    ("RATE_LIMIT_AUTO_ENABLE", "false"),
    ("OMNIROUTE_LOG_RETENTION_ROWS", LOG_RETENTION),
];
/// Linux `USER_HZ`: the unit of CPU times in /proc/<pid>/stat.
const TICKS_PER_SEC: f64 = 100.0;

/// One place requests go: the fake directly, or the gateway.
struct Target {
    name: &'static str,
    url: String,
    model: &'static str,
    key: Option<String>,
}

/// `against`: another gateway binary (say, the parent commit's release
/// build) whose throughput is measured in paired rounds with this one's.
pub fn run(against: Option<&std::path::Path>) -> anyhow::Result<()> {
    step("build release binaries");
    util::build_release_stack()?;
    let bin = util::target_dir().join("release");
    let out_dir = util::target_dir().join("bench");
    let data_dir = out_dir.join("data");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&out_dir)?;
    let env = ENV;
    eprintln!("request-queue protection: off (RATE_LIMIT_AUTO_ENABLE=false) except in the protection phase");
    let (gateway, fake, gw_url, fake_url) = start_stack("release", &data_dir, "info", &env)?;
    let (key, connection_id) =
        tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(setup(&gw_url, &fake_url))?;
    let direct =
        Target { name: "direct", url: format!("{fake_url}/v1/chat/completions"), model: "fake-model", key: None };
    let through = Target {
        name: "gateway",
        url: format!("{gw_url}/v1/chat/completions"),
        model: "openai/fake-model",
        key: Some(key),
    };
    let translated = Target {
        name: "gateway (anthropic in)",
        url: format!("{gw_url}/v1/messages"),
        model: "openai/fake-model",
        key: through.key.clone(),
    };
    let mut relay_cmd = Command::new(bin.join("relay"));
    relay_cmd.args(["--upstream", &fake_url]);
    let (relay, relay_url) = Service::start(relay_cmd, "http://")?;
    let relay_target = Target {
        name: "relay",
        url: format!("{}/v1/chat/completions", relay_url.trim()),
        model: "fake-model",
        key: None,
    };
    fill_log(&through)?;
    let mut report = measure(&direct, &through, &translated, &relay_target, gateway.pid())?;
    report["oneWorkerVsRelay"] = one_worker_vs_relay(&bin.join("omniroute"), &relay_target, &fake_url, &out_dir, &env)?;
    if let Some(baseline) = against {
        report["against"] = against_baseline(baseline, &through, &fake_url, &out_dir, &env)?;
    }
    let api = protection::Api::new(&gw_url, &fake_url, connection_id)?;
    step("request-queue protection: off vs on, limits never reached (c=32, 5 paired rounds)");
    report["protection"] = protection::off_vs_on(&api, &through, gateway.pid())?;
    step("request-queue protection: 1,000 requests waiting");
    report["protection"]["queuedMemory"] = protection::queued_memory(&api, &through, gateway.pid())?;
    drop((gateway, fake, relay));
    step("resilience gates micro-benchmark (100 providers × 10 connections)");
    let gates = util::output(cargo().args(["bench", "-q", "-p", "server", "--bench", "gates"]))?;
    report["gates"] = serde_json::from_str(gates.trim())?;
    step("request-queue path micro-benchmark (protected connection, limits never reached)");
    let queue = util::output(cargo().args(["bench", "-q", "-p", "server", "--bench", "request_queue"]))?;
    report["protection"]["pathMicroBench"] = serde_json::from_str(queue.trim())?;
    step("combo strategies micro-benchmark (20 targets)");
    let strategies = util::output(cargo().args(["bench", "-q", "-p", "server", "--bench", "strategies"]))?;
    report["strategies"] = serde_json::from_str(strategies.trim())?;
    step("session affinity micro-benchmark (50,000 pins)");
    let affinity = util::output(cargo().args(["bench", "-q", "-p", "server", "--bench", "affinity"]))?;
    report["affinity"] = serde_json::from_str(affinity.trim())?;
    step("session lease checks micro-benchmark (1,000 leases)");
    let leases = util::output(cargo().args(["bench", "-q", "-p", "server", "--bench", "leases"]))?;
    report["leases"] = serde_json::from_str(leases.trim())?;
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::write(out_dir.join("latest.json"), serde_json::to_string_pretty(&report)?)?;
    print_report(&report);
    eprintln!("\nwritten to {}", out_dir.join("latest.json").display());
    Ok(())
}

/// Only the A/B of `cargo xtask bench --against`: this build and
/// `baseline`, each with its log at retention, in paired throughput
/// rounds (a few minutes, where the whole bench takes twenty).
pub fn ab_only(baseline: &std::path::Path) -> anyhow::Result<()> {
    step("build release binaries");
    util::build_release_stack()?;
    let out_dir = util::target_dir().join("bench");
    let data_dir = out_dir.join("data");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&out_dir)?;
    let env = ENV;
    let (gateway, fake, gw_url, fake_url) = start_stack("release", &data_dir, "info", &env)?;
    let (key, _) =
        tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(setup(&gw_url, &fake_url))?;
    let through = Target {
        name: "gateway",
        url: format!("{gw_url}/v1/chat/completions"),
        model: "openai/fake-model",
        key: Some(key),
    };
    fill_log(&through)?;
    let report = json!({"against": against_baseline(baseline, &through, &fake_url, &out_dir, &env)?});
    drop((gateway, fake));
    let _ = std::fs::remove_dir_all(&data_dir);
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// This gateway against `baseline` (another build of it) on the same fake
/// upstream: paired throughput rounds, this one's rate over the baseline's.
/// Another gateway process (`omniroute`, with `env`) on the same fake, in
/// its own data dir under `out_dir/name`, set up like the first: it runs
/// `measure` and is stopped and its data removed afterwards.
fn with_another_gateway<T>(
    omniroute: &std::path::Path,
    name: &'static str,
    fake_url: &str,
    out_dir: &std::path::Path,
    env: &[(&str, &str)],
    measure: impl FnOnce(&Target, u32) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let data_dir = out_dir.join(format!("{name}-data"));
    let _ = std::fs::remove_dir_all(&data_dir);
    let (gateway, url) = crate::e2e::start_gateway(omniroute, &data_dir, "info", env)?;
    let (key, _) =
        tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(setup(&url, fake_url))?;
    let target = Target { name, url: format!("{url}/v1/chat/completions"), model: "openai/fake-model", key: Some(key) };
    fill_log(&target)?;
    let measured = measure(&target, gateway.pid());
    drop(gateway);
    let _ = std::fs::remove_dir_all(&data_dir);
    measured
}

/// Paired throughput rounds of the bare relay and a one-worker gateway.
fn one_worker_vs_relay(
    omniroute: &std::path::Path,
    relay: &Target,
    fake_url: &str,
    out_dir: &std::path::Path,
    env: &[(&str, &str)],
) -> anyhow::Result<Value> {
    let env: Vec<(&str, &str)> = env.iter().copied().chain([("OMNIROUTE_WORKERS", "1")]).collect();
    let r = with_another_gateway(omniroute, "one-worker", fake_url, out_dir, &env, |one, pid| {
        step(&format!("one worker vs the bare relay (c=32, {} paired rounds)", rounds()));
        throughput_rounds(relay, one, pid)
    })?;
    let p = percentile;
    Ok(json!({
        "relayRps": p(&r.direct_rps, 0.5),
        "oneWorkerRps": p(&r.gateway_rps, 0.5),
        "ratio": p(&r.ratios, 0.5),
        "roundRatios": r.ratios,
        "cpuMicrosPerRequest": r.cpu_us_per_req,
    }))
}

fn against_baseline(
    baseline: &std::path::Path,
    this: &Target,
    fake_url: &str,
    out_dir: &std::path::Path,
    env: &[(&str, &str)],
) -> anyhow::Result<Value> {
    let r = with_another_gateway(baseline, "baseline", fake_url, out_dir, env, |other, pid| {
        step(&format!("A/B: this gateway vs {} (c=32, {} paired rounds)", baseline.display(), rounds()));
        throughput_rounds(this, other, pid)
    })?;
    let p = percentile;
    let ratios: Vec<f64> = r.ratios.iter().map(|b| 1.0 / b.max(f64::MIN_POSITIVE)).collect();
    Ok(json!({
        "baseline": baseline.display().to_string(),
        "thisRps": p(&r.direct_rps, 0.5),
        "baselineRps": p(&r.gateway_rps, 0.5),
        "ratio": p(&ratios, 0.5),
        "roundRatios": ratios,
        "baselineCpuUsPerReq": r.cpu_us_per_req,
    }))
}

/// Throughput rounds, interleaved so both targets see the same conditions
/// (`OMNIROUTE_BENCH_ROUNDS` asks for more, for an A/B on a noisy machine).
const ROUNDS: usize = 3;

fn rounds() -> usize {
    std::env::var("OMNIROUTE_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(ROUNDS)
}
const ROUND_SECS: &str = "4";
const ROUND_WARMUP_SECS: &str = "1";

/// What interleaved throughput rounds measured.
struct Rounds {
    direct_rps: Vec<f64>,
    gateway_rps: Vec<f64>,
    ratios: Vec<f64>,
    gateway_errors: u64,
    cpu_us_per_req: f64,
    rss_peak: u64,
}

/// [`rounds`] rounds of (direct, gateway) at c=32, with the gateway's CPU
/// time and peak RSS during its share.
fn throughput_rounds(direct: &Target, gateway: &Target, pid: u32) -> anyhow::Result<Rounds> {
    let mut r = Rounds {
        direct_rps: Vec::new(),
        gateway_rps: Vec::new(),
        ratios: Vec::new(),
        gateway_errors: 0,
        cpu_us_per_req: 0.0,
        rss_peak: 0,
    };
    let (mut cpu_used, mut served) = (0u64, 0.0);
    for round in 0..rounds() {
        // Every other round the gateway goes first, so neither side always
        // meets the other's leftovers (its log writer, a warm cache).
        let d = if round % 2 == 0 { Some(loadgen(direct, "throughput", None)?) } else { None };
        let cpu_before = cpu_ticks(pid)?;
        let (g, peak) = with_rss_sampler(pid, || loadgen(gateway, "throughput", None))?;
        cpu_used += cpu_ticks(pid)? - cpu_before;
        let d = match d {
            Some(d) => d,
            None => loadgen(direct, "throughput", None)?,
        };
        // The warm-up requests used CPU too.
        served += g["completed"].as_f64().unwrap_or(0.0) * (1.0 + 1.0 / 4.0);
        r.rss_peak = r.rss_peak.max(peak);
        r.gateway_errors += g["errors"].as_u64().unwrap_or(0);
        let (dr, gr) = (d["rps"].as_f64().unwrap_or(0.0), g["rps"].as_f64().unwrap_or(0.0));
        r.ratios.push(gr / dr.max(f64::MIN_POSITIVE));
        r.direct_rps.push(dr);
        r.gateway_rps.push(gr);
    }
    r.cpu_us_per_req = cpu_used as f64 / TICKS_PER_SEC * 1e6 / served.max(1.0);
    Ok(r)
}

fn measure(direct: &Target, gateway: &Target, translated: &Target, relay: &Target, pid: u32) -> anyhow::Result<Value> {
    let rss_idle = rss_bytes(pid);
    step("throughput (c=32, 3 interleaved rounds)");
    let Rounds { direct_rps: d_rps, gateway_rps: g_rps, ratios, gateway_errors: g_errors, cpu_us_per_req, rss_peak } =
        throughput_rounds(direct, gateway, pid)?;
    step("translated path: Anthropic /v1/messages -> OpenAI upstream (c=32, 3 interleaved rounds)");
    let t = throughput_rounds(direct, translated, pid)?;

    step("light load (20 req/s, alternating)");
    let light = compare(&loadgen(direct, "light", Some(gateway))?, "gateway");
    step("light load: reference relay (20 req/s, alternating with direct)");
    let relay_light = compare(&loadgen(direct, "light", Some(relay))?, "relay");
    step("streams: time to first chunk (alternating)");
    let first = loadgen(direct, "stream", Some(gateway))?;
    let (d_first, g_first) = (latencies(&first, "latenciesMs"), latencies(&first, "vsLatenciesMs"));

    let p = percentile;
    Ok(json!({
        "throughput": {
            "concurrency": 32,
            "rounds": rounds(),
            "directRps": p(&d_rps, 0.5),
            "gatewayRps": p(&g_rps, 0.5),
            "ratio": p(&ratios, 0.5),
            "roundRatios": ratios,
            "gatewayErrors": g_errors,
        },
        "lightLoadLatencyMs": light,
        "referenceRelayLatencyMs": relay_light,
        "streamFirstChunkMs": {
            "direct": {"p50": p(&d_first, 0.5), "p99": p(&d_first, 0.99)},
            "gateway": {"p50": p(&g_first, 0.5), "p99": p(&g_first, 0.99)},
            "addedP50": p(&g_first, 0.5) - p(&d_first, 0.5),
        },
        "translated": {
            "path": "anthropic /v1/messages -> openai chat upstream",
            "directRps": p(&t.direct_rps, 0.5),
            "gatewayRps": p(&t.gateway_rps, 0.5),
            "ratio": p(&t.ratios, 0.5),
            "roundRatios": t.ratios,
            "gatewayErrors": t.gateway_errors,
            "cpuMicrosPerRequest": t.cpu_us_per_req,
        },
        "gateway": {
            "cpuMicrosPerRequest": cpu_us_per_req,
            "rssIdleBytes": rss_idle,
            "rssUnderLoadBytes": rss_peak,
        },
    }))
}

/// A connection from the gateway to the fake, and a client key: (key, connection id).
async fn setup(gw: &str, fake: &str) -> anyhow::Result<(String, String)> {
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{gw}/api/providers"))
        .bearer_auth(MGMT_KEY)
        .json(&json!({"provider": "openai", "name": "bench", "apiKey": "sk-bench", "baseUrl": format!("{fake}/v1")}))
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("creating the bench connection failed: {}", resp.text().await?);
    }
    let created: Value = resp.json().await?;
    let connection_id = created["connection"]["id"].as_str().context("no connection id")?.to_owned();
    let key: Value = http
        .post(format!("{gw}/api/keys"))
        .bearer_auth(MGMT_KEY)
        .json(&json!({"name": "bench"}))
        .send()
        .await?
        .json()
        .await?;
    let key = key["key"].as_str().map(str::to_owned).context("no key in the answer")?;
    Ok((key, connection_id))
}

/// p50/p99 of both sides of an alternating phase (`vs` named `name`) and
/// how much the `vs` side adds.
fn compare(phase: &Value, name: &str) -> Value {
    let (direct, other) = (latencies(phase, "latenciesMs"), latencies(phase, "vsLatenciesMs"));
    let p = percentile;
    json!({
        "ratePerSec": 20,
        "direct": {"p50": p(&direct, 0.5), "p99": p(&direct, 0.99)},
        name: {"p50": p(&other, 0.5), "p99": p(&other, 0.99)},
        "added": {"p50": p(&other, 0.5) - p(&direct, 0.5), "p99": p(&other, 0.99) - p(&direct, 0.99)},
    })
}

/// `loadgen` aimed at `t` in `mode`.
fn loadgen_cmd(t: &Target, mode: &str) -> Command {
    let mut cmd = Command::new(util::target_dir().join("release/loadgen"));
    cmd.args(["--url", &t.url, "--model", t.model, "--mode", mode]);
    if let Some(k) = &t.key {
        cmd.args(["--key", k]);
    }
    cmd
}

/// Rows every bench gateway keeps in its request log
/// (`OMNIROUTE_LOG_RETENTION_ROWS`).
const LOG_RETENTION: &str = "50000";
/// Seconds of load that fill a log to [`LOG_RETENTION`] on this machine.
const FILL_SECS: &str = "10";

/// Brings a gateway to its steady state before it is measured: its
/// request log at retention, so the log writer prunes as it does once a
/// gateway has served a while (a fresh log never does).
fn fill_log(t: &Target) -> anyhow::Result<()> {
    step(&format!("{}: filling the request log to its retention ({LOG_RETENTION} rows)", t.name));
    let mut cmd = loadgen_cmd(t, "throughput");
    cmd.args(["--secs", FILL_SECS, "--warmup", "0"]);
    let out: Value = serde_json::from_str(util::output(&mut cmd)?.trim())?;
    let completed = out["completed"].as_u64().unwrap_or(0);
    if completed < LOG_RETENTION.parse::<u64>()? {
        bail!("{} served {completed} requests in {FILL_SECS} s: the log is not at retention", t.name);
    }
    Ok(())
}

/// Runs one `loadgen` phase (against `t`, alternating with `vs` when
/// given) and parses its JSON line.
fn loadgen(t: &Target, mode: &str, vs: Option<&Target>) -> anyhow::Result<Value> {
    let mut cmd = loadgen_cmd(t, mode);
    if let Some(v) = vs {
        cmd.args(["--vs-url", &v.url, "--vs-model", v.model]);
        if let Some(k) = &v.key {
            cmd.args(["--vs-key", k]);
        }
    }
    if mode == "throughput" {
        cmd.args(["--secs", ROUND_SECS, "--warmup", ROUND_WARMUP_SECS]);
    }
    let out: Value = serde_json::from_str(util::output(&mut cmd)?.trim())?;
    if mode == "throughput" {
        eprintln!("{:>8}: {:.0} req/s ({} errors)", t.name, out["rps"].as_f64().unwrap_or(0.0), out["errors"]);
    }
    Ok(out)
}

/// Runs `f` while sampling the RSS of `pid`; returns f's result and the peak.
fn with_rss_sampler<T>(pid: u32, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, u64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_bytes(pid), Ordering::Relaxed);
                std::thread::park_timeout(Duration::from_millis(250));
            }
        })
    };
    let result = f();
    stop.store(true, Ordering::Relaxed);
    sampler.thread().unpark();
    let _ = sampler.join();
    Ok((result?, peak.load(Ordering::Relaxed)))
}

fn latencies(v: &Value, field: &str) -> Vec<f64> {
    v[field].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
}

fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n => v[((n - 1) as f64 * q).round() as usize],
    }
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).context("bad /proc stat")?;
    let fields: Vec<u64> = after.split_whitespace().skip(11).take(2).filter_map(|f| f.parse().ok()).collect();
    Ok(fields.iter().sum())
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    kb.unwrap_or(0) * 1024
}

fn print_report(r: &Value) {
    let f = |p: &str| r.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    println!("\n== OmniRoute bench (gateway vs direct-to-fake, same run) ==");
    if r.get("against").is_some() {
        println!(
            "A/B vs baseline      this {:>8.0} req/s   baseline {:>8.0} req/s   ratio {:.3} (median of paired rounds)",
            f("/against/thisRps"),
            f("/against/baselineRps"),
            f("/against/ratio")
        );
    }
    println!(
        "one worker vs relay  relay  {:>8.0} req/s   gateway {:>8.0} req/s   ratio {:.3} (median of paired rounds; target ≥ 0.5)",
        f("/oneWorkerVsRelay/relayRps"),
        f("/oneWorkerVsRelay/oneWorkerRps"),
        f("/oneWorkerVsRelay/ratio")
    );
    println!(
        "throughput c=32      direct {:>8.0} req/s   gateway {:>8.0} req/s   ratio {:.3} (median of rounds)",
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
        "  reference relay    added p50 {:.3} ms   added p99 {:.3} ms   (a bare hyper forwarder; direct p50 {:.3})",
        f("/referenceRelayLatencyMs/added/p50"),
        f("/referenceRelayLatencyMs/added/p99"),
        f("/referenceRelayLatencyMs/direct/p50")
    );
    println!(
        "stream first chunk   added p50 {:.3} ms   (direct p50 {:.3})",
        f("/streamFirstChunkMs/addedP50"),
        f("/streamFirstChunkMs/direct/p50")
    );
    println!("gateway CPU          {:.1} µs/request", f("/gateway/cpuMicrosPerRequest"));
    println!(
        "translated path      ratio {:.3}   CPU {:.1} µs/request (Anthropic in, OpenAI upstream; target ≤ 2× pass-through)",
        f("/translated/ratio"),
        f("/translated/cpuMicrosPerRequest")
    );
    println!(
        "resilience gates     {:.0} ns/request (100 providers × 10 connections; target ≤ 5000)",
        f("/gates/nsPerRequest")
    );
    println!(
        "gateway RSS          idle {:.1} MB   under load {:.1} MB",
        f("/gateway/rssIdleBytes") / 1e6,
        f("/gateway/rssUnderLoadBytes") / 1e6
    );
    let slowest = r
        .pointer("/strategies/nsPerOrder")
        .and_then(Value::as_object)
        .and_then(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).max_by(|a, b| a.1.total_cmp(&b.1)));
    if let Some((name, ns)) = slowest {
        println!("combo strategies     slowest {name} {ns:.0} ns to order 20 targets (target ≤ 2000)");
    }
    println!(
        "session affinity     {:.0} ns/request (hash, lookup and touch with 50,000 pins; target ≤ 1000)",
        f("/affinity/nsPerRequest")
    );
    println!(
        "session leases       fence {:.0} ns/request; leased-connection check {:.0} ns for 10 candidates (1,000 leases; target ≤ 1000)",
        f("/leases/fenceNsPerRequest"),
        f("/leases/exclusionNsPerRequest")
    );
    println!("request queue        off for the phases above (RATE_LIMIT_AUTO_ENABLE=false)");
    println!(
        "  protection on      CPU +{:.1} µs/request (median of paired rounds; target ≤ 3)   throughput on/off {:.3}",
        f("/protection/cpuAddedMicros"),
        f("/protection/rpsRatioOnToOff")
    );
    println!(
        "  queue path alone   {:.0} ns/request (micro-bench: settings, lookup, start, finish)",
        f("/protection/pathMicroBench/nsPerRequest")
    );
    println!(
        "  1,000 queued       RSS +{:.1} MB held (target ≤ 20); the first burst on a fresh process +{:.1} MB",
        f("/protection/queuedMemory/rssAddedBytes") / 1e6,
        f("/protection/queuedMemory/rssAddedFirstBurstBytes") / 1e6
    );
}
