//! Open-loop load at a fixed rate, for the drills that judge latency under
//! some other pressure (`soak`, `login_flood`). Requests start on a fixed
//! schedule whether or not earlier ones answered, so a slow gateway shows
//! as latency instead of silently lowering the rate (no coordinated
//! omission).

use std::{collections::BTreeMap, future::Future, time::Duration};
use tokio::time::{Instant, MissedTickBehavior};

/// What a paced run saw.
#[derive(Default)]
pub struct Samples {
    /// Milliseconds from start to the whole answer, of every 2xx.
    pub latencies_ms: Vec<f64>,
    /// Answers by status; 0 = no answer (transport error or timeout).
    pub statuses: BTreeMap<u16, u64>,
}

impl Samples {
    pub fn sent(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Answers that were not a 2xx, as a share of everything sent.
    pub fn error_rate(&self) -> f64 {
        let bad: u64 = self.statuses.iter().filter(|(s, _)| !(200..300).contains(*s)).map(|(_, n)| n).sum();
        bad as f64 / self.sent().max(1) as f64
    }

    /// The `q` quantile (0..=1) of the 2xx latencies, in ms.
    pub fn quantile(&self, q: f64) -> f64 {
        let mut v = self.latencies_ms.clone();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return f64::NAN;
        }
        let i = ((v.len() - 1) as f64 * q).round() as usize;
        v[i.min(v.len() - 1)]
    }

    pub fn merge(&mut self, other: Samples) {
        self.latencies_ms.extend(other.latencies_ms);
        for (s, n) in other.statuses {
            *self.statuses.entry(s).or_default() += n;
        }
    }

    /// `p50 / p95 / p99` and the error count, for a progress line.
    pub fn summary(&self) -> String {
        let errors = (self.error_rate() * self.sent() as f64).round();
        format!(
            "{} sent, p50 {:.2} / p95 {:.2} / p99 {:.2} ms, {errors} not 2xx",
            self.sent(),
            self.quantile(0.5),
            self.quantile(0.95),
            self.quantile(0.99)
        )
    }
}

/// Starts `send()` `per_sec` times a second for `length`; each resolves
/// to the answer's status (0 for none). Waits for the stragglers.
pub async fn run<F, Fut>(per_sec: f64, length: Duration, send: F) -> Samples
where
    F: Fn() -> Fut,
    Fut: Future<Output = u16> + Send + 'static,
{
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / per_sec));
    ticks.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let mut running = tokio::task::JoinSet::new();
    let mut out = Samples::default();
    let end = Instant::now() + length;
    while ticks.tick().await < end {
        let answer = send();
        running.spawn(async move {
            let started = Instant::now();
            let status = answer.await;
            (status, started.elapsed())
        });
        while let Some(Ok(done)) = running.try_join_next() {
            out.record(done);
        }
    }
    while let Some(Ok(done)) = running.join_next().await {
        out.record(done);
    }
    out
}

impl Samples {
    fn record(&mut self, (status, took): (u16, Duration)) {
        *self.statuses.entry(status).or_default() += 1;
        if (200..300).contains(&status) {
            self.latencies_ms.push(took.as_secs_f64() * 1000.0);
        }
    }
}

/// The status of a sent request once its whole body arrived (0 for none).
pub async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    let Ok(resp) = request.send().await else { return 0 };
    let status = resp.status().as_u16();
    if resp.bytes().await.is_ok() { status } else { 0 }
}
