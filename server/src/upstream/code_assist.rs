//! Finding a Gemini CLI account's Code Assist project, as the Gemini CLI
//! does on its first run: `loadCodeAssist` names the project of an account
//! already set up; otherwise `onboardUser` sets the account up on its
//! default tier (free for a personal account) and names the project when
//! its long-running operation is done. The project goes in every request's
//! envelope ([`crate::protocols::code_assist`]).

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    Upstream,
    executor::{Endpoint, TransportError, UpstreamResponse},
};

/// How often, and how many times, an unfinished set-up is asked about.
const POLL_EVERY: Duration = Duration::from_secs(5);
const POLLS: u32 = 6;
/// Largest answer read.
const MAX_ANSWER: usize = 256 * 1024;

fn metadata() -> Value {
    json!({"ideType": "IDE_UNSPECIFIED", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"})
}

/// The account's Code Assist project (setting the account up first when
/// it never was), or why there is none.
pub async fn project(upstream: &dyn Upstream, endpoint: &Endpoint) -> Result<String, String> {
    let loaded = call(upstream, endpoint, "/v1internal:loadCodeAssist", &json!({"metadata": metadata()})).await?;
    if let Some(project) = loaded["cloudaicompanionProject"].as_str() {
        return Ok(project.to_owned());
    }
    if !loaded["currentTier"].is_null() {
        return Err("this Google account's Code Assist tier needs a Google Cloud project of its own, which the gateway cannot choose; use a Gemini API key (provider gemini) instead".into());
    }
    let tiers = loaded["allowedTiers"].as_array().cloned().unwrap_or_default();
    let tier = tiers.iter().find(|t| t["isDefault"] == true).and_then(|t| t["id"].as_str()).unwrap_or("free-tier");
    let mut operation =
        call(upstream, endpoint, "/v1internal:onboardUser", &json!({"tierId": tier, "metadata": metadata()})).await?;
    for _ in 0..POLLS {
        if operation["done"] == true {
            break;
        }
        let Some(name) = operation["name"].as_str() else { break };
        tokio::time::sleep(POLL_EVERY).await;
        operation = read(upstream.get(endpoint, &format!("/v1internal/{name}")).await).await?;
    }
    match operation["response"]["cloudaicompanionProject"]["id"].as_str() {
        Some(project) => Ok(project.to_owned()),
        None if operation["done"] == true => Err("Code Assist set the account up but named no project".into()),
        None => Err("Code Assist is still setting the account up; try again in a minute".into()),
    }
}

async fn call(upstream: &dyn Upstream, endpoint: &Endpoint, path: &str, body: &Value) -> Result<Value, String> {
    let body = Bytes::from(body.to_string());
    read(upstream.post(endpoint, path, body, false, &http::HeaderMap::new()).await).await
}

async fn read(answer: Result<UpstreamResponse, TransportError>) -> Result<Value, String> {
    let answer = answer.map_err(|e| format!("Code Assist could not be reached: {e}"))?;
    answer.json_answer(MAX_ANSWER).await.map_err(|why| format!("Code Assist {why}"))
}
