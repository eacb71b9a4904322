//! The provider catalog. Providers are code: their protocol, category
//! (which resilience profile applies), default base URL and known models.
//! A connection's `baseUrl` overrides the default (proxies, self-hosting).

use app::types::{CatalogEntry, Category, Protocol};

/// One provider the gateway knows how to call.
#[derive(Debug)]
pub struct Provider {
    pub id: &'static str,
    pub name: &'static str,
    pub protocol: Protocol,
    pub category: Category,
    /// Empty when every connection must bring its own base URL.
    pub default_base_url: &'static str,
    pub models: &'static [&'static str],
    /// Model ids outside `models` are forwarded as-is.
    pub passthrough_models: bool,
    /// Quotas are per model (model-scoped rate limiters, §R5).
    pub has_per_model_quota: bool,
    /// How its backend departs from its protocol's public API.
    pub wire: Wire,
}

/// How a provider's backend departs from its protocol's public API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// The protocol as published.
    Standard,
    /// Claude's subscription backend: a request must open as Claude Code's.
    ClaudeCode,
    /// ChatGPT's Codex backend: Responses at `/codex/responses`, which only
    /// streams and stores nothing (`stream: true`, `store: false`).
    Codex,
    /// Google's Code Assist backend (Gemini CLI sign-ins): Gemini requests
    /// and answers inside an envelope naming the model and the account's
    /// Code Assist project, at `/v1internal:…`.
    CodeAssist,
}

impl Wire {
    /// Where its chat endpoint sits under the base URL, when not where
    /// the protocol puts it.
    pub fn chat_path(self, stream: bool) -> Option<&'static str> {
        match self {
            Self::Standard | Self::ClaudeCode => None,
            Self::Codex => Some("/codex/responses"),
            Self::CodeAssist if stream => Some("/v1internal:streamGenerateContent?alt=sse"),
            Self::CodeAssist => Some("/v1internal:generateContent"),
        }
    }

    /// Where its model list sits, when not where the protocol puts it.
    pub fn models_path(self) -> Option<&'static str> {
        (self == Self::Codex).then_some("/codex/models?client_version=1.0.0")
    }

    /// Where its subscription usage (the plan's windows) is read, under
    /// the base URL (Code Assist's is a POST naming the project).
    pub fn usage_path(self) -> Option<&'static str> {
        match self {
            Self::Standard => None,
            Self::ClaudeCode => Some("/api/oauth/usage"),
            Self::Codex => Some("/wham/usage"),
            Self::CodeAssist => Some("/v1internal:retrieveUserQuota"),
        }
    }

    /// It answers only as a stream: a non-stream request is sent as a
    /// stream and its events gathered into one answer.
    pub fn streams_only(self) -> bool {
        self == Self::Codex
    }
}

impl Provider {
    pub fn entry(&self) -> CatalogEntry {
        CatalogEntry {
            id: self.id.into(),
            name: self.name.into(),
            protocol: self.protocol,
            category: self.category,
            default_base_url: self.default_base_url.into(),
            models: self.models.iter().map(|m| m.to_string()).collect(),
            passthrough_models: self.passthrough_models,
            has_per_model_quota: self.has_per_model_quota,
        }
    }
}

const fn p(
    id: &'static str,
    name: &'static str,
    protocol: Protocol,
    category: Category,
    default_base_url: &'static str,
    models: &'static [&'static str],
) -> Provider {
    Provider {
        id,
        name,
        protocol,
        category,
        default_base_url,
        models,
        passthrough_models: true,
        has_per_model_quota: false,
        wire: Wire::Standard,
    }
}

use Category::{Apikey, Local, Oauth};
use Protocol::{Anthropic, Gemini, OpenaiChat, Responses};

static PROVIDERS: [Provider; 19] = [
    p(
        "openai",
        "OpenAI",
        OpenaiChat,
        Apikey,
        "https://api.openai.com/v1",
        &["gpt-5", "gpt-5-mini", "gpt-4.1", "gpt-4o", "gpt-4o-mini", "o4-mini"],
    ),
    p(
        "openai-responses",
        "OpenAI (Responses API)",
        Responses,
        Apikey,
        "https://api.openai.com/v1",
        &["gpt-5", "gpt-5-codex", "gpt-5-mini", "o4-mini"],
    ),
    p(
        "anthropic",
        "Anthropic",
        Anthropic,
        Apikey,
        "https://api.anthropic.com",
        &["claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5"],
    ),
    // A Claude Pro/Max subscription, signed in through Claude Code's OAuth client.
    Provider {
        wire: Wire::ClaudeCode,
        ..p(
            "claude",
            "Claude (Pro/Max subscription)",
            Anthropic,
            Oauth,
            "https://api.anthropic.com",
            &["claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5"],
        )
    },
    // A ChatGPT Plus/Pro/Team subscription, signed in through the Codex CLI's client.
    Provider {
        wire: Wire::Codex,
        ..p(
            "codex",
            "ChatGPT (Codex subscription)",
            Responses,
            Oauth,
            "https://chatgpt.com/backend-api",
            &["gpt-5-codex", "gpt-5", "gpt-5-codex-mini"],
        )
    },
    // A Google account's Gemini Code Assist (free or paid), signed in through the Gemini CLI's client.
    Provider {
        has_per_model_quota: true,
        wire: Wire::CodeAssist,
        ..p(
            "gemini-cli",
            "Gemini (Gemini CLI sign-in)",
            Gemini,
            Oauth,
            "https://cloudcode-pa.googleapis.com",
            &["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"],
        )
    },
    Provider {
        has_per_model_quota: true,
        ..p(
            "gemini",
            "Google Gemini",
            Gemini,
            Apikey,
            "https://generativelanguage.googleapis.com/v1beta",
            &["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"],
        )
    },
    p("openrouter", "OpenRouter", OpenaiChat, Apikey, "https://openrouter.ai/api/v1", &["openrouter/auto"]),
    p("glm", "Z.ai GLM", OpenaiChat, Apikey, "https://api.z.ai/api/paas/v4", &["glm-4.6", "glm-4.5", "glm-4.5-air"]),
    p(
        "deepseek",
        "DeepSeek",
        OpenaiChat,
        Apikey,
        "https://api.deepseek.com/v1",
        &["deepseek-chat", "deepseek-reasoner"],
    ),
    p(
        "groq",
        "Groq",
        OpenaiChat,
        Apikey,
        "https://api.groq.com/openai/v1",
        &["llama-3.3-70b-versatile", "openai/gpt-oss-120b"],
    ),
    p(
        "mistral",
        "Mistral",
        OpenaiChat,
        Apikey,
        "https://api.mistral.ai/v1",
        &["mistral-large-latest", "codestral-latest", "devstral-medium-latest"],
    ),
    p("minimax", "MiniMax", OpenaiChat, Apikey, "https://api.minimax.io/v1", &["MiniMax-M2"]),
    p("ollama", "Ollama", OpenaiChat, Local, "http://127.0.0.1:11434/v1", &[]),
    p("lmstudio", "LM Studio", OpenaiChat, Local, "http://127.0.0.1:1234/v1", &[]),
    p(
        "agentrouter",
        "AgentRouter",
        OpenaiChat,
        Apikey,
        "https://agentrouter.org/v1",
        &["claude-sonnet-4-5", "gpt-5", "glm-4.6", "deepseek-v3.1"],
    ),
    p(
        "opencode-go",
        "OpenCode Go",
        OpenaiChat,
        Apikey,
        "https://opencode.ai/zen/go/v1",
        &["glm-4.6", "kimi-k2", "qwen3-coder"],
    ),
    p(
        "opencode-cli",
        "OpenCode Zen",
        OpenaiChat,
        Apikey,
        "https://opencode.ai/zen/v1",
        &["grok-code", "qwen3-coder", "kimi-k2"],
    ),
    p("openai-compatible", "OpenAI-compatible (custom)", OpenaiChat, Apikey, "", &[]),
];

/// Every provider, in display order.
pub fn all() -> &'static [Provider] {
    &PROVIDERS
}

pub fn find(id: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.id == id)
}

/// A provider's class (its breaker and cooldown profile); API key for a
/// provider no longer in the catalog.
pub fn category_of(provider: &str) -> app::types::Category {
    find(provider).map_or(app::types::Category::Apikey, |p| p.category)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_urls_well_formed() {
        let mut ids: Vec<_> = all().iter().map(|p| p.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all().len());
        for p in all() {
            assert!(p.default_base_url.is_empty() || p.default_base_url.starts_with("http"), "{}", p.id);
            assert!(!p.default_base_url.ends_with('/'), "{}", p.id);
        }
    }

    #[test]
    fn required_providers_exist() {
        for id in [
            "openai",
            "anthropic",
            "gemini",
            "openrouter",
            "glm",
            "deepseek",
            "groq",
            "mistral",
            "minimax",
            "ollama",
            "lmstudio",
            "agentrouter",
            "opencode-go",
            "opencode-cli",
            "openai-compatible",
        ] {
            assert!(find(id).is_some(), "{id}");
        }
        assert_eq!(find("ollama").unwrap().category, Category::Local);
    }
}
