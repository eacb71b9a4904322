//! Two gateways on one fresh Postgres database (the two-instance suites).

use server::{config::Config, resilience::clock::ManualClock};
use std::{sync::Arc, time::Duration};
use tokio::time::Instant;

use super::Gateway;

/// The most another instance may lag behind a change (SPEC: 1 s at p99).
pub const STALENESS: Duration = Duration::from_secs(1);

/// The secret key both instances share (each opens what the other seals).
const SECRET_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

fn on_database(url: String) -> impl FnOnce(&mut Config) {
    move |c| {
        c.database_url = url;
        c.secret_key = Some(SECRET_KEY.to_owned());
    }
}

/// Two gateways on one fresh database, ready (caught up).
pub async fn pair() -> (Gateway, Gateway) {
    pair_with(|_| {}).await
}

/// [`pair`], each configured by `adjust` too.
pub async fn pair_with(adjust: impl Fn(&mut Config)) -> (Gateway, Gateway) {
    let url = super::fresh_postgres_database().await;
    let start = |url: String| {
        Gateway::start_configured(tempfile::tempdir().unwrap(), |c| {
            on_database(url)(c);
            adjust(c);
        })
    };
    let (a, b) = (start(url.clone()).await, start(url).await);
    ready(&a, &b).await;
    (a, b)
}

/// [`pair`], each reading wall time from its own manual clock that stays
/// where it starts (the same instant for both) unless the test moves it,
/// so that nothing they time expires while a slow machine runs the test.
pub async fn stopped_pair() -> (Gateway, Gateway, [Arc<ManualClock>; 2]) {
    let url = super::fresh_postgres_database().await;
    let (a, clock_a) =
        Gateway::start_with_clock_configured(tempfile::tempdir().unwrap(), on_database(url.clone())).await;
    let (b, clock_b) = Gateway::start_with_clock_configured(tempfile::tempdir().unwrap(), on_database(url)).await;
    ready(&a, &b).await;
    (a, b, [clock_a, clock_b])
}

async fn ready(a: &Gateway, b: &Gateway) {
    for gw in [a, b] {
        gw.state.store.caught_up.subscribe().wait_for(|caught_up| *caught_up).await.unwrap();
        let ready = gw.http.get(format!("{}/api/ready", gw.url)).send().await.unwrap();
        assert_eq!(ready.status(), 200, "ready once caught up, without signing in");
    }
}

/// Asks `check` until it holds; fails if it does not within [`STALENESS`].
/// Returns how long it took (the staleness seen).
pub async fn within_staleness<F, Fut>(what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if check().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < STALENESS, "{what}: not seen by the other instance within {STALENESS:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until `gw` routes to `n` connections: its routing view (rebuilt
/// from the feed), not the database listing, which the other instance's
/// write makes visible a moment before the feed arrives.
pub async fn routes_connections(gw: &Gateway, n: usize) -> Duration {
    within_staleness("the connections added on the other instance", || async {
        gw.state.routing.connections.snapshot().all().count() == n
    })
    .await
}
