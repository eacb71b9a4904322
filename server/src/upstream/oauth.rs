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
    /// Where tokens are issued and refreshed, unless
    /// `OMNIROUTE_OAUTH_TOKEN_URL_<PROVIDER>` says otherwise.
    pub token_url: &'static str,
    /// The page where the user signs in.
    pub authorize_url: &'static str,
    /// Where that page sends the code (it shows it, for Claude).
    pub redirect_uri: &'static str,
    pub scopes: &'static str,
}

/// Claude Code's client (Claude Pro/Max subscriptions).
const CLAUDE: OauthClient = OauthClient {
    provider: "claude",
    client_id: "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
    token_url: "https://console.anthropic.com/v1/oauth/token",
    authorize_url: "https://claude.ai/oauth/authorize",
    redirect_uri: "https://console.anthropic.com/oauth/code/callback",
    scopes: "org:create_api_key user:profile user:inference",
};

/// A PKCE pair (RFC 7636, S256): the verifier stays with the gateway, the
/// challenge goes in the sign-in URL.
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    /// The pair of a random `verifier` (43 to 128 URL-safe characters).
    pub fn of(verifier: String) -> Self {
        Self { challenge: challenge_of(&verifier), verifier }
    }
}

/// base64url(SHA-256(`verifier`)), unpadded.
pub fn challenge_of(verifier: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

impl OauthClient {
    /// The sign-in page's URL for one sign-in (`state`, PKCE `challenge`).
    pub fn authorize_url(&self, state: &str, challenge: &str) -> String {
        let query = [
            ("code", "true"),
            ("client_id", self.client_id),
            ("response_type", "code"),
            ("redirect_uri", self.redirect_uri),
            ("scope", self.scopes),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("state", state),
        ];
        let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={}", percent_encode(v))).collect();
        format!("{}?{}", self.authorize_url, query.join("&"))
    }
}

/// `value` percent-encoded for a query string (RFC 3986 unreserved kept).
fn percent_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The OAuth client of `provider`, when it is a subscription provider.
pub fn client(provider: &str) -> Option<&'static OauthClient> {
    [&CLAUDE].into_iter().find(|c| c.provider == provider)
}

/// Why the token endpoint gave no token set.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The issuer refused the grant (a spent or revoked refresh token, an
    /// expired or used code): only a new sign-in brings the account back.
    #[error("the provider refused the grant ({0}); sign in again")]
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
    let body = serde_json::json!({
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client.client_id,
    });
    let set = issue(upstream, token_url, &body, now_ms).await?;
    Ok(TokenSet { refresh_token: set.refresh_token.or_else(|| Some(refresh_token.to_owned())), ..set })
}

/// Exchanges a sign-in's `code` (with its `state` and PKCE `verifier`)
/// at `token_url` for the account's first token set.
pub async fn exchange(
    upstream: &dyn Upstream,
    client: &OauthClient,
    token_url: &str,
    (code, state, verifier): (&str, &str, &str),
    now_ms: i64,
) -> Result<TokenSet, RefreshError> {
    let body = serde_json::json!({
        "grant_type": "authorization_code",
        "code": code,
        "state": state,
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "code_verifier": verifier,
    });
    issue(upstream, token_url, &body, now_ms).await
}

/// POSTs `body` to the token endpoint: the token set it issued.
async fn issue(
    upstream: &dyn Upstream,
    token_url: &str,
    body: &serde_json::Value,
    now_ms: i64,
) -> Result<TokenSet, RefreshError> {
    let base_url =
        BaseUrl::parse(token_url).ok_or_else(|| RefreshError::Failed(format!("bad token URL {token_url}")))?;
    let endpoint = Endpoint::new(Protocol::OpenaiChat, base_url, None);
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
        refresh_token: issued.refresh_token,
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
        assert_eq!(bare.access_token, "sk-ant-oat01-abc");
        assert_eq!((bare.refresh_token, bare.expires_at), (None, None));
    }

    #[test]
    fn the_sign_in_url_carries_the_client_the_challenge_and_the_state() {
        // RFC 7636 appendix B.
        let url = CLAUDE.authorize_url("st-1", "ch-1");
        assert!(url.starts_with("https://claude.ai/oauth/authorize?code=true&client_id=9d1c250a-e61b-44d9-88ed-5944d1962f5e&response_type=code&redirect_uri=https%3A%2F%2Fconsole.anthropic.com%2Foauth%2Fcode%2Fcallback&scope=org%3Acreate_api_key%20user%3Aprofile%20user%3Ainference&code_challenge=ch-1&code_challenge_method=S256&state=st-1"), "{url}");
        let pkce = Pkce::of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(pkce.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }
}
