//! Subscription accounts (providers of category `oauth`): the token set a
//! connection stores, each provider's public OAuth client, and the refresh
//! call to its token endpoint.
//!
//! A refresh token is single-use at these issuers: the answer carries the
//! next one, and the one just spent is dead. So the caller must store the
//! new set before it uses the new access token (`services::oauth`), or a
//! restart would strand the account.

use app::types::Protocol;
use bytes::Bytes;
use http::HeaderMap;
use serde::{Deserialize, Serialize};

use super::{
    Upstream,
    executor::{BaseUrl, Endpoint},
};

/// What an OAuth connection stores (encrypted, like an API key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl TokenSet {
    /// A stored credential: the token set's JSON, or a bare access token
    /// (a connection saved with `accessToken` alone).
    pub fn read(stored: &str) -> Self {
        serde_json::from_str(stored).unwrap_or_else(|_| Self {
            access_token: stored.to_owned(),
            refresh_token: None,
            expires_at: None,
        })
    }

    /// The form it is stored in.
    pub fn stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A provider's public OAuth client, as its own CLI uses it.
#[derive(Debug)]
pub struct OauthClient {
    pub provider: &'static str,
    pub client_id: &'static str,
    /// Where tokens are refreshed, unless `OMNIROUTE_OAUTH_TOKEN_URL_<PROVIDER>` says otherwise.
    pub token_url: &'static str,
}

/// Claude Code's client (Claude Pro/Max subscriptions).
const CLAUDE: OauthClient = OauthClient {
    provider: "claude",
    client_id: "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
    token_url: "https://console.anthropic.com/v1/oauth/token",
};

/// The OAuth client of `provider`, when it is a subscription provider.
pub fn client(provider: &str) -> Option<&'static OauthClient> {
    [&CLAUDE].into_iter().find(|c| c.provider == provider)
}

/// Why a refresh gave no new token.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The issuer refused the refresh token (spent, revoked): only a new
    /// sign-in brings the account back.
    #[error("the provider refused the refresh token ({0}); sign in again")]
    Refused(String),
    /// The issuer could not be reached or failed: the token may be
    /// refreshed later.
    #[error("the token could not be refreshed: {0}")]
    Failed(String),
}

/// The issuer's answer to a refresh.
#[derive(Deserialize)]
struct Issued {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
}

/// Exchanges `refresh_token` at `token_url` for a new token set (the
/// refresh token it rotated to, or the same one when the issuer keeps it).
pub async fn refresh(
    upstream: &dyn Upstream,
    client: &OauthClient,
    token_url: &str,
    refresh_token: &str,
    now_ms: i64,
) -> Result<TokenSet, RefreshError> {
    let base_url =
        BaseUrl::parse(token_url).ok_or_else(|| RefreshError::Failed(format!("bad token URL {token_url}")))?;
    let endpoint = Endpoint::new(Protocol::OpenaiChat, base_url, None);
    let body = serde_json::json!({
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client.client_id,
    });
    let resp = upstream
        .post(&endpoint, "", Bytes::from(body.to_string()), false, &HeaderMap::new())
        .await
        .map_err(|e| RefreshError::Failed(e.to_string()))?;
    let status = resp.status();
    let raw = resp.read_limited(64 * 1024).await;
    if status == http::StatusCode::BAD_REQUEST || status == http::StatusCode::UNAUTHORIZED {
        let why: serde_json::Value = serde_json::from_slice(&raw).unwrap_or_default();
        let code = why["error"].as_str().or_else(|| why["error"]["type"].as_str()).unwrap_or("refused");
        return Err(RefreshError::Refused(code.chars().take(100).collect()));
    }
    if !status.is_success() {
        return Err(RefreshError::Failed(format!("the token endpoint answered {status}")));
    }
    let issued: Issued = serde_json::from_slice(&raw)
        .map_err(|e| RefreshError::Failed(format!("the token endpoint's answer could not be read: {e}")))?;
    Ok(TokenSet {
        access_token: issued.access_token,
        refresh_token: issued.refresh_token.or_else(|| Some(refresh_token.to_owned())),
        expires_at: issued.expires_in.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_credential_is_a_token_set_or_a_bare_access_token() {
        let set = TokenSet { access_token: "at".into(), refresh_token: Some("rt".into()), expires_at: Some(5) };
        assert_eq!(TokenSet::read(&set.stored()), set);
        assert_eq!(set.stored(), r#"{"accessToken":"at","refreshToken":"rt","expiresAt":5}"#);
        let bare = TokenSet::read("sk-ant-oat01-abc");
        assert_eq!((bare.access_token.as_str(), bare.refresh_token, bare.expires_at), ("sk-ant-oat01-abc", None, None));
    }
}
