//! Traffic over time for Health's charts: per provider and connection,
//! per minute of the last day, upstream attempts by outcome class and a
//! latency histogram (and one of the gateway's own waits before each
//! attempt), and the tokens the attempts spent. The request log's writer feeds it the rows it
//! stores (in batches, off the request path), and it is seeded from
//! `proxy_logs` once at start, so a page view reads memory and never
//! scans the log. Refused requests (no upstream call) are not traffic:
//! they have no [`Sample`].

use app::types::{
    StatusClass,
    traffic::{ConnectionTraffic, ProviderTraffic, TrafficPoint, TrafficReport, TrafficSeries, traffic_window},
};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};

const MINUTE_MS: i64 = 60_000;
/// Minutes kept: a day, plus the hour before the last for its delta.
const KEEP_MINUTES: i64 = 25 * 60;
/// How far back the rollup reaches (and is seeded at start).
pub const KEEP_MS: i64 = KEEP_MINUTES * MINUTE_MS;
/// Upper bounds (ms) of the latency histogram's bins; one more bin holds
/// everything slower.
const BOUNDS_MS: [u32; 24] = [
    5, 10, 20, 35, 50, 75, 100, 150, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000, 15_000,
    30_000, 60_000, 120_000, 300_000,
];
const BINS: usize = BOUNDS_MS.len() + 1;

/// One minute of one connection.
#[derive(Clone, Default)]
struct Bucket {
    /// By [`StatusClass::ALL`]'s order.
    outcomes: [u32; 5],
    latency: [u32; BINS],
    /// The gateway's own hold before each attempt (`waitMs`).
    wait: [u32; BINS],
    /// Input, output and cached input tokens, as the answers reported them.
    tokens: [u64; 3],
}

/// The bin of a duration.
fn bin(ms: i64) -> usize {
    let ms = u32::try_from(ms.max(0)).unwrap_or(u32::MAX);
    BOUNDS_MS.iter().position(|b| ms <= *b).unwrap_or(BOUNDS_MS.len())
}

impl Bucket {
    fn add(&mut self, s: &Sample<'_>) {
        if let Some(i) = StatusClass::ALL.iter().position(|c| c.contains(s.status)) {
            self.outcomes[i] += 1;
        }
        self.latency[bin(s.latency_ms)] += 1;
        self.wait[bin(s.wait_ms)] += 1;
        self.tokens.iter_mut().zip(s.tokens).for_each(|(a, b)| *a += b);
    }

    fn merge(&mut self, other: &Bucket) {
        self.outcomes.iter_mut().zip(other.outcomes).for_each(|(a, b)| *a += b);
        self.latency.iter_mut().zip(other.latency).for_each(|(a, b)| *a += b);
        self.wait.iter_mut().zip(other.wait).for_each(|(a, b)| *a += b);
        self.tokens.iter_mut().zip(other.tokens).for_each(|(a, b)| *a += b);
    }

    /// The `q` quantile of a histogram, interpolated inside its bin.
    fn quantile(histogram: &[u32; BINS], q: f64) -> Option<u32> {
        let n: u32 = histogram.iter().sum();
        if n == 0 {
            return None;
        }
        let rank = q * f64::from(n);
        let mut below = 0u32;
        for (i, count) in histogram.iter().enumerate().filter(|(_, c)| **c > 0) {
            if f64::from(below + count) >= rank {
                let low = if i == 0 { 0 } else { BOUNDS_MS[i - 1] };
                let Some(high) = BOUNDS_MS.get(i) else { return Some(low) };
                let within = ((rank - f64::from(below)) / f64::from(*count)).clamp(0.0, 1.0);
                return Some(low + ((f64::from(high - low) * within).round() as u32));
            }
            below += count;
        }
        None
    }

    fn point(&self) -> TrafficPoint {
        let [ok, client_errors, rate_limited, server_errors, transport] = self.outcomes;
        let [input_tokens, output_tokens, cached_tokens] = self.tokens;
        TrafficPoint {
            ok,
            client_errors,
            rate_limited,
            server_errors,
            transport,
            p50_ms: Self::quantile(&self.latency, 0.5),
            p95_ms: Self::quantile(&self.latency, 0.95),
            wait_p95_ms: Self::quantile(&self.wait, 0.95),
            input_tokens,
            output_tokens,
            cached_tokens,
        }
    }
}

/// One connection's minutes.
type Minutes = BTreeMap<i64, Bucket>;

/// What the rollup counts of one upstream attempt.
pub struct Sample<'a> {
    provider: &'a str,
    connection_id: &'a str,
    /// Epoch ms.
    at: i64,
    status: i32,
    latency_ms: i64,
    wait_ms: i64,
    /// Input, output, cached input.
    tokens: [u64; 3],
}

impl<'a> Sample<'a> {
    pub fn new(provider: &'a str, connection_id: &'a str, at: i64, status: i32, latency_ms: i64) -> Self {
        Self { provider, connection_id, at, status, latency_ms, wait_ms: 0, tokens: [0; 3] }
    }

    /// The attempt spent these tokens (unknown counts as none).
    pub fn spent(self, input: Option<i64>, output: Option<i64>, cached: Option<i64>) -> Self {
        let n = |t: Option<i64>| u64::try_from(t.unwrap_or(0)).unwrap_or(0);
        Self { tokens: [n(input), n(output), n(cached)], ..self }
    }

    /// The gateway held the request `wait_ms` before the attempt.
    pub fn waited(self, wait_ms: i64) -> Self {
        Self { wait_ms, ..self }
    }
}

#[derive(Default)]
pub struct Traffic {
    /// By provider, then connection id.
    series: Mutex<HashMap<String, HashMap<String, Minutes>>>,
}

impl Traffic {
    /// Counts upstream attempts.
    pub fn add<'a>(&self, samples: impl IntoIterator<Item = Sample<'a>>) {
        let mut series = self.series.lock();
        for s in samples {
            let provider = series.entry(s.provider.to_owned()).or_default();
            let minutes = provider.entry(s.connection_id.to_owned()).or_default();
            minutes.entry(s.at.div_euclid(MINUTE_MS)).or_default().add(&s);
        }
    }

    /// Drops minutes older than a day (and series left empty).
    pub fn prune(&self, now_ms: i64) {
        let oldest = now_ms.div_euclid(MINUTE_MS) - KEEP_MINUTES;
        let mut series = self.series.lock();
        for connections in series.values_mut() {
            for minutes in connections.values_mut() {
                *minutes = minutes.split_off(&oldest);
            }
            connections.retain(|_, m| !m.is_empty());
        }
        series.retain(|_, c| !c.is_empty());
    }

    /// The report for a window key (`1h`, `24h`); `name_of` names
    /// connections, `breaker` gives a provider's breaker spans.
    pub fn report(
        &self,
        now_ms: i64,
        window: &str,
        name_of: impl Fn(&str) -> Option<String>,
        breaker: impl Fn(&str, i64, i64) -> Vec<app::types::traffic::BreakerSpan>,
    ) -> TrafficReport {
        self.prune(now_ms);
        let (key, _, window_ms, bucket_ms) = traffic_window(window);
        let buckets = usize::try_from(window_ms / bucket_ms).unwrap_or(1);
        // The last bucket ends with the current minute.
        let end = (now_ms.div_euclid(MINUTE_MS) + 1) * MINUTE_MS;
        let start = end - window_ms;
        let grid = Grid { start, bucket_ms, buckets };
        let hour = Grid { start: end - 3_600_000, bucket_ms: 3_600_000, buckets: 1 };
        let before = Grid { start: end - 7_200_000, bucket_ms: 3_600_000, buckets: 1 };
        let series = self.series.lock();
        let (mut last_hour, mut previous_hour) = (Bucket::default(), Bucket::default());
        let mut providers: Vec<ProviderTraffic> = series
            .iter()
            .map(|(provider, connections)| {
                let mut sum = vec![Bucket::default(); buckets];
                let mut conns: Vec<ConnectionTraffic> = connections
                    .iter()
                    .filter_map(|(id, minutes)| {
                        hour.fill(minutes, std::slice::from_mut(&mut last_hour));
                        before.fill(minutes, std::slice::from_mut(&mut previous_hour));
                        let mut own = vec![Bucket::default(); buckets];
                        grid.fill(minutes, &mut own);
                        sum.iter_mut().zip(&own).for_each(|(s, o)| s.merge(o));
                        let series = series_of(&own);
                        // The gateway's own refusals ("") count for the provider only.
                        (series.total.requests() > 0 && !id.is_empty()).then(|| ConnectionTraffic {
                            id: id.clone(),
                            name: name_of(id),
                            series,
                        })
                    })
                    .collect();
                conns.sort_by(|a, b| a.name.cmp(&b.name));
                ProviderTraffic {
                    provider: provider.clone(),
                    series: series_of(&sum),
                    connections: conns,
                    breaker: breaker(provider, start, now_ms),
                }
            })
            .filter(|p| p.series.total.requests() > 0 || p.breaker.iter().any(|s| s.state != "CLOSED"))
            .collect();
        providers.sort_by(|a, b| a.provider.cmp(&b.provider));
        TrafficReport {
            window: key.to_owned(),
            start_ms: start,
            bucket_ms,
            generated_at: now_ms,
            providers,
            last_hour: last_hour.point(),
            previous_hour: previous_hour.point(),
        }
    }
}

/// Buckets of equal length from `start`.
struct Grid {
    start: i64,
    bucket_ms: i64,
    buckets: usize,
}

impl Grid {
    /// Adds every minute inside the grid to its bucket of `out`.
    fn fill(&self, minutes: &Minutes, out: &mut [Bucket]) {
        let first = self.start.div_euclid(MINUTE_MS);
        for (minute, bucket) in minutes.range(first..) {
            let i = usize::try_from((minute * MINUTE_MS - self.start) / self.bucket_ms).unwrap_or(usize::MAX);
            if let Some(slot) = out.get_mut(i).filter(|_| i < self.buckets) {
                slot.merge(bucket);
            }
        }
    }
}

fn series_of(buckets: &[Bucket]) -> TrafficSeries {
    let mut total = Bucket::default();
    buckets.iter().for_each(|b| total.merge(b));
    TrafficSeries { total: total.point(), points: buckets.iter().map(Bucket::point).collect() }
}

#[cfg(test)]
mod tests;
