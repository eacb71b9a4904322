//! Services: the one implementation behind both the `/api/*` REST handlers
//! and the dashboard's server functions. They validate, decide, call the
//! repositories, and refresh the in-memory registries the proxy reads.

pub mod aliases;
pub mod changes;
pub mod combos;
pub mod connections;
pub mod instances;
pub mod keys;
pub mod leases;
pub mod logs;
pub mod monitoring;
pub mod oauth;
pub mod onboarding;
pub mod quotas;
pub mod rate_limits;
pub mod resilience;
pub mod sign_in;
pub mod stash;
pub mod status;
pub mod traffic;
pub mod usage;

use app::types::FieldError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("Invalid request")]
    Invalid(Vec<FieldError>),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("database error: {0}")]
    Db(#[from] sea_orm::DbErr),
    /// A provider the request needed could not be reached (502).
    #[error("{0}")]
    Unavailable(String),
}

impl ServiceError {
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid(vec![FieldError::new(field, message)])
    }
}
