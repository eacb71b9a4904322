//! Everything a handler needs, built once at start and shared by `Arc`,
//! grouped by owner: a new piece of live state joins its owner's group
//! (routing, admission, auth, store, clients), not this struct.

use app::types::settings::ResilienceSettings;
use sea_orm::DatabaseConnection;
use tokio::time::Instant;

use crate::{
    auth::Auth,
    config::Config,
    listener::Clients,
    resilience::{Admission, clock::Clock, engine::Engine, settings::SettingsHandle},
    routing::{Routing, registry::Snapshot, view::RoutingView},
    store::Store,
    upstream::Upstream,
};

pub struct AppState {
    pub config: Config,
    /// Wall time for every timestamp the gateway writes or compares (a
    /// manual clock in tests); waits run on tokio time.
    pub clock: std::sync::Arc<dyn Clock>,
    pub db: DatabaseConnection,
    /// The live resilience settings (SPEC §S), swapped on PATCH.
    pub resilience: SettingsHandle,
    /// Breakers, connection health, lockouts and the window gate (SPEC §R1–§R3).
    pub engine: Engine,
    pub routing: Routing,
    pub admission: Admission,
    pub auth: Auth,
    /// Calls to providers (the hyper executor; a fake in timing tests).
    pub upstream: std::sync::Arc<dyn Upstream>,
    pub store: Store,
    /// The client connection budget and the shutdown grace (`listener`).
    pub clients: Clients,
    /// The last `GET /api/monitoring/health` report and when it was built.
    pub health_cache: parking_lot::Mutex<Option<(Instant, app::types::monitoring::HealthReport)>>,
    pub started_at: Instant,
}

impl AppState {
    /// The routing view over `snapshot` under `settings`: who may serve.
    pub fn view<'a>(&'a self, snapshot: &'a Snapshot, settings: &'a ResilienceSettings) -> RoutingView<'a> {
        RoutingView::new(snapshot, &self.routing, &self.engine, settings)
    }
}
