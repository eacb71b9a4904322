#![allow(clippy::unwrap_used)]

use super::*;
use crate::store::attempt::AttemptRecord;

fn add(t: &Traffic, rows: &[AttemptRecord]) {
    t.add(rows.iter().filter_map(AttemptRecord::sample));
}

const NOW: i64 = 1_800_000_000_000;

fn row(provider: &str, connection: &str, at: i64, status: i32, latency_ms: i64) -> AttemptRecord {
    AttemptRecord {
        provider: provider.into(),
        connection_id: Some(connection.into()),
        created_at: at,
        status,
        latency_ms,
        ..AttemptRecord::default()
    }
}

fn report(t: &Traffic, window: &str) -> TrafficReport {
    t.report(NOW, window, |id| Some(format!("name-{id}")), |_, _, _| Vec::new())
}

#[test]
fn percentiles_interpolate_inside_their_bin() {
    let t = Traffic::default();
    add(&t, &(1..=100).map(|ms| row("p", "c", NOW, 200, ms)).collect::<Vec<_>>());
    let total = report(&t, "1h").providers[0].series.total.clone();
    assert_eq!((total.ok, total.p50_ms, total.p95_ms), (100, Some(50), Some(95)));
}

#[test]
fn outcomes_land_in_their_class_and_their_minute() {
    let t = Traffic::default();
    add(
        &t,
        &[
            row("p", "a", NOW, 200, 10),
            row("p", "a", NOW, 429, 10),
            row("p", "b", NOW - 10 * MINUTE_MS, 503, 10),
            row("p", "b", NOW - 10 * MINUTE_MS, 0, 10),
            row("p", "b", NOW - 10 * MINUTE_MS, 404, 10),
            // Older than the hour: only in the day.
            row("p", "a", NOW - 2 * 3_600_000, 200, 10),
            // A request the gateway refused itself counts for its provider, under no connection.
            AttemptRecord { refused: true, connection_id: None, ..row("p", "a", NOW, 503, 0) },
            // One refused before its provider was known has nowhere to count.
            AttemptRecord { refused: true, connection_id: None, ..row("", "", NOW, 401, 0) },
        ],
    );
    let r = report(&t, "1h");
    let p = &r.providers[0];
    assert_eq!(p.series.points.len(), 60);
    let last = p.series.points.last().unwrap();
    assert_eq!((last.ok, last.rate_limited, last.server_errors), (1, 1, 1));
    let earlier = &p.series.points[59 - 10];
    assert_eq!((earlier.server_errors, earlier.transport, earlier.client_errors), (1, 1, 1));
    assert_eq!(p.series.total.requests(), 6);
    let names: Vec<_> = p.connections.iter().map(|c| c.name.clone().unwrap()).collect();
    assert_eq!(names, ["name-a", "name-b"], "the refusal is no connection's");
    assert_eq!(r.providers.len(), 1);
    let day = report(&t, "24h");
    assert_eq!(day.providers[0].series.points.len(), 48);
    assert_eq!(day.providers[0].series.total.requests(), 7);
    assert_eq!((day.last_hour.requests(), day.previous_hour.requests()), (6, 0));
    assert!((r.last_hour.error_rate() - 5.0 / 6.0).abs() < 1e-9);
}

#[test]
fn the_previous_hour_is_counted_apart() {
    let t = Traffic::default();
    add(&t, &[row("p", "a", NOW - 90 * MINUTE_MS, 500, 10), row("p", "a", NOW - 5 * MINUTE_MS, 200, 10)]);
    let r = report(&t, "1h");
    assert_eq!((r.last_hour.ok, r.previous_hour.server_errors), (1, 1));
}

#[test]
fn a_stream_counts_its_time_to_first_event() {
    let t = Traffic::default();
    add(&t, &[AttemptRecord { stream: true, ttfb_ms: Some(40), ..row("p", "a", NOW, 200, 60_000) }]);
    // 40 ms falls in the 35–50 ms bin; the whole answer (60 s) would not.
    let p95 = report(&t, "1h").providers[0].series.total.p95_ms.unwrap();
    assert!((35..=50).contains(&p95), "{p95}");
}

#[test]
fn prune_forgets_what_is_older_than_a_day() {
    let t = Traffic::default();
    add(&t, &[row("old", "a", NOW - 26 * 3_600_000, 200, 10), row("new", "b", NOW, 200, 10)]);
    t.prune(NOW);
    assert_eq!(t.series.lock().keys().collect::<Vec<_>>(), ["new"]);
}

#[test]
fn the_gateways_own_wait_has_its_percentile() {
    let t = Traffic::default();
    let waited = |ms| AttemptRecord { wait_ms: ms, ..row("p", "a", NOW, 200, 10) };
    add(&t, &(0..19).map(|_| waited(0)).chain([waited(3_000), waited(3_000)]).collect::<Vec<_>>());
    let last_hour = report(&t, "1h").last_hour;
    // Two of 21 attempts were held 3 s: the p95 falls in the 2–3 s bin.
    assert!((2_000..=3_000).contains(&last_hour.wait_p95_ms.unwrap()), "{last_hour:?}");
    assert_eq!(last_hour.p95_ms, Some(10), "the latency stays the attempt's own");
}

#[test]
fn tokens_add_up_per_connection_provider_and_hour() {
    let t = Traffic::default();
    let spent = |connection, at, input, output, cached| AttemptRecord {
        prompt_tokens: Some(input),
        completion_tokens: Some(output),
        cached_tokens: cached,
        ..row("p", connection, at, 200, 10)
    };
    let failed = AttemptRecord { prompt_tokens: None, ..row("p", "a", NOW, 503, 10) };
    add(&t, &[spent("a", NOW, 1_000, 50, Some(800)), spent("b", NOW, 200, 20, None), failed]);
    add(&t, &[spent("a", NOW - 3_600_000, 7, 3, None)]);
    let r = report(&t, "1h");
    let total = &r.providers[0].series.total;
    assert_eq!((total.input_tokens, total.output_tokens, total.cached_tokens), (1_200, 70, 800));
    let a = &r.providers[0].connections[0].series.total;
    assert_eq!((a.input_tokens, a.output_tokens), (1_000, 50));
    assert_eq!((r.last_hour.input_tokens, r.previous_hour.input_tokens), (1_200, 7));
}
