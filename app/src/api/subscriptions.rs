//! Subscription accounts from the dashboard: sign in through the
//! provider's page (start, then the code it shows), or import the file a
//! CLI wrote. Without JS, a started sign-in reloads the page at
//! `/providers?sign_in=<state>`, which shows it again until its code comes.

use leptos::prelude::*;

use super::answer::Answer;
#[cfg(feature = "ssr")]
use super::{given, ssr};
use crate::types::subscription::{LocalCredentials, QuotaList, WaitingSignIn};

/// Where subscription forms send the browser back to.
#[cfg(feature = "ssr")]
const PAGE: &str = "/providers";

#[server(prefix = "/sfn", output = Answer, endpoint = "start_sign_in")]
pub async fn start_sign_in(provider: String) -> Result<WaitingSignIn, ServerFnError> {
    let parts = use_context::<http::request::Parts>().ok_or_else(|| ServerFnError::new("request missing"))?;
    let started = ssr::backend()?.start_sign_in(&provider, &parts).await.map_err(|e| ssr::fail(PAGE, e))?;
    if ssr::is_form_post() {
        leptos_axum::redirect(&format!("{PAGE}?sign_in={}", crate::format::query_escape(&started.started.state)));
    }
    Ok(started)
}

#[server(prefix = "/sfn", output = Answer, endpoint = "pending_sign_in")]
pub async fn pending_sign_in(state: String) -> Result<Option<WaitingSignIn>, ServerFnError> {
    ssr::backend()?.pending_sign_in(&state).await.map_err(|e| ssr::fail(PAGE, e))
}

#[server(prefix = "/sfn", output = Answer, endpoint = "finish_sign_in")]
pub async fn finish_sign_in(
    provider: String,
    state: String,
    code: String,
    name: Option<String>,
) -> Result<(), ServerFnError> {
    let input = crate::types::subscription::CompleteSignIn { state, code, name: given(name) };
    let backend = ssr::backend()?;
    backend.complete_sign_in(&provider, input).await.map_err(|e| ssr::fail(PAGE, e))?;
    if ssr::is_form_post() {
        leptos_axum::redirect(PAGE);
    }
    Ok(())
}

#[server(prefix = "/sfn", output = Answer, endpoint = "import_subscription")]
pub async fn import_subscription(
    format: String,
    name: String,
    credentials: Option<String>,
    from_this_machine: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{backend::BackendError, types::FieldError};
    let fail = |e| ssr::fail(PAGE, e);
    let invalid = |field: &str, why: String| fail(BackendError::Invalid(vec![FieldError::new(field, why)]));
    let format = serde_json::from_value(serde_json::Value::String(format))
        .map_err(|_| invalid("format", "choose the file: Claude Code's, Codex's or the Gemini CLI's".into()))?;
    let from_this_machine = from_this_machine.is_some();
    let credentials = match credentials {
        Some(text) => {
            serde_json::from_str(&text).map_err(|e| invalid("credentials", format!("is not the file's JSON: {e}")))?
        }
        None => serde_json::Value::Null,
    };
    let input = crate::types::subscription::ImportCredentials { format, name, credentials, from_this_machine };
    let parts = use_context::<http::request::Parts>().ok_or_else(|| ServerFnError::new("request missing"))?;
    ssr::backend()?.import_credentials(input, &parts).await.map_err(fail)?;
    if ssr::is_form_post() {
        leptos_axum::redirect(PAGE);
    }
    Ok(())
}

/// The CLIs' credentials files on the gateway's machine, when this
/// browser runs on it.
#[server(prefix = "/sfn", output = Answer, endpoint = "credentials_on_this_machine")]
pub async fn credentials_on_this_machine() -> Result<LocalCredentials, ServerFnError> {
    let parts = use_context::<http::request::Parts>().ok_or_else(|| ServerFnError::new("request missing"))?;
    Ok(ssr::backend()?.local_credentials(&parts))
}

/// Every subscription's plan windows, and the server's now they count down from.
#[server(prefix = "/sfn", output = Answer, endpoint = "quotas")]
pub async fn get_quotas() -> Result<(QuotaList, i64), ServerFnError> {
    Ok(ssr::backend()?.quotas())
}
