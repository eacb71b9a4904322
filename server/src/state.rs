//! Everything a handler needs, built once at start and shared by `Arc`.

use sea_orm::DatabaseConnection;
use tokio::time::Instant;

use crate::{
    auth::{api_keys::KeyRegistry, login_throttle::LoginThrottle, secrets::SecretBox},
    config::Config,
    request_log::LogSink,
    resilience::{engine::Engine, settings::SettingsHandle},
    resilience_store::ResilienceStore,
    routing::{combos::ComboRegistry, registry::ConnectionRegistry},
    upstream::Upstream,
};

pub struct AppState {
    pub config: Config,
    pub db: DatabaseConnection,
    pub secrets: SecretBox,
    /// Wrong admin passwords by address (`auth::login_throttle`).
    pub login_throttle: LoginThrottle,
    pub keys: KeyRegistry,
    pub connections: ConnectionRegistry,
    /// Combos by name (virtual models over several targets).
    pub combos: ComboRegistry,
    /// Calls to providers (the hyper executor; a fake in timing tests).
    pub upstream: std::sync::Arc<dyn Upstream>,
    pub logs: LogSink,
    /// Traffic over the last day, for Health's charts (fed by `logs`).
    pub traffic: std::sync::Arc<crate::traffic::Traffic>,
    /// The live resilience settings (SPEC §S), swapped on PATCH.
    pub resilience: SettingsHandle,
    /// Breakers, connection health and lockouts (SPEC §R1–§R3).
    pub engine: Engine,
    /// Session affinity pins (SPEC §R2.2).
    pub affinity: crate::routing::affinity::Affinity,
    /// Exclusive session leases (SPEC §R2.3).
    pub leases: crate::routing::leases::Leases,
    /// Concurrency slots per connection and model (SPEC §R4).
    pub concurrency: crate::resilience::concurrency::Concurrency,
    pub queues: crate::resilience::request_queue::RequestQueues,
    pub aliases: crate::routing::aliases::AliasRegistry,
    /// What the combo strategies remember between requests.
    pub combo_states: crate::routing::combo_state::ComboStates,
    /// The conversation summaries of `context-relay` combos.
    pub handoffs: crate::routing::handoffs::Handoffs,
    /// The accounts' quotas as the upstreams' rate-limit headers report them.
    pub quotas: crate::routing::quota::HeaderQuotas,
    /// The rotation of `fallbackStrategy` per provider.
    pub connection_order: crate::routing::connection_order::ConnectionOrder,
    /// How many tools each provider's models refused (SPEC §R8).
    pub tool_limits: crate::resilience::tool_limits::ToolLimits,
    /// Write-behind storage of the engine's breakers and connection health.
    pub resilience_store: ResilienceStore,
    /// The last `GET /api/monitoring/health` report and when it was built.
    pub health_cache: parking_lot::Mutex<Option<(Instant, app::types::monitoring::HealthReport)>>,
    /// New API keys to show once after a form post (shared by the workers).
    pub new_keys: crate::web::backend::NewKeyStash,
    pub started_at: Instant,
    /// Open client connections at most (`listener`).
    pub client_capacity: crate::listener::Capacity,
    /// The end of the shutdown grace, for open streams.
    pub shutdown: crate::listener::Shutdown,
}
