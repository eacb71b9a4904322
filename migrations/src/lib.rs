//! Database schema for OmniRoute-RS. The server applies these on start
//! (`Migrator::up`), and `omniroute migrate` applies them explicitly.
//!
//! Timestamps are stored as epoch milliseconds (`BIGINT`) so SQLite and
//! Postgres compare them the same way and the engine never parses dates.

pub use sea_orm_migration::prelude::*;

mod m0001_initial;
mod m0002_breakers;
mod m0003_session_affinity;
mod m0004_session_leases;
mod m0005_dashboard_sessions;
mod m0006_discovered_models;
mod m0007_log_trail;
mod m0008_plan_usage;
mod m0009_wait_ms;
mod m0010_log_key;
mod m0011_gateway_instances;
mod m0012_model_lockouts;
mod m0013_concurrency_slots;
mod m0014_stashes;

/// Every migration, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m0001_initial::Migration),
            Box::new(m0002_breakers::Migration),
            Box::new(m0003_session_affinity::Migration),
            Box::new(m0004_session_leases::Migration),
            Box::new(m0005_dashboard_sessions::Migration),
            Box::new(m0006_discovered_models::Migration),
            Box::new(m0007_log_trail::Migration),
            Box::new(m0008_plan_usage::Migration),
            Box::new(m0009_wait_ms::Migration),
            Box::new(m0010_log_key::Migration),
            Box::new(m0011_gateway_instances::Migration),
            Box::new(m0012_model_lockouts::Migration),
            Box::new(m0013_concurrency_slots::Migration),
            Box::new(m0014_stashes::Migration),
        ]
    }
}
