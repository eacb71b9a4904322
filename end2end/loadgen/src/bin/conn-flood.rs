//! `conn-flood GATEWAY_URL FAKE_UPSTREAM_URL MANAGEMENT_KEY`: the measuring
//! half of `cargo xtask conn-flood` (which starts the release gateway on
//! its default connection limits, with `OMNIROUTE_BODY_DEADLINE_MS=5000`
//! so the drill is short). Two floods from one client address
//! (127.0.0.2), each asserting that a second client (127.0.0.3) is still
//! served — proxied requests and the model list — while it lasts:
//!
//! 1. **Connections**: 3,000 connections, each a request head that never
//!    ends. The gateway holds the client's share of its budget and
//!    refuses the rest at once (`503`).
//! 2. **Slow bodies**: 3,000 sign-ins whose body comes one byte every 2 s
//!    (never a pause long enough for the body timeout). Besides the share,
//!    every one the gateway took must be cut (`400`) by the body deadline,
//!    none left open.
//!
//! It fails when a probe of the second client fails, when the flood was
//! not limited, or when a slow body outlived its deadline.

use anyhow::{Context, bail, ensure};
use serde_json::json;
use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpSocket, TcpStream},
    sync::Semaphore,
    task::JoinSet,
    time::Instant,
};

const FLOOD: usize = 3_000;
const FLOODER: [u8; 4] = [127, 0, 0, 2];
const OTHER: [u8; 4] = [127, 0, 0, 3];
/// The gateway's `OMNIROUTE_BODY_DEADLINE_MS` in this drill.
const BODY_DEADLINE: Duration = Duration::from_secs(5);
const TRICKLE: Duration = Duration::from_secs(2);
const PROBES: usize = 20;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |what: &str| {
        args.next().with_context(|| format!("usage: conn-flood GATEWAY_URL FAKE_URL KEY ({what} missing)"))
    };
    let (gw, fake, key) = (next("GATEWAY_URL")?, next("FAKE_URL")?, next("KEY")?);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    rt.block_on(drill(&gw, &fake, &key))
}

/// How one flood connection ended.
#[derive(Debug)]
enum End {
    /// The gateway answered (the start of its answer), after this long.
    Answered(Duration, String),
    /// The gateway closed without an answer.
    Closed(Duration),
    /// Still open when the phase ended.
    Held,
    /// The connection could not be made.
    Failed(String),
}

async fn drill(gw: &str, fake: &str, key: &str) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let conn = json!({"provider": "openai", "name": "fake", "apiKey": "sk-flood", "baseUrl": format!("{fake}/v1")});
    http.post(format!("{gw}/api/providers")).bearer_auth(key).json(&conn).send().await?.error_for_status()?;
    let addr: SocketAddr = gw.trim_start_matches("http://").parse().context("the gateway's address")?;
    let other = reqwest::Client::builder().local_address(IpAddr::from(OTHER)).build()?;

    eprintln!("\n==> one client opens {FLOOD} connections, each a head that never ends");
    let head: &'static [u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    let (ends, probed) = flood(addr, head, None, Duration::from_secs(6), || probe(&other, gw)).await?;
    let (refused, held) = (count(&ends, |e| answered(e, "HTTP/1.1 503")), count(&ends, |e| matches!(e, End::Held)));
    report("connections", &ends, &probed);
    probed?;
    ensure!(refused > 0 && held < FLOOD, "one client took every connection it asked for ({held} held)");

    eprintln!("\n==> one client opens {FLOOD} sign-ins whose body comes a byte every {TRICKLE:?}");
    let head: &'static [u8] = b"POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n";
    let hold = BODY_DEADLINE * 2;
    let (ends, probed) = flood(addr, head, Some(TRICKLE), hold, || probe(&other, gw)).await?;
    report("slow bodies", &ends, &probed);
    probed?;
    let late = count(&ends, |e| {
        matches!(e, End::Held) || matches!(e, End::Answered(t, _) | End::Closed(t) if *t > BODY_DEADLINE + TRICKLE)
    });
    let cut = count(&ends, |e| answered(e, "HTTP/1.1 400"));
    ensure!(count(&ends, |e| answered(e, "HTTP/1.1 503")) > 0, "the slow bodies of one client were not limited");
    ensure!(cut > 0 && late == 0, "{late} slow bodies outlived the body deadline ({cut} were cut in time)");
    Ok(())
}

/// Opens `FLOOD` connections from the flooder, each sending `head` (then
/// a byte every `trickle`), and once all are open runs `probe`; each
/// connection's end within `hold`, and the probe's verdict.
async fn flood<F: Future<Output = anyhow::Result<()>>>(
    addr: SocketAddr,
    head: &'static [u8],
    trickle: Option<Duration>,
    hold: Duration,
    probe: impl FnOnce() -> F,
) -> anyhow::Result<(Vec<End>, anyhow::Result<()>)> {
    let opened = Arc::new(Semaphore::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..FLOOD {
        let opened = opened.clone();
        tasks.spawn(async move {
            let end = one(addr, head, trickle, hold, || opened.add_permits(1)).await;
            // A connection that failed to open still counts as opened.
            if matches!(end, End::Failed(_)) {
                opened.add_permits(1);
            }
            end
        });
    }
    let all = u32::try_from(FLOOD)?;
    let _all_open = opened.acquire_many(all).await?;
    let probed = probe().await;
    let mut ends = Vec::with_capacity(FLOOD);
    while let Some(end) = tasks.join_next().await {
        ends.push(end?);
    }
    Ok((ends, probed))
}

/// One flood connection: `head`, then a byte every `trickle`, until the
/// gateway answers or closes, or `hold` passes.
async fn one(addr: SocketAddr, head: &[u8], trickle: Option<Duration>, hold: Duration, open: impl FnOnce()) -> End {
    let mut tcp = match connect_from(addr, FLOODER).await {
        Ok(tcp) => tcp,
        Err(e) => return End::Failed(e.to_string()),
    };
    let started = Instant::now();
    let sent = tcp.write_all(head).await;
    open();
    if let Err(e) = sent {
        return End::Failed(e.to_string());
    }
    let end = started + hold;
    let mut buf = [0u8; 256];
    loop {
        let wake = trickle.map_or(end, |t| (Instant::now() + t).min(end));
        match tokio::time::timeout_at(wake, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return End::Closed(started.elapsed()),
            Ok(Ok(n)) => return End::Answered(started.elapsed(), String::from_utf8_lossy(&buf[..n]).into()),
            Err(_) if Instant::now() >= end => return End::Held,
            Err(_) => {
                if tcp.write_all(b" ").await.is_err() {
                    return End::Closed(started.elapsed());
                }
            }
        }
    }
}

async fn connect_from(addr: SocketAddr, from: [u8; 4]) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((from, 0)))?;
    socket.connect(addr).await
}

/// The second client: proxied requests and the model list, each a 200.
async fn probe(client: &reqwest::Client, gw: &str) -> anyhow::Result<()> {
    let body = json!({"model": "openai/fake-model", "messages": [{"role": "user", "content": "hi"}]});
    for _ in 0..PROBES {
        let resp = client.post(format!("{gw}/v1/chat/completions")).json(&body).send().await?;
        if !resp.status().is_success() {
            bail!("a second client's proxied request got {}: {}", resp.status(), resp.text().await?);
        }
        let models = client.get(format!("{gw}/v1/models")).send().await?;
        if !models.status().is_success() {
            bail!("a second client's model list got {}", models.status());
        }
    }
    Ok(())
}

fn answered(end: &End, status_line: &str) -> bool {
    matches!(end, End::Answered(_, text) if text.starts_with(status_line))
}

fn count(ends: &[End], f: impl Fn(&End) -> bool) -> usize {
    ends.iter().filter(|e| f(e)).count()
}

fn report(phase: &str, ends: &[End], probed: &anyhow::Result<()>) {
    let slowest = |status: &str| {
        ends.iter()
            .filter_map(|e| match e {
                End::Answered(t, text) if text.starts_with(status) => Some(t.as_millis()),
                _ => None,
            })
            .max()
    };
    let failed: Vec<&String> =
        ends.iter().filter_map(|e| if let End::Failed(e) = e { Some(e) } else { None }).collect();
    let summary = json!({
        "phase": phase, "connections": ends.len(),
        "refused503": count(ends, |e| answered(e, "HTTP/1.1 503")), "slowest503Ms": slowest("HTTP/1.1 503"),
        "cut400": count(ends, |e| answered(e, "HTTP/1.1 400")), "slowest400Ms": slowest("HTTP/1.1 400"),
        "closed": count(ends, |e| matches!(e, End::Closed(_))), "held": count(ends, |e| matches!(e, End::Held)),
        "failedToOpen": failed.len(), "firstFailure": failed.first(),
        "secondClient": probed.as_ref().map_or_else(|e| e.to_string(), |()| format!("{PROBES} × (chat, models): all 200")),
    });
    println!("{summary}");
}
