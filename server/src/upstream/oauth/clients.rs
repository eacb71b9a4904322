//! Each subscription provider's public OAuth client, as its own CLI uses
//! it (Claude Code's, the Codex CLI's, the Gemini CLI's), and the sign-in
//! URL with PKCE.

use http::{HeaderMap, HeaderValue};

use super::TokenSet;

/// How a token endpoint wants its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenBody {
    /// JSON; a code exchange carries the sign-in's `state` (Anthropic).
    Json,
    /// A code exchange is form-encoded, a refresh is JSON (OpenAI).
    FormExchange,
    /// Both are form-encoded and carry the client's secret (Google).
    Form,
}

/// A provider's public OAuth client.
#[derive(Debug)]
pub struct OauthClient {
    pub provider: &'static str,
    pub client_id: &'static str,
    /// An installed application's secret, which its CLI publishes (Google's
    /// token endpoint wants it; it guards nothing).
    pub client_secret: Option<&'static str>,
    /// Where tokens are issued and refreshed, unless
    /// `OMNIROUTE_OAUTH_TOKEN_URL_<PROVIDER>` says otherwise.
    pub token_url: &'static str,
    /// The page where the user signs in.
    pub authorize_url: &'static str,
    /// Where that page sends the code (Claude's shows it to copy; Codex's
    /// is the CLI's local listener, whose URL the user pastes back).
    pub redirect_uri: &'static str,
    pub scopes: &'static str,
    /// The sign-in URL's own parameters beyond OAuth's.
    pub sign_in_params: &'static [(&'static str, &'static str)],
    pub token_body: TokenBody,
    /// The scope a refresh asks for, where the issuer wants one.
    pub refresh_scope: Option<&'static str>,
}

/// Claude Code's client (Claude Pro/Max subscriptions).
pub const CLAUDE: OauthClient = OauthClient {
    provider: "claude",
    client_id: "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
    client_secret: None,
    token_url: "https://console.anthropic.com/v1/oauth/token",
    authorize_url: "https://claude.ai/oauth/authorize",
    redirect_uri: "https://console.anthropic.com/oauth/code/callback",
    scopes: "org:create_api_key user:profile user:inference",
    sign_in_params: &[("code", "true")],
    token_body: TokenBody::Json,
    refresh_scope: None,
};

/// The Codex CLI's client (ChatGPT Plus/Pro/Team subscriptions).
pub const CODEX: OauthClient = OauthClient {
    provider: "codex",
    client_id: "app_EMoamEEZ73f0CkXaXp7hrann",
    client_secret: None,
    token_url: "https://auth.openai.com/oauth/token",
    authorize_url: "https://auth.openai.com/oauth/authorize",
    redirect_uri: "http://localhost:1455/auth/callback",
    scopes: "openid profile email offline_access",
    sign_in_params: &[
        ("id_token_add_organizations", "true"),
        ("codex_cli_simplified_flow", "true"),
        ("originator", CODEX_ORIGINATOR),
    ],
    token_body: TokenBody::FormExchange,
    refresh_scope: Some("openid profile email"),
};

/// The Gemini CLI's client (a Google account's Gemini Code Assist, free
/// or paid tier). Its sign-in page shows the code to paste back.
pub const GEMINI_CLI: OauthClient = OauthClient {
    provider: "gemini-cli",
    client_id: "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com",
    client_secret: Some("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"),
    token_url: "https://oauth2.googleapis.com/token",
    authorize_url: "https://accounts.google.com/o/oauth2/v2/auth",
    redirect_uri: "https://codeassist.google.com/authcode",
    scopes: "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
    sign_in_params: &[("access_type", "offline")],
    token_body: TokenBody::Form,
    refresh_scope: None,
};

/// How the Codex CLI names itself to the ChatGPT backend.
const CODEX_ORIGINATOR: &str = "codex_cli_rs";

/// The OAuth client of `provider`, when it is a subscription provider.
pub fn client(provider: &str) -> Option<&'static OauthClient> {
    [&CLAUDE, &CODEX, &GEMINI_CLI].into_iter().find(|c| c.provider == provider)
}

/// The providers a user can sign in to, for messages.
pub fn providers() -> String {
    [&CLAUDE, &CODEX, &GEMINI_CLI].map(|c| c.provider).join(", ")
}

/// The headers a subscription's backend wants beside the bearer token:
/// for Codex, the account the token acts for and the client's identity.
pub fn backend_headers(provider: &str, tokens: &TokenSet) -> HeaderMap {
    let mut h = HeaderMap::new();
    if provider == CODEX.provider {
        h.insert("originator", HeaderValue::from_static(CODEX_ORIGINATOR));
        h.insert("openai-beta", HeaderValue::from_static("responses=experimental"));
        if let Some(id) = tokens.account_id.as_deref().and_then(|id| HeaderValue::from_str(id).ok()) {
            h.insert("chatgpt-account-id", id);
        }
    }
    h
}

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
        let oauth = [
            ("client_id", self.client_id),
            ("response_type", "code"),
            ("redirect_uri", self.redirect_uri),
            ("scope", self.scopes),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("state", state),
        ];
        let query = oauth.iter().chain(self.sign_in_params).map(|(k, v)| format!("{k}={}", percent_encode(v)));
        format!("{}?{}", self.authorize_url, query.collect::<Vec<_>>().join("&"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_in_url_carries_the_client_the_challenge_and_the_state() {
        let url = CLAUDE.authorize_url("st-1", "ch-1");
        assert_eq!(
            url,
            "https://claude.ai/oauth/authorize?client_id=9d1c250a-e61b-44d9-88ed-5944d1962f5e&response_type=code&redirect_uri=https%3A%2F%2Fconsole.anthropic.com%2Foauth%2Fcode%2Fcallback&scope=org%3Acreate_api_key%20user%3Aprofile%20user%3Ainference&code_challenge=ch-1&code_challenge_method=S256&state=st-1&code=true"
        );
        let url = CODEX.authorize_url("st-2", "ch-2");
        assert_eq!(
            url,
            "https://auth.openai.com/oauth/authorize?client_id=app_EMoamEEZ73f0CkXaXp7hrann&response_type=code&redirect_uri=http%3A%2F%2Flocalhost%3A1455%2Fauth%2Fcallback&scope=openid%20profile%20email%20offline_access&code_challenge=ch-2&code_challenge_method=S256&state=st-2&id_token_add_organizations=true&codex_cli_simplified_flow=true&originator=codex_cli_rs"
        );
        // RFC 7636 appendix B.
        let pkce = Pkce::of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(pkce.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn a_codex_token_tells_the_backend_its_account() {
        let tokens = TokenSet { account_id: Some("acct-1".into()), ..TokenSet::default() };
        let h = backend_headers("codex", &tokens);
        assert_eq!(
            (h["chatgpt-account-id"].to_str().ok(), h["originator"].to_str().ok()),
            (Some("acct-1"), Some("codex_cli_rs"))
        );
        assert!(backend_headers("claude", &tokens).is_empty());
    }
}
