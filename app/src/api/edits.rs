//! The two edit forms whose server functions take a field per input.
//!
//! A server function's arguments are its form's fields, so these two have
//! more than clippy's seven. server_fn copies an `allow` onto the server's
//! function but not onto the browser's stub (nor does `cfg_attr` survive:
//! it is expanded before the macro sees it), so the allow is this module's.
#![allow(clippy::too_many_arguments, reason = "a server function's arguments are its form's fields")]

use leptos::prelude::*;

use super::answer::Answer;
#[cfg(feature = "ssr")]
use super::{given, ssr};
#[cfg(feature = "ssr")]
use crate::types::FieldError;

#[server(prefix = "/sfn", output = Answer, endpoint = "update_connection")]
pub async fn edit_connection(
    id: String,
    name: Option<String>,
    api_key: Option<String>,
    refresh_token: Option<String>,
    base_url: Option<String>,
    priority: Option<String>,
    max_concurrent: Option<String>,
    model_concurrency: Option<String>,
    protection: Option<String>,
    usage_wall: Option<String>,
    low_priority_mode: Option<String>,
    auto_limit_reset: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{backend::BackendError, types};
    let fail = |e| ssr::fail("/providers", e);
    let invalid = |e: types::FieldError| fail(BackendError::Invalid(vec![e]));
    let backend = ssr::backend()?;
    // A subscription's access token goes with its refresh token.
    let refresh_token = given(refresh_token);
    let (api_key, access_token) = if refresh_token.is_some() { (None, given(api_key)) } else { (given(api_key), None) };
    let mut input = types::UpdateConnection {
        name: given(name),
        api_key,
        access_token,
        refresh_token,
        base_url: given(base_url).map(Some),
        priority: given(priority).and_then(|p| p.parse::<i32>().ok()),
        // The form carries the usage-wall boxes: an unchecked one is sent as nothing.
        low_priority_mode: usage_wall.is_some().then_some(low_priority_mode.is_some()),
        auto_limit_reset: usage_wall.is_some().then_some(auto_limit_reset.is_some()),
        ..Default::default()
    };
    if let Some(text) = max_concurrent {
        input.max_concurrent = Some(types::parse_max_concurrent(&text).map_err(invalid)?);
    }
    if let Some(text) = model_concurrency {
        let caps = types::parse_model_concurrency(&text).map_err(invalid)?;
        // The other overrides (rates, waits) are kept as they are.
        let list = backend.list_connections().await.map_err(fail)?;
        let current = list.connections.into_iter().find(|c| c.id == id).and_then(|c| c.rate_limit_overrides);
        let overrides = types::RateLimitOverrides { model_concurrency: caps, ..current.unwrap_or_default() };
        input.rate_limit_overrides = Some((overrides != types::RateLimitOverrides::default()).then_some(overrides));
    }
    let protection = match protection.as_deref() {
        None => None,
        Some(mode) => Some(types::rate_limits::parse_protection(mode).map_err(invalid)?),
    };
    backend.update_connection(&id, input).await.map_err(fail)?;
    if let Some(enabled) = protection {
        let set = types::rate_limits::SetRateLimitProtection { connection_id: id, enabled };
        backend.set_rate_limit_protection(set).await.map_err(fail)?;
    }
    Ok(())
}

/// Creates a combo, or replaces `replace` (its name) when editing. The
/// targets are the dashboard's lines (`provider/model [weight]
/// [@connection] [| prompt]`); the fields of a strategy not chosen are
/// ignored.
#[server(prefix = "/sfn", output = Answer, endpoint = "save_combo")]
pub async fn save_combo(
    name: String,
    strategy: String,
    targets: String,
    combo_timeout_ms: Option<String>,
    judge_model: Option<String>,
    max_retries: Option<String>,
    retry_delay_ms: Option<String>,
    replace: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{
        backend::BackendError,
        types::combo::{Combo, ConfigForm, parse_strategy, parse_targets},
    };
    let invalid = |e: FieldError| ssr::fail("/combos", BackendError::Invalid(vec![e]));
    let strategy = parse_strategy(&strategy).map_err(invalid)?;
    let backend = ssr::backend()?;
    // What the form has no inputs for (the fusion tuning, the handoff
    // settings, the target timeout) an edit keeps, while the strategy
    // reading it stays.
    let kept = given(replace.clone())
        .and_then(|old| backend.list_combos().combos.into_iter().find(|c| c.name == old))
        .map(|c| c.config)
        .unwrap_or_default();
    let targets = parse_targets(&targets).map_err(invalid)?;
    let form = ConfigForm {
        combo_timeout_ms: combo_timeout_ms.unwrap_or_default(),
        judge_model: judge_model.unwrap_or_default(),
        max_retries: max_retries.unwrap_or_default(),
        retry_delay_ms: retry_delay_ms.unwrap_or_default(),
    };
    let config = form.config(strategy, kept).map_err(|e| ssr::fail("/combos", BackendError::Invalid(e)))?;
    let combo = Combo { name: name.trim().to_owned(), strategy, targets, config };
    let saved = match given(replace) {
        Some(old) if old == combo.name => backend.replace_combo(combo).await,
        Some(_) => {
            Err(BackendError::Invalid(vec![FieldError::new("name", "a combo cannot be renamed; create a new one")]))
        }
        None => backend.create_combo(combo).await,
    };
    saved.map(drop).map_err(|e| ssr::fail("/combos", e))
}
