//! Subscription accounts (providers of category `oauth`): the token set a
//! connection stores (`tokens`), each provider's public OAuth client
//! (`clients`), and the calls to its token endpoint.
//!
//! A refresh token is single-use at these issuers: the answer carries the
//! next one, and the one just spent is dead. So the caller must store the
//! new set before it uses the new access token (`services::oauth`), or a
//! restart would strand the account.

mod clients;
mod tokens;

pub use clients::{OauthClient, Pkce, backend_headers, challenge_of, client, providers};
pub use tokens::TokenSet;

use app::types::Protocol;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header::CONTENT_TYPE};
use serde::Deserialize;

use super::{
    Upstream,
    executor::{BaseUrl, Endpoint},
};
use clients::TokenBody;

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
    /// OpenAI's: it names the ChatGPT account.
    #[serde(default)]
    id_token: Option<String>,
    /// Anthropic's: the organization the token acts for.
    #[serde(default)]
    organization: Option<Organization>,
}

#[derive(Deserialize)]
struct Organization {
    uuid: String,
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
    let mut fields =
        vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", client.client_id)];
    fields.extend(client.refresh_scope.map(|scope| ("scope", scope)));
    fields.extend(client.client_secret.map(|secret| ("client_secret", secret)));
    let set = issue(upstream, token_url, Body::of(client.token_body == TokenBody::Form, &fields), now_ms).await?;
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
    let mut fields = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("client_id", client.client_id),
        ("redirect_uri", client.redirect_uri),
        ("code_verifier", verifier),
    ];
    fields.extend(client.client_secret.map(|secret| ("client_secret", secret)));
    // Anthropic's JSON exchange carries the sign-in's state too.
    if client.token_body == TokenBody::Json {
        fields.push(("state", state));
    }
    issue(upstream, token_url, Body::of(client.token_body != TokenBody::Json, &fields), now_ms).await
}

/// A token request's body.
enum Body {
    Json(serde_json::Value),
    Form(String),
}

impl Body {
    /// `fields` form-encoded, or as a JSON object.
    fn of(form: bool, fields: &[(&str, &str)]) -> Self {
        if form {
            return Self::Form(form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish());
        }
        Self::Json(fields.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect())
    }
}

/// POSTs `body` to the token endpoint: the token set it issued.
async fn issue(upstream: &dyn Upstream, token_url: &str, body: Body, now_ms: i64) -> Result<TokenSet, RefreshError> {
    let base_url =
        BaseUrl::parse(token_url).ok_or_else(|| RefreshError::Failed(format!("bad token URL {token_url}")))?;
    let endpoint = Endpoint::new(Protocol::OpenaiChat, base_url, None);
    let mut headers = HeaderMap::new();
    let body = match body {
        Body::Json(json) => Bytes::from(json.to_string()),
        Body::Form(form) => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
            Bytes::from(form)
        }
    };
    let resp =
        upstream.post(&endpoint, "", body, false, &headers).await.map_err(|e| RefreshError::Failed(e.to_string()))?;
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
    let expires_at = issued.expires_in.map(|s| now_ms.saturating_add(s.saturating_mul(1000)));
    let set = TokenSet::given(issued.access_token, issued.refresh_token, expires_at, issued.id_token.as_deref());
    Ok(TokenSet { account_id: set.account_id.or(issued.organization.map(|o| o.uuid)), ..set })
}
