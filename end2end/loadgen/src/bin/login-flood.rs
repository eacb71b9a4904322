//! `login-flood GATEWAY_URL FAKE_UPSTREAM_URL MANAGEMENT_KEY`: the
//! measuring half of `cargo xtask login-flood` (which builds and starts
//! the release gateway and fake upstream, then runs this). It is built in
//! release like the gateway, so the drill judges the gateway, not the
//! load generator's own debug-build cost on a 2-core machine.
//!
//! The gateway proxies 50 requests a second to the fake upstream while,
//! in alternate 5-second windows, 16 source addresses on loopback
//! (127.0.0.2 …) send 200 wrong passwords a second between them. Three
//! rounds of (quiet window, flood window), interleaved so both see the
//! same machine; the proxy's p99 over all flood windows is compared with
//! its p99 over all quiet ones (a window alone has too few samples for a
//! steady p99). When the flood seems to have moved the p99 by more than
//! `FLOOD_MAX_P99_MS` (default 1 ms), three more rounds are measured and
//! the verdict is the median of the six rounds' own moves: the pooled p99
//! of ~750 samples is about the 8th-worst, so a scheduler stall or two of
//! this shared machine can tip it, while a flood that really slows the
//! proxy (argon2 unbounded) moves it by tens of ms in every round. It
//! fails when that move is over the limit, when any proxied request
//! failed, or when the flood was not throttled (argon2 ran for more than
//! a bounded number of attempts; the rest were 429s). `FLOOD_PASSWORD`
//! set to the admin password turns the drill into its own control: a
//! right password takes back the failure its admission counted, so about
//! a third of the flood (1,121 of 3,003 on 2026-12-02) reaches argon2,
//! some 30 times what the throttled wrong-password flood costs.

use anyhow::{Context, bail};
use loadgen::paced::{self, Samples};
use serde_json::json;
use std::{
    net::IpAddr,
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

const ROUNDS: usize = 3;
const WINDOW: Duration = Duration::from_secs(5);
const PROXY_PER_SEC: f64 = 50.0;
const LOGINS_PER_SEC: f64 = 200.0;
const SOURCES: u8 = 16;
/// Wrong passwords checked at most per round while throttled (each
/// address's free failures and the global ones in the first round, one
/// per doubling of the global wait after); an unthrottled flood checks
/// ~1000.
const MAX_CHECKED_PER_ROUND: u64 = 40;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |what: &str| {
        args.next().with_context(|| format!("usage: login-flood GATEWAY_URL FAKE_URL KEY ({what} missing)"))
    };
    let (gw, fake, key) = (next("GATEWAY_URL")?, next("FAKE_URL")?, next("KEY")?);
    let max_p99_ms: f64 = std::env::var("FLOOD_MAX_P99_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    rt.block_on(measure(&gw, &fake, &key, max_p99_ms))
}

async fn measure(gw: &str, fake: &str, key: &str, max_p99_ms: f64) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let conn = json!({"provider": "openai", "name": "fake", "apiKey": "sk-flood", "baseUrl": format!("{fake}/v1")});
    http.post(format!("{gw}/api/providers")).bearer_auth(key).json(&conn).send().await?.error_for_status()?;
    let attackers = (0..SOURCES)
        .map(|i| reqwest::Client::builder().local_address(IpAddr::from([127, 0, 0, 2 + i])).build())
        .collect::<Result<Vec<_>, _>>()?;
    let proxy = || {
        let body = json!({"model": "openai/fake-model", "messages": [{"role": "user", "content": "hi"}]});
        paced::status_of(http.post(format!("{gw}/v1/chat/completions")).json(&body))
    };
    let password = std::env::var("FLOOD_PASSWORD").unwrap_or_else(|_| "not-the-password".into());
    let sent = AtomicUsize::new(0);
    let login = || {
        let client = &attackers[sent.fetch_add(1, Ordering::Relaxed) % attackers.len()];
        paced::status_of(client.post(format!("{gw}/api/auth/login")).json(&json!({"password": password})))
    };
    eprintln!("\n==> {ROUNDS} rounds: proxy alone, then proxy during a login flood ({LOGINS_PER_SEC}/s)");
    let (mut all_quiet, mut all_flood, mut logins) = (Samples::default(), Samples::default(), Samples::default());
    let mut moved = f64::INFINITY;
    let mut moves = Vec::new();
    for round in 1..=2 * ROUNDS {
        if round == ROUNDS + 1 {
            if moved <= max_p99_ms {
                break;
            }
            eprintln!("\n==> the p99 moved {moved:.2} ms: {ROUNDS} more rounds, judged over all");
        }
        let quiet = paced::run(PROXY_PER_SEC, WINDOW, proxy).await;
        let (flood, flooding) =
            tokio::join!(paced::run(PROXY_PER_SEC, WINDOW, proxy), paced::run(LOGINS_PER_SEC, WINDOW, login));
        eprintln!("round {round}: quiet {}\n         flood {}", quiet.summary(), flood.summary());
        moves.push(flood.quantile(0.99) - quiet.quantile(0.99));
        all_quiet.merge(quiet);
        all_flood.merge(flood);
        logins.merge(flooding);
        moved = if round <= ROUNDS { all_flood.quantile(0.99) - all_quiet.quantile(0.99) } else { median(&mut moves) };
    }
    let checked = logins.statuses.get(&401).copied().unwrap_or(0);
    let throttled = logins.statuses.get(&429).copied().unwrap_or(0);
    let report = json!({"proxyP99QuietMs": all_quiet.quantile(0.99), "proxyP99FloodMs": all_flood.quantile(0.99),
                        "p99MovedMs": moved, "roundMovesMs": moves, "logins": logins.sent(), "checked401": checked,
                        "throttled429": throttled, "loginStatuses": format!("{:?}", logins.statuses)});
    println!("{report}");
    if all_quiet.error_rate() + all_flood.error_rate() > 0.0 {
        bail!("proxied requests failed: quiet {:?}, flood {:?}", all_quiet.statuses, all_flood.statuses);
    }
    if checked > MAX_CHECKED_PER_ROUND * moves.len() as u64 || throttled == 0 {
        bail!("the flood was not throttled: {checked} passwords checked, {throttled} refused with 429");
    }
    if moved > max_p99_ms {
        bail!("a login flood moved the proxy's p99 by {moved:.2} ms (limit {max_p99_ms} ms)");
    }
    Ok(())
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
