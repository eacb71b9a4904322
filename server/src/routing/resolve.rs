//! Model addressing: `provider/model`, or a bare model id that exactly one
//! active provider serves.

use super::registry::Snapshot;
use crate::upstream::catalog::{self, Provider};

/// Where a request goes: a provider and the model id it knows.
#[derive(Debug, Clone)]
pub struct Target {
    pub provider: &'static Provider,
    pub model: String,
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error("model {0:?} is served by several providers; use one of: {1}")]
    Ambiguous(String, String),
    #[error("model {0:?} is not served by any active provider; use provider/model (see GET /v1/models)")]
    Unknown(String),
}

pub fn resolve(requested: &str, snapshot: &Snapshot) -> Result<Target, ResolveError> {
    if let Some((prefix, model)) = requested.split_once('/')
        && let Some(provider) = catalog::find(prefix)
        && !model.is_empty()
    {
        return Ok(Target { provider, model: model.to_owned() });
    }
    let mut serving: Vec<&'static Provider> =
        snapshot.active_providers().filter(|p| p.models.contains(&requested)).collect();
    if serving.is_empty() {
        // Providers without a static list serve whatever their host has.
        serving = snapshot.active_providers().filter(|p| p.models.is_empty()).collect();
    }
    match serving.as_slice() {
        [one] => Ok(Target { provider: one, model: requested.to_owned() }),
        [] => Err(ResolveError::Unknown(requested.to_owned())),
        many => Err(ResolveError::Ambiguous(
            requested.to_owned(),
            many.iter().map(|p| format!("{}/{requested}", p.id)).collect::<Vec<_>>().join(", "),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::registry::LiveConnection;

    fn snapshot(providers: &[&str]) -> Snapshot {
        Snapshot::from_live(providers.iter().map(|id| {
            LiveConnection::new(
                format!("c-{id}"),
                catalog::find(id).unwrap(),
                crate::upstream::executor::BaseUrl::parse("http://x").unwrap(),
                None,
            )
        }))
    }

    #[test]
    fn provider_prefix_wins_and_keeps_nested_slashes() {
        let t = resolve("openrouter/meta-llama/llama-3", &snapshot(&[])).unwrap();
        assert_eq!((t.provider.id, t.model.as_str()), ("openrouter", "meta-llama/llama-3"));
    }

    #[test]
    fn bare_ids_need_exactly_one_serving_provider() {
        let s = snapshot(&["openai", "deepseek"]);
        assert_eq!(resolve("deepseek-chat", &s).unwrap().provider.id, "deepseek");
        assert!(matches!(resolve("nope", &s), Err(ResolveError::Unknown(_))));
        let both = snapshot(&["agentrouter", "openai"]);
        assert!(matches!(resolve("gpt-5", &both), Err(ResolveError::Ambiguous(..))));
    }

    #[test]
    fn a_lone_listless_provider_serves_bare_ids() {
        assert_eq!(resolve("llama3", &snapshot(&["ollama"])).unwrap().provider.id, "ollama");
        assert!(resolve("llama3", &snapshot(&["ollama", "lmstudio"])).is_err());
    }
}
