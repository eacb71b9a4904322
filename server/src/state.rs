//! Everything a handler needs, built once at start and shared by `Arc`.

use sea_orm::DatabaseConnection;
use std::time::Instant;

use crate::{
    auth::{api_keys::KeyRegistry, secrets::SecretBox, sessions::SessionStore},
    config::Config,
    request_log::LogSink,
    routing::registry::ConnectionRegistry,
    upstream::executor::Executor,
};

pub struct AppState {
    pub config: Config,
    pub db: DatabaseConnection,
    pub secrets: SecretBox,
    pub sessions: SessionStore,
    pub keys: KeyRegistry,
    pub connections: ConnectionRegistry,
    pub executor: Executor,
    pub logs: LogSink,
    pub started_at: Instant,
}
