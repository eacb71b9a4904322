//! The token set a subscription connection stores, and what the gateway
//! reads from its tokens' claims. ChatGPT's tokens are JWTs: the account
//! the backend must be told (`chatgpt-account-id`) and the plan sit in the
//! claim `https://api.openai.com/auth`, the expiry in `exp`. Claims are
//! read, never verified: the tokens came from the issuer over TLS, or
//! from the operator, and only the issuer's backend judges them.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an OAuth connection stores (encrypted, like an API key).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// The account a token acts for: the ChatGPT account (workspace) of a
    /// Codex token, the organization of a Claude one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
}

/// Where ChatGPT's tokens carry the account.
const OPENAI_AUTH_CLAIM: &str = "https://api.openai.com/auth";

impl TokenSet {
    /// A set of tokens as given (pasted, imported or issued), with what
    /// the tokens' own claims add: the expiry when none was given, and
    /// the ChatGPT account from the `id_token` or the access token.
    pub fn given(
        access_token: String,
        refresh_token: Option<String>,
        expires_at: Option<i64>,
        id_token: Option<&str>,
    ) -> Self {
        let access = claims(&access_token);
        let id = id_token.and_then(claims);
        let account_id = [&id, &access]
            .into_iter()
            .flatten()
            .find_map(|c| c[OPENAI_AUTH_CLAIM]["chatgpt_account_id"].as_str().map(str::to_owned));
        let expires_at = expires_at.or_else(|| access.as_ref()?["exp"].as_i64().map(|s| s.saturating_mul(1000)));
        Self { access_token, refresh_token, expires_at, account_id }
    }

    /// A stored credential: the token set's JSON, or a bare access token
    /// (a connection saved with `accessToken` alone).
    pub fn read(stored: &str) -> Self {
        serde_json::from_str(stored).unwrap_or_else(|_| Self::given(stored.to_owned(), None, None, None))
    }

    /// The form it is stored in.
    pub fn stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The claims of a JWT (its middle part), unverified; `None` when `token`
/// is no JWT.
fn claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&raw).ok().filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &Value) -> String {
        let part = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!("{}.{}.sig", part(&serde_json::json!({"alg": "none"})), part(claims))
    }

    #[test]
    fn a_stored_credential_is_a_token_set_or_a_bare_access_token() {
        let set = TokenSet::given("at".into(), Some("rt".into()), Some(5), None);
        assert_eq!(TokenSet::read(&set.stored()), set);
        assert_eq!(set.stored(), r#"{"accessToken":"at","refreshToken":"rt","expiresAt":5}"#);
        let bare = TokenSet::read("sk-ant-oat01-abc");
        assert_eq!(bare.access_token, "sk-ant-oat01-abc");
        assert_eq!((bare.refresh_token, bare.expires_at, bare.account_id), (None, None, None));
    }

    #[test]
    fn a_chatgpt_token_names_its_account_and_its_expiry() {
        let auth = serde_json::json!({"chatgpt_account_id": "acct-1", "chatgpt_plan_type": "pro"});
        let access = jwt(&serde_json::json!({"exp": 1_900_000_000, OPENAI_AUTH_CLAIM: auth}));
        let set = TokenSet::given(access.clone(), None, None, None);
        assert_eq!((set.account_id.as_deref(), set.expires_at), (Some("acct-1"), Some(1_900_000_000_000)));
        // The id token's account wins; a given expiry wins over the claim.
        let id = jwt(&serde_json::json!({OPENAI_AUTH_CLAIM: {"chatgpt_account_id": "acct-2"}}));
        let set = TokenSet::given(access, None, Some(7), Some(&id));
        assert_eq!((set.account_id.as_deref(), set.expires_at), (Some("acct-2"), Some(7)));
        assert_eq!(TokenSet::given("a.b.c".into(), None, None, Some("not a jwt")).account_id, None);
    }
}
