//! The dashboard's [`Backend`]: the same services the REST API uses.

use app::{
    backend::{Backend, BackendError, BackendResult},
    types::{
        ApiKeyList, CatalogEntry, ConnectionList, ConnectionTestResult, ConnectionView, CreateApiKey, CreateConnection,
        CreatedApiKey, FieldError, LogList, LogSearch, UpdateConnection,
        alias::{Alias, AliasList},
        combo::{Combo, ComboList, ComboStatusList},
        monitoring::{
            ClearCooldowns, ClearCooldownsResult, ClearModelCooldowns, CooldownList, HealthReport, ModelCooldownList,
            ResetResult,
        },
        onboarding::GetStarted,
        rate_limits::{RateLimitList, RateLimitProtectionSet, SetRateLimitProtection},
        settings::{ResilienceSettings, ResilienceView},
        subscription::{CompleteSignIn, ImportCredentials, LocalCredentials, QuotaList, WaitingSignIn},
        traffic::TrafficReport,
        usage::{UsageGroupBy, UsageReport},
    },
};
use std::sync::Arc;

use crate::{
    auth::{
        identity::{client_of, peer_ip},
        sessions,
    },
    services::{
        self, ServiceError,
        sign_in::{SignInError, sign_in},
    },
    state::AppState,
    upstream::catalog,
};

pub struct WebBackend {
    state: Arc<AppState>,
}

impl WebBackend {
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }
}

fn err(e: ServiceError) -> BackendError {
    match e {
        ServiceError::Invalid(details) => BackendError::Invalid(details),
        ServiceError::NotFound(what) => BackendError::NotFound(what.to_owned()),
        ServiceError::Unavailable(message) => {
            BackendError::Invalid(vec![app::types::FieldError::new("provider", message)])
        }
        ServiceError::Db(db) => {
            tracing::error!(error = %db, "database error in a dashboard request");
            BackendError::Internal
        }
    }
}

#[async_trait::async_trait]
impl Backend for WebBackend {
    async fn login(&self, password: &str, request: &http::request::Parts) -> BackendResult<String> {
        let client = client_of(peer_ip(&request.extensions), &request.headers, self.state.config.trust_proxy);
        match sign_in(&self.state, client, password).await {
            Ok(token) => Ok(sessions::set_cookie(&token)),
            Err(SignInError::WrongPassword) => Err(BackendError::WrongPassword),
            Err(SignInError::Throttled(retry_after_secs)) => Err(BackendError::Throttled { retry_after_secs }),
            Err(SignInError::Db(e)) => Err(err(ServiceError::Db(e))),
        }
    }

    async fn logout(&self, cookie_header: Option<&str>) -> BackendResult<String> {
        if let Some(token) = cookie_header.and_then(sessions::token_from_cookie_header) {
            sessions::revoke(&self.state.db, token).await.map_err(|e| err(ServiceError::Db(e)))?;
        }
        Ok(sessions::clear_cookie())
    }

    fn catalog(&self) -> Vec<CatalogEntry> {
        catalog::all().iter().map(|p| p.entry()).collect()
    }

    fn served_models(&self) -> Vec<CatalogEntry> {
        let snapshot = self.state.routing.connections.snapshot();
        let served = snapshot.served_models();
        served
            .into_iter()
            .map(|(p, models)| CatalogEntry { models: models.into_iter().map(str::to_owned).collect(), ..p.entry() })
            .collect()
    }

    async fn list_connections(&self) -> BackendResult<ConnectionList> {
        services::connections::list(&self.state, None).await.map_err(err)
    }

    async fn create_connection(&self, input: CreateConnection) -> BackendResult<ConnectionView> {
        services::connections::create(&self.state, input).await.map_err(err)
    }

    async fn start_sign_in(&self, provider: &str, request: &http::request::Parts) -> BackendResult<WaitingSignIn> {
        let from = services::oauth::Browser::of(&self.state, &request.extensions, &request.headers);
        let started = services::oauth::start(&self.state, provider, &from).await.map_err(err)?;
        Ok(WaitingSignIn { provider: provider.to_owned(), started })
    }

    async fn pending_sign_in(&self, state: &str) -> BackendResult<Option<WaitingSignIn>> {
        services::oauth::pending(&self.state, state).await.map_err(err)
    }

    async fn complete_sign_in(&self, provider: &str, input: CompleteSignIn) -> BackendResult<ConnectionView> {
        services::oauth::complete(&self.state, provider, input).await.map_err(err)
    }

    async fn import_credentials(
        &self,
        input: ImportCredentials,
        request: &http::request::Parts,
    ) -> BackendResult<ConnectionView> {
        let browser = services::oauth::Browser::of(&self.state, &request.extensions, &request.headers);
        services::oauth::import(&self.state, input, &browser).await.map_err(err)
    }

    fn local_credentials(&self, request: &http::request::Parts) -> LocalCredentials {
        services::oauth::local_files(
            &self.state,
            &services::oauth::Browser::of(&self.state, &request.extensions, &request.headers),
        )
    }

    async fn update_connection(&self, id: &str, input: UpdateConnection) -> BackendResult<ConnectionView> {
        services::connections::update(&self.state, id, input).await.map_err(err)
    }

    fn list_combos(&self) -> ComboList {
        services::combos::list(&self.state)
    }

    fn combo_status(&self) -> ComboStatusList {
        services::combos::status(&self.state)
    }

    async fn create_combo(&self, combo: Combo) -> BackendResult<Combo> {
        if self.state.routing.combos.get(&combo.name).is_some() {
            let taken =
                FieldError::new("name", format!("a combo named {} exists; edit it in the list below", combo.name));
            return Err(BackendError::Invalid(vec![taken]));
        }
        services::combos::put(&self.state, combo).await.map_err(err)
    }

    async fn replace_combo(&self, combo: Combo) -> BackendResult<Combo> {
        services::combos::put(&self.state, combo).await.map_err(err)
    }

    async fn delete_combo(&self, name: &str) -> BackendResult<()> {
        services::combos::delete(&self.state, name).await.map_err(err)
    }

    fn list_aliases(&self) -> AliasList {
        services::aliases::list(&self.state)
    }

    async fn put_alias(&self, alias: Alias) -> BackendResult<Alias> {
        services::aliases::put(&self.state, alias).await.map_err(err)
    }

    async fn delete_alias(&self, alias: &str) -> BackendResult<()> {
        services::aliases::delete(&self.state, alias).await.map_err(err)
    }

    async fn rate_limits(&self) -> BackendResult<RateLimitList> {
        services::rate_limits::list(&self.state).await.map_err(err)
    }

    fn quotas(&self) -> (QuotaList, i64) {
        (services::quotas::list(&self.state), self.state.clock.now_ms())
    }

    async fn set_rate_limit_protection(&self, input: SetRateLimitProtection) -> BackendResult<RateLimitProtectionSet> {
        services::rate_limits::set(&self.state, input).await.map_err(err)
    }

    async fn delete_connection(&self, id: &str) -> BackendResult<()> {
        services::connections::delete(&self.state, id).await.map_err(err)
    }

    async fn test_connection(&self, id: &str) -> BackendResult<ConnectionTestResult> {
        services::connections::test(&self.state, id).await.map_err(err)
    }

    async fn list_keys(&self) -> BackendResult<ApiKeyList> {
        services::keys::list(&self.state).await.map_err(err)
    }

    fn landing(&self) -> &'static str {
        services::onboarding::landing(&self.state)
    }

    async fn get_started(&self, request: &http::request::Parts) -> BackendResult<GetStarted> {
        services::onboarding::get_started(&self.state, &request.headers).await.map_err(err)
    }

    async fn create_key(&self, input: CreateApiKey) -> BackendResult<CreatedApiKey> {
        services::keys::create(&self.state, input).await.map_err(err)
    }

    async fn revoke_key(&self, id: &str) -> BackendResult<()> {
        services::keys::revoke(&self.state, id).await.map_err(err)
    }

    async fn stash_new_key(&self, created: &CreatedApiKey) -> BackendResult<()> {
        services::stash::put(&self.state, &created.id, created).await.map_err(err)
    }

    async fn take_new_key(&self, id: &str) -> BackendResult<Option<CreatedApiKey>> {
        services::stash::take(&self.state, id).await.map_err(err)
    }

    async fn search_logs(&self, search: LogSearch, limit: u64) -> BackendResult<LogList> {
        services::logs::search(&self.state, search, limit).await.map_err(err)
    }

    fn resilience(&self) -> ResilienceView {
        let handle = &self.state.resilience;
        ResilienceView { settings: handle.current().as_ref().clone(), env: handle.env().to_vec() }
    }

    async fn patch_resilience(&self, patch: serde_json::Value) -> BackendResult<ResilienceSettings> {
        services::resilience::patch(&self.state, &patch).await.map_err(err)
    }

    async fn health(&self) -> HealthReport {
        services::monitoring::health(&self.state).await
    }

    async fn usage(&self, by: UsageGroupBy, window_ms: i64) -> BackendResult<UsageReport> {
        let since = self.state.clock.now_ms() + 1 - window_ms;
        services::usage::report(&self.state, Some(since), None, by).await.map_err(err)
    }

    fn traffic(&self, window: Option<&str>) -> BackendResult<TrafficReport> {
        services::traffic::report(&self.state, window).map_err(err)
    }

    fn reset_breakers(&self, provider: Option<&str>) -> ResetResult {
        services::monitoring::reset(&self.state, provider)
    }

    async fn cooldowns(&self) -> BackendResult<CooldownList> {
        services::monitoring::cooldowns(&self.state, None).await.map_err(err)
    }

    async fn clear_cooldowns(&self, req: ClearCooldowns) -> BackendResult<ClearCooldownsResult> {
        services::monitoring::clear_cooldowns(&self.state, &req).await.map_err(err)
    }

    fn model_cooldowns(&self) -> ModelCooldownList {
        services::monitoring::model_cooldowns(&self.state)
    }

    fn clear_model_cooldowns(&self, req: ClearModelCooldowns) -> BackendResult<usize> {
        services::monitoring::clear_model_cooldowns(&self.state, &req).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]

    use super::WebBackend;
    use app::{backend::Backend, types::CreatedApiKey};

    /// Each worker builds its own backend: a key stashed by the post on
    /// one worker is shown by the page on another, once.
    #[tokio::test]
    async fn a_new_key_stashed_on_one_worker_is_shown_once_on_another() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::build_state(crate::config::Config::for_data_dir(dir.path().to_path_buf())).await.unwrap();
        let (post_worker, page_worker) = (WebBackend::new(state.clone()), WebBackend::new(state));
        let created = CreatedApiKey { id: "k1".into(), key: "omr-secret".into() };
        post_worker.stash_new_key(&created).await.unwrap();
        assert_eq!(page_worker.take_new_key("k1").await.unwrap(), Some(created));
        assert_eq!(post_worker.take_new_key("k1").await.unwrap(), None);
    }
}
