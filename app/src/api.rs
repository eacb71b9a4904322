//! Server functions (`/sfn/*`) the pages call. Each is a thin call into the
//! [`Backend`](crate::backend::Backend); forms post to them directly, so
//! every action works before hydration too. After a plain (no-JS) form
//! post the server redirects back to the page, with `?error=` on failure.

mod answer;
mod edits;
mod subscriptions;

pub use edits::{EditConnection, SaveCombo, edit_connection, save_combo};
pub use subscriptions::{
    FinishSignIn, ImportSubscription, StartSignIn, credentials_on_this_machine, finish_sign_in, get_quotas,
    import_subscription, pending_sign_in, start_sign_in,
};

use leptos::prelude::*;

use std::collections::HashMap;

use answer::Answer;

use crate::types::{
    ApiKeyList, CatalogEntry, ConnectionList, ConnectionTestResult, CreatedApiKey, FieldError, LogList,
    alias::AliasList,
    combo::{ComboList, ComboStatusList},
    monitoring::{ClearCooldownsResult, CooldownList, HealthReport, ModelCooldownList},
    rate_limits::RateLimitList,
    settings::ResilienceView,
};

#[cfg(feature = "ssr")]
mod ssr {
    use leptos::prelude::*;

    use crate::backend::{BackendError, SharedBackend};

    pub fn backend() -> Result<SharedBackend, ServerFnError> {
        use_context::<SharedBackend>().ok_or_else(|| ServerFnError::new("backend missing"))
    }

    /// Whether the request is a plain HTML form post (no JS).
    pub fn is_form_post() -> bool {
        use_context::<http::request::Parts>()
            .and_then(|p| p.headers.get(http::header::ACCEPT)?.to_str().ok().map(|a| a.contains("text/html")))
            .unwrap_or(false)
    }

    /// The error for the page, with its status (a refused input is a 4xx,
    /// never a 500); a plain form post is sent back to `page` with the
    /// message in `?error=`.
    pub fn fail(page: &str, e: BackendError) -> ServerFnError {
        if is_form_post() {
            let sep = if page.contains('?') { '&' } else { '?' };
            leptos_axum::redirect(&format!("{page}{sep}error={}", crate::format::query_escape(&e.to_string())));
        } else if let Some(opts) = use_context::<leptos_axum::ResponseOptions>() {
            opts.set_status(http::StatusCode::from_u16(e.status()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR));
        }
        if let BackendError::Throttled { retry_after_secs } = e {
            set_header(http::header::RETRY_AFTER, &retry_after_secs.to_string());
        }
        ServerFnError::new(e.to_string())
    }

    pub fn set_header(name: http::HeaderName, value: &str) {
        if let (Some(opts), Ok(v)) = (use_context::<leptos_axum::ResponseOptions>(), http::HeaderValue::from_str(value))
        {
            opts.insert_header(name, v);
        }
    }
}

/// Empty form fields mean "not given".
#[cfg(feature = "ssr")]
fn given(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// Signs in; then goes to `next` (a path on this site) or Health.
#[server(prefix = "/sfn", output = Answer, endpoint = "login")]
pub async fn login(password: String, next: Option<String>) -> Result<(), ServerFnError> {
    let backend = ssr::backend()?;
    let parts = use_context::<http::request::Parts>().ok_or_else(|| ServerFnError::new("request missing"))?;
    match backend.login(&password, &parts).await {
        Ok(cookie) => {
            ssr::set_header(http::header::SET_COOKIE, &cookie);
            let next = crate::session::safe_next(next.as_deref());
            leptos_axum::redirect(if next == crate::session::HOME { backend.landing() } else { next });
            Ok(())
        }
        Err(e) => Err(ssr::fail(&crate::session::login_url(next.as_deref().unwrap_or_default()), e)),
    }
}

#[server(prefix = "/sfn", output = Answer, endpoint = "logout")]
pub async fn logout() -> Result<(), ServerFnError> {
    let backend = ssr::backend()?;
    let parts = use_context::<http::request::Parts>();
    let cookie = parts.as_ref().and_then(|p| p.headers.get(http::header::COOKIE)?.to_str().ok());
    let clear = backend.logout(cookie).await.map_err(|e| ssr::fail("/monitoring/health", e))?;
    ssr::set_header(http::header::SET_COOKIE, &clear);
    leptos_axum::redirect("/login");
    Ok(())
}

#[server(prefix = "/sfn", output = Answer, endpoint = "catalog")]
pub async fn get_catalog() -> Result<Vec<CatalogEntry>, ServerFnError> {
    Ok(ssr::backend()?.catalog())
}

/// What a combo target may name: the providers with an active connection
/// and the models each serves (as `GET /v1/models` lists them).
#[server(prefix = "/sfn", output = Answer, endpoint = "served_models")]
pub async fn get_served_models() -> Result<Vec<CatalogEntry>, ServerFnError> {
    Ok(ssr::backend()?.served_models())
}

#[server(prefix = "/sfn", output = Answer, endpoint = "connections")]
pub async fn get_connections() -> Result<ConnectionList, ServerFnError> {
    ssr::backend()?.list_connections().await.map_err(|e| ssr::fail("/providers", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "add_connection")]
pub async fn add_connection(
    provider: String,
    name: String,
    api_key: Option<String>,
    refresh_token: Option<String>,
    base_url: Option<String>,
    priority: Option<String>,
) -> Result<(), ServerFnError> {
    let priority = match given(priority) {
        None => None,
        Some(p) => Some(p.parse::<i32>().map_err(|_| {
            ssr::fail(
                "/providers",
                crate::backend::BackendError::Invalid(vec![crate::types::FieldError::new(
                    "priority",
                    "must be a whole number",
                )]),
            )
        })?),
    };
    // A subscription's tokens: the key field holds its access token.
    let refresh_token = given(refresh_token);
    let (api_key, access_token) = match refresh_token {
        Some(_) => (None, given(api_key)),
        None => (given(api_key), None),
    };
    let input = crate::types::CreateConnection {
        provider,
        name,
        api_key,
        access_token,
        refresh_token,
        base_url: given(base_url),
        priority,
        ..Default::default()
    };
    ssr::backend()?.create_connection(input).await.map(drop).map_err(|e| ssr::fail("/providers", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "set_connection_active")]
pub async fn set_connection_active(id: String, active: bool) -> Result<(), ServerFnError> {
    let input = crate::types::UpdateConnection { is_active: Some(active), ..Default::default() };
    ssr::backend()?.update_connection(&id, input).await.map(drop).map_err(|e| ssr::fail("/providers", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "combos")]
pub async fn get_combos() -> Result<ComboList, ServerFnError> {
    Ok(ssr::backend()?.list_combos())
}

#[server(prefix = "/sfn", output = Answer, endpoint = "delete_combo")]
pub async fn delete_combo(name: String) -> Result<(), ServerFnError> {
    ssr::backend()?.delete_combo(&name).await.map_err(|e| ssr::fail("/combos", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "aliases")]
pub async fn get_aliases() -> Result<AliasList, ServerFnError> {
    Ok(ssr::backend()?.list_aliases())
}

#[server(prefix = "/sfn", output = Answer, endpoint = "combo_status")]
pub async fn get_combo_status() -> Result<ComboStatusList, ServerFnError> {
    Ok(ssr::backend()?.combo_status())
}

#[server(prefix = "/sfn", output = Answer, endpoint = "save_alias")]
pub async fn save_alias(alias: String, model: String) -> Result<(), ServerFnError> {
    let alias = crate::types::alias::Alias { alias: alias.trim().to_owned(), model: model.trim().to_owned() };
    ssr::backend()?.put_alias(alias).await.map(drop).map_err(|e| ssr::fail("/combos", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "delete_alias")]
pub async fn delete_alias(alias: String) -> Result<(), ServerFnError> {
    ssr::backend()?.delete_alias(&alias).await.map_err(|e| ssr::fail("/combos", e))
}

/// Every connection's rate-limit protection and request-queue load.
#[server(prefix = "/sfn", output = Answer, endpoint = "rate_limits")]
pub async fn get_rate_limits() -> Result<RateLimitList, ServerFnError> {
    ssr::backend()?.rate_limits().await.map_err(|e| ssr::fail("/providers", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "delete_connection")]
pub async fn delete_connection(id: String) -> Result<(), ServerFnError> {
    ssr::backend()?.delete_connection(&id).await.map_err(|e| ssr::fail("/providers", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "test_connection")]
pub async fn test_connection(id: String) -> Result<ConnectionTestResult, ServerFnError> {
    ssr::backend()?.test_connection(&id).await.map_err(|e| ssr::fail("/providers", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "keys")]
pub async fn get_keys() -> Result<ApiKeyList, ServerFnError> {
    ssr::backend()?.list_keys().await.map_err(|e| ssr::fail("/keys", e))
}

/// How far set-up is, for the Get started page.
#[server(prefix = "/sfn", output = Answer, endpoint = "get_started")]
pub async fn get_started() -> Result<crate::types::onboarding::GetStarted, ServerFnError> {
    let parts = use_context::<http::request::Parts>().ok_or_else(|| ServerFnError::new("request missing"))?;
    ssr::backend()?.get_started(&parts).await.map_err(|e| ssr::fail("/get-started", e))
}

/// Creates a key from the form: its checked scopes (`scopes[<scope>]`)
/// and allowed connections (`allowed[conn-<connection id>]`; none
/// checked: every connection). Without JS the browser returns to `page`
/// (Get started, else API keys), which shows the key once.
#[server(prefix = "/sfn", output = Answer, endpoint = "create_key")]
pub async fn create_key(
    name: String,
    scopes: Option<HashMap<String, String>>,
    allowed: Option<HashMap<String, String>>,
    page: Option<String>,
) -> Result<CreatedApiKey, ServerFnError> {
    use crate::{backend::BackendError, types::Scope};
    let backend = ssr::backend()?;
    let mut parsed = Vec::new();
    for name in scopes.unwrap_or_default().into_keys() {
        match Scope::parse(&name) {
            Some(scope) => parsed.push(scope),
            None => {
                let unknown = FieldError::new("scopes", format!("unknown scope {name:?}"));
                return Err(ssr::fail("/keys", BackendError::Invalid(vec![unknown])));
            }
        }
    }
    // Named `allowed[conn-<id>]`: the form decoder reads a bracket that
    // starts with a digit as a list index, and ids may.
    let allowed: Vec<String> =
        allowed.unwrap_or_default().into_keys().map(|k| k.strip_prefix("conn-").unwrap_or(&k).to_owned()).collect();
    let allowed_connections = (!allowed.is_empty()).then_some(allowed);
    let input = crate::types::CreateApiKey { name, scopes: Some(parsed), allowed_connections };
    let page = if page.as_deref() == Some(crate::paths::GET_STARTED) { crate::paths::GET_STARTED } else { "/keys" };
    let created = backend.create_key(input).await.map_err(|e| ssr::fail(page, e))?;
    if ssr::is_form_post() {
        // Without JS the page reloads: show the key once from the stash.
        backend.stash_new_key(&created).await.map_err(|e| ssr::fail(page, e))?;
        leptos_axum::redirect(&format!("{page}?created={}", created.id));
    }
    Ok(created)
}

#[server(prefix = "/sfn", output = Answer, endpoint = "new_key")]
pub async fn take_new_key(id: String) -> Result<Option<CreatedApiKey>, ServerFnError> {
    ssr::backend()?.take_new_key(&id).await.map_err(|e| ssr::fail("/keys", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "revoke_key")]
pub async fn revoke_key(id: String) -> Result<(), ServerFnError> {
    ssr::backend()?.revoke_key(&id).await.map_err(|e| ssr::fail("/keys", e))
}

/// A page of the request log; the arguments are a [`LogSearch`]'s fields
/// (flat: an all-empty search must still encode).
///
/// [`LogSearch`]: crate::types::LogSearch
#[server(prefix = "/sfn", output = Answer, endpoint = "logs")]
pub async fn get_logs(
    provider: Option<String>,
    connection: Option<String>,
    model: Option<String>,
    status: Option<crate::types::StatusClass>,
    window: Option<String>,
    before: Option<i64>,
    request: Option<String>,
) -> Result<LogList, ServerFnError> {
    let search = crate::types::LogSearch { provider, connection, model, status, window, before, request };
    ssr::backend()?.search_logs(search, LOG_PAGE).await.map_err(|e| ssr::fail("/logs", e))
}

/// Rows per page of the Logs page.
pub const LOG_PAGE: u64 = 100;

#[server(prefix = "/sfn", output = Answer, endpoint = "resilience")]
pub async fn get_resilience() -> Result<ResilienceView, ServerFnError> {
    Ok(ssr::backend()?.resilience())
}

/// The outcome of saving one settings card: the card, and the field
/// errors that kept it from being saved (none when it was saved).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CardSaved {
    pub card: String,
    pub errors: Vec<FieldError>,
}

/// Saves one settings card: its inputs (named by JSON path) become a
/// PATCH of exactly its fields, checked by the same shared rules the
/// browser ran. After a plain form post the page is shown again, with the
/// errors in `?error=` when it was refused.
#[server(prefix = "/sfn", output = Answer, endpoint = "save_resilience")]
pub async fn save_resilience(card: String, fields: HashMap<String, String>) -> Result<CardSaved, ServerFnError> {
    use crate::{backend::BackendError, pages::settings::cards};
    let backend = ssr::backend()?;
    let spec = cards::find(&card).ok_or_else(|| {
        let unknown = crate::types::FieldError::new("card", format!("unknown settings card {card:?}"));
        ssr::fail("/settings/resilience", BackendError::Invalid(vec![unknown]))
    })?;
    let view = backend.resilience();
    let values: std::collections::BTreeMap<String, String> = fields.into_iter().collect();
    let result = match crate::types::settings::form_to_patch(&spec.editable(&view), &values) {
        Ok(patch) => backend.patch_resilience(patch).await.map(drop),
        Err(errors) => Err(BackendError::Invalid(errors)),
    };
    match result {
        Ok(()) => Ok(CardSaved { card, errors: Vec::new() }),
        Err(BackendError::Invalid(errors)) => {
            if ssr::is_form_post() {
                leptos_axum::redirect(&refused_card_url(spec, &values));
            }
            Ok(CardSaved { card, errors })
        }
        Err(e) => Err(ssr::fail(spec.page, e)),
    }
}

/// Where a refused plain post of a settings card goes: its page, with
/// the card open and what was typed in it (the card checks it again and
/// marks the fields), at the card.
#[cfg(feature = "ssr")]
fn refused_card_url(
    card: &crate::pages::settings::cards::Card,
    typed: &std::collections::BTreeMap<String, String>,
) -> String {
    use crate::{
        format::query_escape,
        types::settings::{REFUSED, TYPED},
    };
    let mut url = format!("{}?{REFUSED}={}", card.page, query_escape(card.id));
    for (path, text) in typed {
        url.push_str(&format!("&{}={}", query_escape(&format!("{TYPED}{path}")), query_escape(text)));
    }
    url.push_str(&format!("#{}", card.id));
    url
}

#[server(prefix = "/sfn", output = Answer, endpoint = "health")]
pub async fn get_health() -> Result<HealthReport, ServerFnError> {
    Ok(ssr::backend()?.health().await)
}

/// Traffic over a window (`1h`, `24h`; the last hour when not given).
#[server(prefix = "/sfn", output = Answer, endpoint = "traffic")]
pub async fn get_traffic(window: Option<String>) -> Result<crate::types::traffic::TrafficReport, ServerFnError> {
    ssr::backend()?.traffic(window.as_deref()).map_err(|e| ssr::fail("/monitoring/health", e))
}

/// Requests and tokens grouped `by` (`model` when not given) over a
/// Usage window (`24h` when not given).
#[server(prefix = "/sfn", output = Answer, endpoint = "usage")]
pub async fn get_usage(
    by: Option<String>,
    window: Option<String>,
) -> Result<crate::types::usage::UsageReport, ServerFnError> {
    use crate::types::usage::{USAGE_WINDOWS, UsageGroupBy};
    let by = by.as_deref().and_then(UsageGroupBy::parse).unwrap_or(UsageGroupBy::Model);
    let window = USAGE_WINDOWS.iter().find(|w| Some(w.0) == window.as_deref()).unwrap_or(&USAGE_WINDOWS[0]);
    ssr::backend()?.usage(by, window.2).await.map_err(|e| ssr::fail("/usage", e))
}

/// Resets one provider's breaker (`provider` empty: all).
#[server(prefix = "/sfn", output = Answer, endpoint = "reset_breakers")]
pub async fn reset_breakers(provider: Option<String>) -> Result<u32, ServerFnError> {
    Ok(ssr::backend()?.reset_breakers(given(provider).as_deref()).reset_count)
}

#[server(prefix = "/sfn", output = Answer, endpoint = "cooldowns")]
pub async fn get_cooldowns() -> Result<CooldownList, ServerFnError> {
    ssr::backend()?.cooldowns().await.map_err(|e| ssr::fail("/monitoring/cooldowns", e))
}

/// Clears the selected connections (`connection_ids[]`), or all of
/// `provider` when `all` is set. Terminal connections are left alone.
#[server(prefix = "/sfn", output = Answer, endpoint = "clear_cooldowns")]
pub async fn clear_cooldowns(
    connection_ids: Option<Vec<String>>,
    all: Option<String>,
    provider: Option<String>,
) -> Result<ClearCooldownsResult, ServerFnError> {
    let req = crate::types::monitoring::ClearCooldowns {
        connection_ids: if all.is_some() { None } else { Some(connection_ids.unwrap_or_default()) },
        all: all.map(|_| true),
        provider: given(provider),
    };
    ssr::backend()?.clear_cooldowns(req).await.map_err(|e| ssr::fail("/monitoring/cooldowns", e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "model_cooldowns")]
pub async fn get_model_cooldowns() -> Result<ModelCooldownList, ServerFnError> {
    Ok(ssr::backend()?.model_cooldowns())
}

/// Re-enables one model on one connection, or every locked model (`all`).
#[server(prefix = "/sfn", output = Answer, endpoint = "clear_model_cooldown")]
pub async fn clear_model_cooldown(
    provider: Option<String>,
    connection: Option<String>,
    model: Option<String>,
    all: Option<String>,
) -> Result<usize, ServerFnError> {
    let req = crate::types::monitoring::ClearModelCooldowns {
        provider: given(provider),
        connection: given(connection),
        model: given(model),
        all: all.map(|_| true),
    };
    ssr::backend()?.clear_model_cooldowns(req).map_err(|e| ssr::fail("/settings/model-lockout", e))
}
