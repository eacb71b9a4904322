//! What the dashboard's server functions need from the server. The server
//! implements it with the same services the REST API uses and provides it
//! as context, so the UI never has a second implementation of anything.

use std::sync::Arc;

use crate::types::{
    ApiKeyList, CatalogEntry, ConnectionList, ConnectionTestResult, ConnectionView, CreateApiKey, CreateConnection,
    CreatedApiKey, FieldError, LogList, UpdateConnection,
    alias::{Alias, AliasList},
    combo::{Combo, ComboList, ComboStatusList},
    monitoring::{
        ClearCooldowns, ClearCooldownsResult, ClearModelCooldowns, CooldownList, HealthReport, ModelCooldownList,
        ResetResult,
    },
    rate_limits::{RateLimitList, RateLimitProtectionSet, SetRateLimitProtection},
    settings::{ResilienceSettings, ResilienceView},
    subscription::{CompleteSignIn, ImportCredentials, QuotaList, WaitingSignIn},
};

/// A failure a page can show.
#[derive(Debug, Clone)]
pub enum BackendError {
    Invalid(Vec<FieldError>),
    NotFound(String),
    Unauthorized,
    /// The admin password did not match.
    WrongPassword,
    /// Too many failed sign-ins; the next try is accepted after this many
    /// seconds.
    Throttled {
        retry_after_secs: u64,
    },
    Internal,
}

impl BackendError {
    /// The HTTP status a server function answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid(_) => 400,
            Self::NotFound(_) => 404,
            Self::Unauthorized | Self::WrongPassword => 401,
            Self::Throttled { .. } => 429,
            Self::Internal => 500,
        }
    }
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(errors) => {
                let parts: Vec<String> = errors.iter().map(ToString::to_string).collect();
                write!(f, "{}", parts.join("; "))
            }
            Self::NotFound(what) => write!(f, "{what} not found"),
            Self::Unauthorized => f.write_str("Please sign in again"),
            Self::WrongPassword => f.write_str("Wrong password"),
            Self::Throttled { retry_after_secs } => {
                write!(f, "Too many failed sign-ins; try again in {retry_after_secs} s")
            }
            Self::Internal => f.write_str("Internal error; see the server log"),
        }
    }
}

pub type BackendResult<T> = Result<T, BackendError>;

#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Checks the admin password sent by `request` (throttled by its
    /// address); on success the `Set-Cookie` value.
    async fn login(&self, password: &str, request: &http::request::Parts) -> BackendResult<String>;
    /// Ends the session of this `Cookie` header; the clearing `Set-Cookie`.
    async fn logout(&self, cookie_header: Option<&str>) -> BackendResult<String>;
    fn catalog(&self) -> Vec<CatalogEntry>;
    /// The providers with an active connection, each with the models it
    /// serves (the catalog's and those its connections' tests found).
    fn served_models(&self) -> Vec<CatalogEntry>;
    async fn list_connections(&self) -> BackendResult<ConnectionList>;
    async fn create_connection(&self, input: CreateConnection) -> BackendResult<ConnectionView>;
    async fn update_connection(&self, id: &str, input: UpdateConnection) -> BackendResult<ConnectionView>;
    async fn delete_connection(&self, id: &str) -> BackendResult<()>;
    async fn test_connection(&self, id: &str) -> BackendResult<ConnectionTestResult>;
    /// Starts a subscription sign-in, like `POST /api/oauth/{provider}/start`.
    async fn start_sign_in(&self, provider: &str, request: &http::request::Parts) -> BackendResult<WaitingSignIn>;
    /// A started sign-in still waiting for its code.
    async fn pending_sign_in(&self, state: &str) -> BackendResult<Option<WaitingSignIn>>;
    /// Completes a sign-in with its code, like `POST /api/oauth/{provider}/complete`.
    async fn complete_sign_in(&self, provider: &str, input: CompleteSignIn) -> BackendResult<ConnectionView>;
    /// Adds the account of a CLI's credentials file, like `POST /api/providers/import`.
    async fn import_credentials(
        &self,
        input: ImportCredentials,
        request: &http::request::Parts,
    ) -> BackendResult<ConnectionView>;
    /// The CLIs' credentials files on the gateway's machine, for a browser on it.
    fn local_credentials(&self, request: &http::request::Parts) -> crate::types::subscription::LocalCredentials;
    fn list_combos(&self) -> ComboList;
    /// Each combo's targets as they stand now.
    fn combo_status(&self) -> ComboStatusList;
    /// Creates a combo; a taken name is refused on the `name` field.
    async fn create_combo(&self, combo: Combo) -> BackendResult<Combo>;
    async fn replace_combo(&self, combo: Combo) -> BackendResult<Combo>;
    async fn delete_combo(&self, name: &str) -> BackendResult<()>;
    fn list_aliases(&self) -> AliasList;
    /// Creates an alias or points it elsewhere, like `PUT /api/aliases`.
    async fn put_alias(&self, alias: Alias) -> BackendResult<Alias>;
    async fn delete_alias(&self, alias: &str) -> BackendResult<()>;
    /// Every connection's rate-limit protection, like `GET /api/rate-limits`.
    async fn rate_limits(&self) -> BackendResult<RateLimitList>;
    /// Every subscription's plan windows, like `GET /api/quotas`, and the
    /// server's now (epoch ms) they count down from.
    fn quotas(&self) -> (QuotaList, i64);
    /// Sets one connection's protection, like `POST /api/rate-limits`.
    async fn set_rate_limit_protection(&self, input: SetRateLimitProtection) -> BackendResult<RateLimitProtectionSet>;
    async fn list_keys(&self) -> BackendResult<ApiKeyList>;
    async fn create_key(&self, input: CreateApiKey) -> BackendResult<CreatedApiKey>;
    async fn revoke_key(&self, id: &str) -> BackendResult<()>;
    /// Keeps a new key for one display after a plain form post.
    async fn stash_new_key(&self, created: &CreatedApiKey) -> BackendResult<()>;
    /// The page sign-in opens when it has nowhere else to go.
    fn landing(&self) -> &'static str;
    /// How far set-up is, and this gateway's URL as `request` reached it.
    async fn get_started(&self, request: &http::request::Parts) -> BackendResult<crate::types::onboarding::GetStarted>;
    /// The stashed key of `id`, once.
    async fn take_new_key(&self, id: &str) -> BackendResult<Option<CreatedApiKey>>;
    async fn search_logs(&self, search: crate::types::LogSearch, limit: u64) -> BackendResult<LogList>;
    /// The effective resilience settings and what the environment sets.
    fn resilience(&self) -> ResilienceView;
    /// Applies a partial settings document, like `PATCH /api/resilience`.
    async fn patch_resilience(&self, patch: serde_json::Value) -> BackendResult<ResilienceSettings>;
    async fn health(&self) -> HealthReport;
    /// Traffic over a window (`1h`, `24h`) for Health's charts.
    fn traffic(&self, window: Option<&str>) -> BackendResult<crate::types::traffic::TrafficReport>;
    /// Requests and tokens over the last `window_ms`, grouped, like `GET /api/usage`.
    async fn usage(
        &self,
        by: crate::types::usage::UsageGroupBy,
        window_ms: i64,
    ) -> BackendResult<crate::types::usage::UsageReport>;
    /// Resets one provider's breaker (or all) and its model lockouts.
    fn reset_breakers(&self, provider: Option<&str>) -> ResetResult;
    async fn cooldowns(&self) -> BackendResult<CooldownList>;
    async fn clear_cooldowns(&self, req: ClearCooldowns) -> BackendResult<ClearCooldownsResult>;
    fn model_cooldowns(&self) -> ModelCooldownList;
    fn clear_model_cooldowns(&self, req: ClearModelCooldowns) -> BackendResult<usize>;
}

/// The backend as the server provides it to the app.
pub type SharedBackend = Arc<dyn Backend>;
