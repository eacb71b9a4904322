//! What the gateway knows of a model itself: its context window and its
//! list price. The `cost-optimized` and `context-optimized` strategies
//! read these; a model that is not here is "unknown" to them (last).
//!
//! The figures are the model makers' published list prices (USD per
//! million tokens, standard tier, no caching or batch discounts) and
//! context windows, as of this gateway's release. A reseller that lists
//! the same model id (OpenRouter, AgentRouter, OpenCode) is assumed to
//! charge the maker's price; a model whose figures we could not state
//! with confidence is left out rather than guessed.

/// One model's facts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelFacts {
    /// Tokens of context (input and output together).
    pub context_window: u32,
    /// USD per million input tokens.
    pub input_price: f64,
    /// USD per million output tokens.
    pub output_price: f64,
}

const fn f(context_window: u32, input_price: f64, output_price: f64) -> ModelFacts {
    ModelFacts { context_window, input_price, output_price }
}

static FACTS: [(&str, ModelFacts); 24] = [
    ("gpt-5", f(400_000, 1.25, 10.0)),
    ("gpt-5-codex", f(400_000, 1.25, 10.0)),
    ("gpt-5-mini", f(400_000, 0.25, 2.0)),
    ("gpt-4.1", f(1_047_576, 2.0, 8.0)),
    ("gpt-4o", f(128_000, 2.5, 10.0)),
    ("gpt-4o-mini", f(128_000, 0.15, 0.6)),
    ("o4-mini", f(200_000, 1.1, 4.4)),
    ("claude-opus-4-1", f(200_000, 15.0, 75.0)),
    ("claude-sonnet-4-5", f(200_000, 3.0, 15.0)),
    ("claude-haiku-4-5", f(200_000, 1.0, 5.0)),
    ("gemini-2.5-pro", f(1_048_576, 1.25, 10.0)),
    ("gemini-2.5-flash", f(1_048_576, 0.3, 2.5)),
    ("gemini-2.5-flash-lite", f(1_048_576, 0.1, 0.4)),
    ("deepseek-chat", f(128_000, 0.28, 0.42)),
    ("deepseek-reasoner", f(128_000, 0.28, 0.42)),
    ("glm-4.6", f(200_000, 0.6, 2.2)),
    ("glm-4.5", f(128_000, 0.6, 2.2)),
    ("glm-4.5-air", f(128_000, 0.2, 1.1)),
    ("llama-3.3-70b-versatile", f(131_072, 0.59, 0.79)),
    ("openai/gpt-oss-120b", f(131_072, 0.15, 0.75)),
    ("mistral-large-latest", f(128_000, 2.0, 6.0)),
    ("codestral-latest", f(256_000, 0.3, 0.9)),
    ("devstral-medium-latest", f(128_000, 0.4, 2.0)),
    ("MiniMax-M2", f(204_800, 0.3, 1.2)),
];

/// The facts of `model` (the upstream model id), if known.
pub fn of(model: &str) -> Option<ModelFacts> {
    FACTS.iter().find(|(id, _)| *id == model).map(|(_, facts)| *facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::catalog;

    #[test]
    fn ids_are_unique_and_figures_plausible() {
        let mut ids: Vec<_> = FACTS.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), FACTS.len());
        for (id, facts) in &FACTS {
            assert!(facts.context_window >= 8_192, "{id}");
            assert!(facts.input_price > 0.0 && facts.output_price >= facts.input_price, "{id}");
        }
    }

    #[test]
    fn the_first_party_catalog_models_are_known() {
        for provider in ["openai", "anthropic", "gemini", "deepseek"] {
            for model in catalog::find(provider).unwrap().models {
                assert!(of(model).is_some(), "{provider}/{model}");
            }
        }
        assert_eq!(of("no-such-model"), None);
    }
}
