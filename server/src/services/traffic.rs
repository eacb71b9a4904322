//! Health's traffic charts: the rollup's report for a window, connections
//! named from the live registry, breakers from the engine's history.

use app::types::traffic::{TRAFFIC_WINDOWS, TrafficReport};

use super::ServiceError;
use crate::state::AppState;

/// The report for `window` (`1h` when not given); an unknown window is a
/// field error.
pub fn report(state: &AppState, window: Option<&str>) -> Result<TrafficReport, ServiceError> {
    let window = window.unwrap_or(TRAFFIC_WINDOWS[0].0);
    if !TRAFFIC_WINDOWS.iter().any(|w| w.0 == window) {
        let known: Vec<_> = TRAFFIC_WINDOWS.iter().map(|w| w.0).collect();
        return Err(ServiceError::field("window", format!("must be one of {}", known.join(", "))));
    }
    let snapshot = state.routing.connections.snapshot();
    Ok(state.store.traffic.report(
        state.clock.now_ms(),
        window,
        |id| snapshot.connection(id).map(|c| c.name.clone()),
        |provider, from, to| state.engine.breaker_spans(provider, from, to),
    ))
}
