//! Subscription (OAuth) accounts: signing in through the provider's page,
//! and importing the credentials file its CLI already wrote.

use serde::{Deserialize, Serialize};

use super::validation::{Errors, FieldError};

/// `POST /api/oauth/{provider}/start` answer: the page to open, and the
/// sign-in's `state` to send back with its code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInStarted {
    pub authorize_url: String,
    pub state: String,
    /// The gateway listens at the provider's redirect address
    /// (`localhost:1455`, ChatGPT's) for this sign-in, so it completes by
    /// itself: the dashboard runs in a browser on the gateway's machine.
    #[serde(default)]
    pub listening: bool,
}

/// A sign-in waiting for its code, as the dashboard shows it: the
/// provider it signs in to, and where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitingSignIn {
    pub provider: String,
    pub started: SignInStarted,
}

/// `POST /api/oauth/{provider}/complete` body. `code` is what the
/// provider's page showed (`code#state` for Claude), or the whole URL it
/// redirected to, pasted back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteSignIn {
    pub state: String,
    pub code: String,
    /// The new connection's name (default: the provider's).
    #[serde(default)]
    pub name: Option<String>,
}

impl CompleteSignIn {
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        e.text("state", &self.state, 200);
        e.text("code", &self.code, 4096);
        if let Some(name) = &self.name {
            e.text("name", name, 100);
        }
        e.into_result()
    }
}

/// The credential files a CLI writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImportFormat {
    /// Claude Code's `~/.claude/.credentials.json` (`claudeAiOauth`).
    ClaudeCode,
    /// Codex's `~/.codex/auth.json`.
    Codex,
    /// Gemini CLI's `~/.gemini/oauth_creds.json`.
    GeminiCli,
}

impl ImportFormat {
    pub const ALL: [Self; 3] = [Self::ClaudeCode, Self::Codex, Self::GeminiCli];

    /// Where the CLI writes it, under the user's home directory.
    pub fn default_path(self) -> &'static str {
        match self {
            Self::ClaudeCode => ".claude/.credentials.json",
            Self::Codex => ".codex/auth.json",
            Self::GeminiCli => ".gemini/oauth_creds.json",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
        }
    }

    /// The CLI that writes it, for messages.
    pub fn cli(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::GeminiCli => "the Gemini CLI",
        }
    }
}

/// A CLI's credentials file at its default path on the gateway's machine
/// (`GET /api/providers/import/local`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalCredentialsFile {
    pub format: ImportFormat,
    /// `~/…`, as the user knows it.
    pub path: String,
    pub found: bool,
}

/// `GET /api/providers/import/local` answer: `local` when the asking
/// browser runs on the gateway's machine; the files only then.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalCredentials {
    pub local: bool,
    pub files: Vec<LocalCredentialsFile>,
}

/// `POST /api/providers/import` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportCredentials {
    pub format: ImportFormat,
    pub name: String,
    /// The file's JSON, as the CLI wrote it (or `fromThisMachine`).
    #[serde(default)]
    pub credentials: serde_json::Value,
    /// Read the file at its default path on the gateway's machine instead:
    /// only for a browser on that machine.
    #[serde(default)]
    pub from_this_machine: bool,
}

/// `GET /api/quotas` answer: each subscription account's plan windows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QuotaList {
    pub connections: Vec<ConnectionQuota>,
}

/// One account's plan windows, as its provider last stated them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionQuota {
    pub connection_id: String,
    pub provider: String,
    pub name: String,
    /// The plan's name, where the provider says it (`pro`, `plus`…).
    pub plan: Option<String>,
    pub windows: Vec<QuotaWindow>,
    /// `headers` (an answer's) or `usage-endpoint`; `None` before either said anything.
    pub source: Option<String>,
    /// When it was stated (epoch ms).
    pub fetched_at: Option<i64>,
    /// Why the last fetch from the usage endpoint failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One plan window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaWindow {
    /// `5h`, `7d`, or the window's length (`90m`, `24h`).
    pub window: String,
    /// 0–100.
    pub used_percent: f64,
    /// When it renews (epoch ms), if said.
    pub resets_at: Option<i64>,
}
