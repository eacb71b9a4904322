//! The request queue's cost (SPEC §R5). The bench runs with protection off
//! (`RATE_LIMIT_AUTO_ENABLE=false`); these phases turn it on for the bench
//! connection:
//! 1. off vs on with limits it never reaches, 5 paired rounds of c=32
//!    throughput (the order alternating): the CPU per request the queue adds;
//! 2. 1,000 requests waiting in its queue at once: the RSS they add.

use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::time::Duration;

use super::{MGMT_KEY, Target, cpu_ticks, loadgen, percentile, rss_bytes};

/// Paired off/on rounds (more than the other phases: the difference
/// sought is a few µs in a noisy machine).
const PAIRED_ROUNDS: usize = 5;

/// Requests left waiting in the queue for the memory phase.
const QUEUED: usize = 1_000;

/// The API calls of the phases.
pub struct Api {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    gw: String,
    fake: String,
    connection_id: String,
}

impl Api {
    pub fn new(gw: &str, fake: &str, connection_id: String) -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        Ok(Self { rt, http: reqwest::Client::new(), gw: gw.to_owned(), fake: fake.to_owned(), connection_id })
    }

    /// Scripts the fake upstream (`None`: back to its default answers).
    fn fake_rule(&self, rule: Option<Value>) -> anyhow::Result<()> {
        self.rt.block_on(async {
            let url = format!("{}/_control/rules", self.fake);
            let resp = match rule {
                Some(r) => self.http.post(url).json(&r).send().await?,
                None => self.http.delete(url).send().await?,
            };
            if !resp.status().is_success() {
                bail!("fake upstream rules: {}", resp.status());
            }
            Ok(())
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let mut req = self.http.request(method, format!("{}{path}", self.gw)).bearer_auth(MGMT_KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let answer: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{path}: {status} {answer}");
        }
        Ok(answer)
    }

    /// Protection on or off, with `overrides` as the connection's rate limits.
    fn protect(&self, enabled: bool, overrides: Value) -> anyhow::Result<()> {
        self.rt.block_on(async {
            let id = &self.connection_id;
            let limits = json!({"rateLimitOverrides": overrides});
            self.call(reqwest::Method::PUT, &format!("/api/providers/{id}"), Some(limits)).await?;
            let switch = json!({"connectionId": id, "enabled": enabled});
            self.call(reqwest::Method::POST, "/api/rate-limits", Some(switch)).await
        })?;
        Ok(())
    }
}

/// Limits no bench round comes near: the queue is passed through, never waited in.
fn unreachable_limits() -> Value {
    json!({"rpm": 1_000_000, "minTimeBetweenRequestsMs": 0, "maxConcurrent": 10_000})
}

/// Interleaved rounds of the gateway with protection off and on.
pub fn off_vs_on(api: &Api, gateway: &Target, pid: u32) -> anyhow::Result<Value> {
    let (mut off, mut on, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let cpu = |enabled: bool| -> anyhow::Result<(f64, f64)> {
        api.protect(enabled, unreachable_limits())?;
        let before = cpu_ticks(pid)?;
        let run = loadgen(gateway, "throughput", None)?;
        let ticks = cpu_ticks(pid)? - before;
        if run["errors"].as_u64().unwrap_or(0) > 0 {
            bail!("protection {}: {} errors", if enabled { "on" } else { "off" }, run["errors"]);
        }
        let served = run["completed"].as_f64().unwrap_or(0.0) * (1.0 + 1.0 / 4.0);
        Ok((ticks as f64 / super::TICKS_PER_SEC * 1e6 / served.max(1.0), run["rps"].as_f64().unwrap_or(0.0)))
    };
    // The VM drifts: the order alternates so neither side is always second.
    for round in 0..PAIRED_ROUNDS {
        let ((cpu_off, rps_off), (cpu_on, rps_on)) = if round % 2 == 0 {
            let off = cpu(false)?;
            (off, cpu(true)?)
        } else {
            let on = cpu(true)?;
            (cpu(false)?, on)
        };
        off.push(cpu_off);
        on.push(cpu_on);
        ratios.push(rps_on / rps_off.max(f64::MIN_POSITIVE));
    }
    api.protect(false, json!(null))?;
    let added: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a - b).collect();
    Ok(json!({
        "cpuMicrosPerRequestOff": percentile(&off, 0.5),
        "cpuMicrosPerRequestOn": percentile(&on, 0.5),
        "cpuAddedMicros": percentile(&added, 0.5),
        "roundAddedMicros": added,
        "rpsRatioOnToOff": percentile(&ratios, 0.5),
    }))
}

/// RSS added by [`QUEUED`] requests waiting in the connection's queue: one
/// request starts (the queue runs one at a time) and its upstream takes a
/// minute to answer, so the others wait. Two bursts: the first on a
/// process that never held so many (what it adds includes the allocator
/// growing its arenas, which stay resident), the second what waiting
/// requests hold once that memory exists.
pub fn queued_memory(api: &Api, gateway: &Target, pid: u32) -> anyhow::Result<Value> {
    api.fake_rule(Some(json!({"latencyMs": 60_000})))?;
    api.protect(true, json!({"maxConcurrent": 1, "minTimeBetweenRequestsMs": 0, "maxWaitMs": 120_000}))?;
    let first = burst(api, gateway, pid)?;
    let second = burst(api, gateway, pid)?;
    api.protect(false, json!(null))?;
    api.fake_rule(None)?;
    Ok(json!({
        "queued": QUEUED,
        "rssAddedFirstBurstBytes": first,
        "rssAddedBytes": second,
    }))
}

/// RSS added while [`QUEUED`] requests wait; they are dropped after.
fn burst(api: &Api, gateway: &Target, pid: u32) -> anyhow::Result<u64> {
    let before = rss_bytes(pid);
    let held = api.rt.block_on(async {
        let body = json!({"model": gateway.model, "messages": [{"role": "user", "content": "hi"}]});
        let mut requests = Vec::with_capacity(QUEUED + 1);
        for _ in 0..=QUEUED {
            let mut req = api.http.post(&gateway.url).json(&body);
            if let Some(k) = &gateway.key {
                req = req.bearer_auth(k);
            }
            requests.push(tokio::spawn(req.send()));
        }
        wait_for_queued(api, QUEUED).await.map(|_| requests)
    });
    let requests = held?;
    let during = rss_bytes(pid);
    api.rt.block_on(async {
        for r in requests {
            r.abort();
            let _ = r.await;
        }
        // Every place in the line given back before the next burst.
        wait_for_queued(api, 0).await
    })?;
    Ok(during.saturating_sub(before))
}

/// Polls `GET /api/rate-limits` until the queue holds `want` requests —
/// at least that many, or none for 0 (at most 30 s).
async fn wait_for_queued(api: &Api, want: usize) -> anyhow::Result<u64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = api.call(reqwest::Method::GET, "/api/rate-limits", None).await?;
        let queued = list["connections"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["connectionId"] == api.connection_id.as_str()))
            .and_then(|c| c["queued"].as_u64())
            .context("the bench connection is missing from /api/rate-limits")?;
        if (want == 0 && queued == 0) || (want > 0 && queued as usize >= want) {
            return Ok(queued);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{queued} requests queued after 30 s, waiting for {want}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
