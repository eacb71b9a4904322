//! Connections CRUD and the live test.

use app::types::{
    AuthType, Category, ConnectionList, ConnectionStatus, ConnectionTestResult, ConnectionView, CreateConnection,
    RateLimitOverrides, UpdateConnection, mask_secret,
};
use tokio::time::Instant;

use super::{ServiceError, changes, status::Status};
use crate::db::feed::Change;
use crate::{
    db::connections::{self, ConnectionRow},
    routing::registry::LiveConnection,
    state::AppState,
    upstream::{catalog, code_assist, executor::BaseUrl, oauth::TokenSet},
};

pub async fn list(state: &AppState, provider: Option<&str>) -> Result<ConnectionList, ServiceError> {
    let now = state.clock.now_ms();
    let status = Status::of(state);
    let connections: Vec<ConnectionView> = connections::list(&state.db, provider)
        .await?
        .into_iter()
        .map(|r| status.refine(view(live(state, r), now)))
        .collect();
    Ok(ConnectionList { total: connections.len(), connections })
}

pub async fn get(state: &AppState, id: &str) -> Result<ConnectionView, ServiceError> {
    Ok(Status::of(state).refine(view(find(state, id).await?, state.clock.now_ms())))
}

pub async fn create(state: &AppState, input: CreateConnection) -> Result<ConnectionView, ServiceError> {
    let input = input.unfolded().map_err(ServiceError::Invalid)?;
    input.validate().map_err(ServiceError::Invalid)?;
    check_callable(input.base_url.as_deref())?;
    let provider = catalog::find(input.provider.trim()).ok_or_else(|| {
        ServiceError::field(
            "provider",
            format!("unknown provider {:?}; see GET /api/providers/catalog", input.provider),
        )
    })?;
    if provider.default_base_url.is_empty() && input.base_url.as_deref().is_none_or(str::is_empty) {
        return Err(ServiceError::field(
            "baseUrl",
            format!("provider {} has no default base URL; set baseUrl", provider.id),
        ));
    }
    let auth_type = input.auth_type.unwrap_or(match provider.category {
        Category::Local => AuthType::Local,
        Category::Oauth => AuthType::Oauth,
        Category::Apikey => AuthType::Apikey,
    });
    if auth_type != AuthType::Oauth && (input.refresh_token.is_some() || input.expires_at.is_some()) {
        return Err(ServiceError::field(
            "refreshToken",
            format!(
                "{} connections use an API key; refreshToken and expiresAt belong to subscription (oauth) accounts",
                provider.id
            ),
        ));
    }
    // A hosted API needs its key; a custom server (no address of its own) may not.
    let keyless = input.api_key.as_deref().or(input.access_token.as_deref()).is_none_or(|k| k.trim().is_empty());
    if auth_type == AuthType::Apikey && keyless && !provider.default_base_url.is_empty() {
        return Err(ServiceError::field(
            "apiKey",
            format!(
                "is required: {} is called with an API key (a server without keys is provider ollama, lmstudio or openai-compatible)",
                provider.id
            ),
        ));
    }
    let tokens = (auth_type == AuthType::Oauth).then(|| {
        let access_token = input.access_token.clone().or_else(|| input.api_key.clone()).unwrap_or_default();
        TokenSet::given(access_token, input.refresh_token.clone(), input.expires_at, None)
    });
    // An OAuth connection stores its token set; the mask shows its access token.
    let stored = tokens.as_ref().filter(|t| !t.access_token.is_empty()).map(TokenSet::stored);
    let secret = input.api_key.as_deref().or(input.access_token.as_deref());
    let now = state.clock.now_ms();
    let mut row = ConnectionRow {
        id: uuid::Uuid::new_v4().to_string(),
        provider: provider.id.to_owned(),
        name: input.name.trim().to_owned(),
        auth_type: auth_type.as_str().to_owned(),
        base_url: input.base_url.map(|u| u.trim_end_matches('/').to_owned()),
        credential_enc: stored.as_deref().or(secret).map(|s| state.auth.secrets.encrypt(s)),
        credential_suffix: secret.map(mask_secret),
        priority: input.priority.unwrap_or(0),
        is_active: input.is_active.unwrap_or(true),
        max_concurrent: input.max_concurrent.map(|m| m as i32),
        rate_limit_overrides: input.rate_limit_overrides.as_ref().map(to_json),
        rate_limit_protection: None,
        disable_cooling: input.disable_cooling.unwrap_or(false),
        provider_specific_data: None,
        rate_limited_until: None,
        test_status: None,
        last_error: None,
        last_error_type: None,
        error_code: None,
        backoff_level: 0,
        terminal_status: None,
        expired_retry_count: 0,
        rejected_streak: 0,
        discovered_models: None,
        plan_usage: None,
        created_at: now,
        updated_at: now,
    };
    set_usage_wall(&mut row, input.low_priority_mode, input.auto_limit_reset)?;
    connections::insert(&state.db, row.clone()).await?;
    changes::changed(state, Change::Connections).await?;
    tracing::info!(connection_id = %row.id, provider = %row.provider, "connection created");
    Ok(view(row, now))
}

pub async fn update(state: &AppState, id: &str, input: UpdateConnection) -> Result<ConnectionView, ServiceError> {
    let input = input.unfolded().map_err(ServiceError::Invalid)?;
    input.validate().map_err(ServiceError::Invalid)?;
    check_callable(input.base_url.as_ref().and_then(Option::as_deref))?;
    let mut row = find(state, id).await?;
    if let Some(name) = input.name {
        row.name = name.trim().to_owned();
    }
    if let Some(a) = input.auth_type {
        row.auth_type = a.as_str().to_owned();
    }
    let oauth = row.auth_type == AuthType::Oauth.as_str();
    if !oauth && (input.refresh_token.is_some() || input.expires_at.is_some()) {
        return Err(ServiceError::field("refreshToken", "belongs to subscription (oauth) connections"));
    }
    if let Some(secret) = input.api_key.as_deref().or(input.access_token.as_deref()) {
        // A subscription's new tokens replace its whole token set.
        let tokens =
            oauth.then(|| TokenSet::given(secret.to_owned(), input.refresh_token.clone(), input.expires_at, None));
        let stored = tokens.as_ref().map_or_else(|| secret.to_owned(), TokenSet::stored);
        row.credential_enc = Some(state.auth.secrets.encrypt(&stored));
        row.credential_suffix = Some(mask_secret(secret));
        // New credentials end any cooldown or terminal state of the old ones.
        state.engine.clear_connection(&row.id, true);
        state.engine.usage_wall.forget(&row.id);
        state.routing.quotas.forget(&row.id);
        row = live(state, row);
    }
    // The form sends back the URL it was shown: a masked password in it
    // means "unchanged", never the stars themselves.
    let shown = row.base_url.as_deref().map(shown_base_url);
    if let Some(url) = input.base_url.filter(|u| u.is_none() || u.as_deref() != shown.as_deref()) {
        row.base_url = url.map(|u| u.trim_end_matches('/').to_owned());
        let provider_default = catalog::find(&row.provider).map(|p| p.default_base_url).unwrap_or_default();
        if row.base_url.is_none() && provider_default.is_empty() {
            return Err(ServiceError::field("baseUrl", "this provider needs a base URL"));
        }
    }
    if let Some(p) = input.priority {
        row.priority = p;
    }
    if let Some(a) = input.is_active {
        row.is_active = a;
    }
    if let Some(m) = input.max_concurrent {
        row.max_concurrent = m.map(|m| m as i32);
    }
    if let Some(r) = input.rate_limit_overrides {
        row.rate_limit_overrides = r.as_ref().map(to_json);
    }
    if input.provider_specific_data.is_some() {
        // Read into the connection's own fields above; what an older
        // version stored there was never read.
        row.provider_specific_data = None;
    }
    if let Some(d) = input.disable_cooling {
        row.disable_cooling = d;
    }
    set_usage_wall(&mut row, input.low_priority_mode, input.auto_limit_reset)?;
    row.updated_at = state.clock.now_ms();
    connections::save(&state.db, row.clone()).await?;
    changes::changed(state, Change::Connections).await?;
    Ok(view(row, state.clock.now_ms()))
}

pub async fn delete(state: &AppState, id: &str) -> Result<(), ServiceError> {
    if !connections::delete(&state.db, id).await? {
        return Err(ServiceError::NotFound("connection"));
    }
    changes::changed(state, Change::Connections).await?;
    state.routing.quotas.forget(id);
    state.engine.usage_wall.forget(id);
    tracing::info!(connection_id = %id, "connection deleted");
    Ok(())
}

/// A live check: lists the upstream's models with the stored credential.
pub async fn test(state: &AppState, id: &str) -> Result<ConnectionTestResult, ServiceError> {
    let row = find(state, id).await?;
    let provider = catalog::find(&row.provider).ok_or(ServiceError::NotFound("provider"))?;
    let plain = match row.credential_enc.as_deref().map(|c| state.auth.secrets.decrypt(c)) {
        Some(Ok(plain)) => Some(plain),
        Some(Err(e)) => return Ok(failed_test(0, 0, e.to_string())),
        None => None,
    };
    let Some(base_url) = BaseUrl::parse(row.base_url.as_deref().unwrap_or(provider.default_base_url)) else {
        return Ok(failed_test(0, 0, "the connection has no usable base URL".into()));
    };
    let conn = LiveConnection::from_row(&row, provider, base_url, plain);
    let started = Instant::now();
    // Code Assist lists no models: finding the account's project is the test.
    let code_assist = (provider.wire == catalog::Wire::CodeAssist)
        .then(|| code_assist::project(state.upstream.as_ref(), &conn.endpoint));
    let result = match code_assist {
        Some(found) => match found.await {
            Ok(_) => ConnectionTestResult {
                name: String::new(),
                ok: true,
                status: 200,
                latency_ms: started.elapsed().as_millis() as u64,
                models: provider.models.iter().map(|m| (*m).to_owned()).collect(),
                error: None,
            },
            Err(e) => failed_test(0, started.elapsed().as_millis() as u64, e),
        },
        None => models_test(state, &conn, started).await,
    };
    let mut result = result;
    result.error = result.error.map(|e| conn.redact(&e));
    result.name.clone_from(&row.name);
    tracing::info!(connection_id = %conn.id, ok = result.ok, status = result.status, "connection tested");
    // The outcome stays visible on the connection (also without JS).
    if result.ok {
        state.engine.on_connection_test_passed(provider.id, provider.category, &state.resilience.current());
    }
    if let Some(row) = connections::get(&state.db, &conn.id).await? {
        let mut row = live(state, row);
        row.test_status = Some(if result.ok { "ok" } else { "failed" }.to_owned());
        row.last_error = result.error.clone();
        row.updated_at = state.clock.now_ms();
        if result.ok {
            let listed: Vec<&String> = result.models.iter().take(MAX_DISCOVERED_MODELS).collect();
            row.discovered_models = Some(to_json(&listed));
        }
        connections::save(&state.db, row).await?;
        if result.ok {
            // `/v1/models` names what the test listed.
            changes::changed(state, Change::Connections).await?;
        }
    }
    Ok(result)
}

/// The usual test: the upstream's model list, read with the credential.
async fn models_test(state: &AppState, conn: &LiveConnection, started: Instant) -> ConnectionTestResult {
    match state.upstream.get(&conn.endpoint, conn.endpoint.models_path).await {
        Err(e) => failed_test(0, started.elapsed().as_millis() as u64, e.to_string()),
        Ok(resp) => {
            let status = resp.status();
            let body: serde_json::Value =
                serde_json::from_slice(&resp.read_limited(MAX_MODEL_LIST).await).unwrap_or_default();
            let latency_ms = started.elapsed().as_millis() as u64;
            if status.is_success() {
                ConnectionTestResult {
                    name: String::new(),
                    ok: true,
                    status: status.as_u16(),
                    latency_ms,
                    models: model_ids(&body),
                    error: None,
                }
            } else {
                let msg =
                    body.pointer("/error/message").and_then(|m| m.as_str()).unwrap_or("upstream refused the request");
                failed_test(status.as_u16(), latency_ms, format!("{status}: {msg}"))
            }
        }
    }
}

/// The shared validator checks a base URL's shape (it also runs in the
/// browser); this checks the HTTP client can call it, so a connection is
/// never saved only to be skipped by routing.
fn check_callable(base_url: Option<&str>) -> Result<(), ServiceError> {
    match base_url.filter(|u| !u.trim().is_empty()) {
        Some(u) if BaseUrl::parse(u).is_none() => Err(ServiceError::field(
            "baseUrl",
            "is not a URL the gateway can call: use an ASCII (punycode) host, a valid port, and percent-encode other characters",
        )),
        _ => Ok(()),
    }
}

/// The most model ids a test remembers for `/v1/models`.
const MAX_DISCOVERED_MODELS: usize = 1000;

/// A model list larger than this is cut (and reads as no models).
const MAX_MODEL_LIST: usize = 16 << 20;

fn failed_test(status: u16, latency_ms: u64, error: String) -> ConnectionTestResult {
    ConnectionTestResult { name: String::new(), ok: false, status, latency_ms, models: vec![], error: Some(error) }
}

/// Model ids from an OpenAI (`data[].id`) or Gemini (`models[].name`) list.
fn model_ids(body: &serde_json::Value) -> Vec<String> {
    let openai = body["data"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str());
    let gemini = body["models"]
        .as_array()
        .into_iter()
        .flatten()
        // Gemini's names, or the Codex backend's slugs.
        .filter_map(|m| m["name"].as_str().or_else(|| m["slug"].as_str()))
        .map(|n| n.trim_start_matches("models/"));
    openai.chain(gemini).map(str::to_owned).collect()
}

/// The stored row with the engine's live health (the row's copy is
/// written behind and may lag).
async fn find(state: &AppState, id: &str) -> Result<ConnectionRow, ServiceError> {
    let row = connections::get(&state.db, id).await?.ok_or(ServiceError::NotFound("connection"))?;
    Ok(live(state, row))
}

/// `row` with its health columns taken from the engine.
fn live(state: &AppState, mut row: ConnectionRow) -> ConnectionRow {
    let h = state.engine.health(&row.id);
    row.rate_limited_until = h.rate_limited_until;
    // Without an engine error the row may hold the last test's message.
    if h.last_error.is_some() {
        row.last_error = h.last_error;
    }
    row.last_error_type = h.last_error_type;
    row.error_code = h.error_code;
    row.backoff_level = i32::try_from(h.backoff_level).unwrap_or(i32::MAX);
    row.terminal_status = h.terminal.map(|t| t.as_str().to_owned());
    row.expired_retry_count = i32::try_from(h.expired_retries).unwrap_or(i32::MAX);
    row.rejected_streak = i32::try_from(h.rejected_streak).unwrap_or(i32::MAX);
    row
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// What stands for a password in a base URL that is shown.
const MASKED_PASSWORD: &str = "****";

/// A base URL as the API and the dashboard show it: a password in its
/// `user:password@` part masked (a corporate proxy's URL may carry one).
pub fn shown_base_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let Some((userinfo, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    let Some((user, _)) = userinfo.split_once(':') else { return url.to_owned() };
    format!("{scheme}://{user}:{MASKED_PASSWORD}@{host}{}", &rest[authority.len()..])
}

/// The API view of a row: credential masked, status badge computed.
/// The usage-wall opt-ins (SPEC §R2.1) given for `row`, kept in its
/// `provider_specific_data` as the original kept them; only a Claude
/// subscription meets that wall.
fn set_usage_wall(row: &mut ConnectionRow, low: Option<bool>, reset: Option<bool>) -> Result<(), ServiceError> {
    if low.is_none() && reset.is_none() {
        return Ok(());
    }
    let claude = catalog::find(&row.provider).is_some_and(|p| p.wire == catalog::Wire::ClaudeCode);
    if !claude || row.auth_type != AuthType::Oauth.as_str() {
        let field = if low.is_some() { "lowPriorityMode" } else { "autoLimitReset" };
        return Err(ServiceError::field(field, "only a Claude subscription (provider claude) has a usage wall"));
    }
    let mut data: serde_json::Map<String, serde_json::Value> =
        row.provider_specific_data.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default();
    for (key, value) in [("lowPriorityMode", low), ("autoLimitReset", reset)] {
        if let Some(on) = value {
            data.insert(key.into(), on.into());
        }
    }
    let any = data.values().any(|v| v == true);
    row.provider_specific_data = any.then(|| serde_json::Value::Object(data).to_string());
    Ok(())
}

pub fn view(row: ConnectionRow, now: i64) -> ConnectionView {
    let status = if row.terminal_status.is_some() {
        ConnectionStatus::Terminal
    } else if !row.is_active {
        ConnectionStatus::Disabled
    } else if row.rate_limited_until.is_some_and(|t| t > now) {
        ConnectionStatus::CoolingDown
    } else {
        ConnectionStatus::Active
    };
    ConnectionView {
        auth_type: AuthType::parse(&row.auth_type).unwrap_or(AuthType::Apikey),
        api_key_masked: row.credential_suffix,
        max_concurrent: row.max_concurrent.map(|m| m.max(1) as u32),
        rate_limit_overrides: row
            .rate_limit_overrides
            .as_deref()
            .and_then(|s| serde_json::from_str::<RateLimitOverrides>(s).ok()),
        provider_specific_data: row.provider_specific_data.as_deref().and_then(|s| serde_json::from_str(s).ok()),
        status,
        status_remaining_ms: None,
        id: row.id,
        provider: row.provider,
        name: row.name,
        base_url: row.base_url.as_deref().map(shown_base_url),
        priority: row.priority,
        is_active: row.is_active,
        rate_limit_protection: row.rate_limit_protection,
        disable_cooling: row.disable_cooling,
        test_status: row.test_status,
        last_error: row.last_error,
        last_error_type: row.last_error_type,
        rate_limited_until: row.rate_limited_until,
        backoff_level: row.backoff_level,
        terminal_status: row.terminal_status,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}
