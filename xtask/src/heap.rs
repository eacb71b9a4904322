//! `cargo xtask heap`: what open streams cost the gateway in memory, and
//! whether it gives the memory back (§T, issue [J] item 2, [N] item 8).
//!
//! The release gateway streams from a fake upstream that sends one event
//! and then holds the stream open. Each of two runs, on a fresh stack,
//! sends 500 streams one after another, then a burst of `HEAP_BURST`
//! (default 10,000) streams all held open together, and reads the
//! gateway's RSS while they are all open:
//! - to a plain HTTP/1.1 upstream (a connection per stream on both
//!   sides), the streams opened [`OPENING`] at a time; it closes them and
//!   reads RSS again `HEAP_SETTLE_SECS` (default 60) later. It fails when
//!   10,000 open streams take (or would take) more than `HEAP_MAX_MB`
//!   (400 MB), or when RSS is still more than
//!   [`MAX_ABOVE_PRE_BURST_PERCENT`] above its pre-burst level;
//! - to an upstream offering HTTP/2 over TLS, as the providers are
//!   reached, every stream opened at once (a storm); it fails above
//!   `HEAP_H2_MAX_MB` (250 MB).
//!
//! Each open stream holds up to two descriptors in the gateway (its client
//! and upstream sockets), so the suite first raises the descriptor limit
//! its processes inherit (the hard limit too where the user may); where
//! the machine allows fewer streams, the burst shrinks to fit and the
//! figure for 10,000 is projected from it.

use anyhow::{Context, bail};
use serde_json::json;
use std::{sync::Arc, time::Duration};
use tokio::sync::{Barrier, Semaphore};

use crate::{
    e2e::start_stack_with,
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

/// How far above its pre-burst level RSS may stay once the settle time
/// after the burst is over.
const MAX_ABOVE_PRE_BURST_PERCENT: u64 = 25;

/// Streams being opened at once: clients arrive over time, not in one
/// instant (a storm of 10,000 simultaneous requests peaks higher, while
/// all of them are between their request and their first event; see
/// `docs/testing.md`).
const OPENING: usize = 256;

/// The streams the issue sizes the gateway for.
const TARGET_STREAMS: u64 = 10_000;

/// Descriptors the gateway keeps for itself (its client budget is half
/// of what is left after this reserve, `listener::capacity`), with room
/// for the 500 sequential streams' pooled upstream sockets.
const GATEWAY_RESERVE_FDS: u64 = 1_024;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Raises this process's descriptor limit (inherited by the gateway and
/// the fake upstream) towards `wanted`: the hard limit too where the user
/// may; returns the soft limit now in force.
fn raise_fd_limit(wanted: u64) -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and write only the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1_024;
        }
        let raised = libc::rlimit { rlim_cur: wanted, rlim_max: wanted.max(limit.rlim_max) };
        let within_hard = libc::rlimit { rlim_cur: wanted.min(limit.rlim_max), rlim_max: limit.rlim_max };
        for attempt in [raised, within_hard] {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &attempt) == 0 {
                return attempt.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

pub fn run() -> anyhow::Result<()> {
    let wanted = env_u64("HEAP_BURST", TARGET_STREAMS);
    let fd_limit = raise_fd_limit(2 * wanted + GATEWAY_RESERVE_FDS);
    let fits = fd_limit.saturating_sub(GATEWAY_RESERVE_FDS) / 2;
    let burst = wanted.min(fits);
    if burst < wanted {
        println!("heap: the descriptor limit ({fd_limit}) allows {burst} open streams, not {wanted}");
    }
    util::build_release_stack()?;
    // Clients arriving over time, to a plain HTTP/1.1 upstream (a
    // connection per stream on both sides); then whether memory comes back.
    let plain = Run {
        https: false,
        opening: OPENING,
        max_mb: env_u64("HEAP_MAX_MB", 400),
        settle: Some(Duration::from_secs(env_u64("HEAP_SETTLE_SECS", 60))),
    };
    // A storm (every stream at once) to an upstream offering HTTP/2 over
    // TLS, as the providers are reached: the streams share its connection.
    let storm =
        Run { https: true, opening: usize::try_from(burst)?, max_mb: env_u64("HEAP_H2_MAX_MB", 250), settle: None };
    plain.on_a_fresh_stack(burst)?;
    storm.on_a_fresh_stack(burst)
}

/// One measured burst.
struct Run {
    /// The fake upstream over TLS, offering HTTP/2 (else plain HTTP/1.1).
    https: bool,
    /// Streams being opened at once.
    opening: usize,
    /// The most 10,000 open streams may take.
    max_mb: u64,
    /// How long after the burst RSS must be back near its pre-burst level
    /// (`None`: not checked).
    settle: Option<Duration>,
}

impl Run {
    fn on_a_fresh_stack(&self, burst: u64) -> anyhow::Result<()> {
        let data_dir = util::target_dir().join(format!("heap-data-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        let ca = fake_upstream::ca_file();
        // Without request-queue pacing, so a burst is a burst; every stream
        // comes from one address, which may take the whole budget here.
        let env = [
            ("OMNIROUTE_MANAGEMENT_KEY", "heap-key"),
            ("STREAM_IDLE_TIMEOUT_MS", "600000"),
            ("RATE_LIMIT_AUTO_ENABLE", "false"),
            ("OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT", "1000000"),
            ("OMNIROUTE_UPSTREAM_CA_FILE", ca.to_str().unwrap_or_default()),
        ];
        let fake_args: &[&str] = if self.https { &["--tls"] } else { &[] };
        let result = (|| {
            let (gateway, _fake, gw, fake_url) =
                start_stack_with("release", &data_dir, "warn,omniroute=info", &env, fake_args)?;
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            rt.block_on(self.measure(gateway.pid(), &gw, &fake_url, burst))
        })();
        let _ = std::fs::remove_dir_all(&data_dir);
        result
    }

    async fn measure(&self, pid: u32, gw: &str, fake: &str, burst: u64) -> anyhow::Result<()> {
        let upstream = if self.https { "HTTP/2 over TLS" } else { "HTTP/1.1" };
        // Trusts the fake's test authority, for its control calls over HTTPS.
        let test_ca = reqwest::Certificate::from_pem(&std::fs::read(fake_upstream::ca_file())?)?;
        let http = reqwest::Client::builder().pool_max_idle_per_host(0).add_root_certificate(test_ca).build()?;
        let api = |m: reqwest::Method, path: &str| http.request(m, format!("{gw}{path}")).bearer_auth("heap-key");
        let conn = json!({"provider": "openai", "name": "slow", "apiKey": "sk-heap", "baseUrl": format!("{fake}/v1")});
        api(reqwest::Method::POST, "/api/providers").json(&conn).send().await?.error_for_status()?;
        // The role chunk and the first word, then the stream stays open until
        // the client leaves (a role chunk alone commits nothing: the stream
        // would wait for its readiness timeout).
        let rule = json!({"stallAfterChunks": 2});
        http.post(format!("{fake}/_control/rules")).json(&rule).send().await?.error_for_status()?;
        let start = rss_kb(pid)?;

        step(&format!("500 sequential streams from an upstream on {upstream}"));
        for _ in 0..500 {
            let mut resp = open_stream(&http, gw).await?;
            resp.chunk().await?;
        }
        let after_sequential = rss_kb(pid)?;

        step(&format!("{burst} concurrent streams, opened {} at a time", self.opening));
        let peak = hold_open(&http, gw, burst, self.opening, || rss_kb(pid)).await?;
        let added = peak.saturating_sub(after_sequential);
        let per_stream = added / burst;
        // Measured when the burst is 10,000, else projected from it.
        let for_target_mb = (after_sequential + added * TARGET_STREAMS / burst) / 1024;
        let projected = if burst < TARGET_STREAMS { "would be ~" } else { "" };
        print!(
            "heap ({upstream} upstream, {} at a time): start {} MB, after 500 sequential {} MB, {burst} open streams {} MB ({per_stream} KB each; {TARGET_STREAMS} {projected}{for_target_mb} MB)",
            self.opening,
            start / 1024,
            after_sequential / 1024,
            peak / 1024,
        );
        let settled = match self.settle {
            Some(settle) => {
                println!();
                step(&format!("closed; waiting {} s for the memory to come back", settle.as_secs()));
                tokio::time::sleep(settle).await;
                let settled = rss_kb(pid)?;
                let above_pre_burst = (settled as f64 / after_sequential as f64 - 1.0) * 100.0;
                println!(
                    "heap: {} s after closing {} MB ({above_pre_burst:+.0} % of the pre-burst level)",
                    settle.as_secs(),
                    settled / 1024
                );
                Some(settled)
            }
            None => {
                println!();
                None
            }
        };
        if for_target_mb > self.max_mb {
            bail!("{TARGET_STREAMS} open streams take {projected}{for_target_mb} MB (at most {} MB)", self.max_mb);
        }
        if let Some(settled) = settled
            && settled * 100 > after_sequential * (100 + MAX_ABOVE_PRE_BURST_PERCENT)
        {
            bail!(
                "RSS stayed at {} MB after the burst (before it: {} MB, at its peak {} MB): more than {MAX_ABOVE_PRE_BURST_PERCENT} % above its pre-burst level",
                settled / 1024,
                after_sequential / 1024,
                peak / 1024
            );
        }
        Ok(())
    }
}

/// Opens `burst` streams, `opening` at a time, and holds them all open
/// until `rss` is read; fails unless every one got its first event.
async fn hold_open(
    http: &reqwest::Client,
    gw: &str,
    burst: u64,
    opening: usize,
    rss: impl Fn() -> anyhow::Result<u64>,
) -> anyhow::Result<u64> {
    let barrier = Arc::new(Barrier::new(usize::try_from(burst)? + 1));
    let opening = Arc::new(Semaphore::new(opening));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..burst {
        let (http, gw, barrier, opening) = (http.clone(), gw.to_owned(), barrier.clone(), opening.clone());
        tasks.spawn(async move {
            let permit = opening.acquire_owned().await;
            let mut resp = open_stream(&http, &gw).await;
            let first = match resp.as_mut() {
                Ok(r) => r.chunk().await.map(|c| c.is_some()).unwrap_or(false),
                Err(_) => false,
            };
            drop(permit);
            barrier.wait().await;
            // Hold the stream until every other one is open and measured.
            barrier.wait().await;
            first
        });
    }
    barrier.wait().await;
    let peak = rss();
    barrier.wait().await;
    let mut opened = 0;
    while let Some(r) = tasks.join_next().await {
        opened += u64::from(r?);
    }
    if opened < burst {
        bail!("only {opened} of {burst} streams got their first event");
    }
    peak
}

async fn open_stream(http: &reqwest::Client, gw: &str) -> anyhow::Result<reqwest::Response> {
    let body = json!({"model": "openai/gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    Ok(http.post(format!("{gw}/v1/chat/completions")).json(&body).send().await?.error_for_status()?)
}
