//! The provider catalog as the API and the dashboard see it. The catalog
//! itself is code (server `upstream::catalog`); this is its wire shape.

use serde::{Deserialize, Serialize};

/// The wire protocol an upstream speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// OpenAI Chat Completions (`/chat/completions`), also most
    /// "OpenAI-compatible" services.
    OpenaiChat,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// OpenAI Responses (`/responses`).
    Responses,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiChat => "openai-chat",
            Self::Anthropic => "anthropic",
            Self::Responses => "responses",
            Self::Gemini => "gemini",
        }
    }
}

/// How a provider's accounts authenticate; decides resilience profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Oauth,
    Apikey,
    Local,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Oauth => "oauth",
            Self::Apikey => "apikey",
            Self::Local => "local",
        }
    }
}

/// One catalog entry, `GET /api/providers/catalog`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    pub id: String,
    pub name: String,
    pub protocol: Protocol,
    pub category: Category,
    /// Empty for providers that need a base URL per connection.
    pub default_base_url: String,
    pub models: Vec<String>,
    /// Any model id is forwarded as-is, not only the listed ones.
    pub passthrough_models: bool,
    pub has_per_model_quota: bool,
}
