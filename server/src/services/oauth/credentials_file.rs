//! The credentials files the CLIs write, read into a token set; each
//! missing or mistyped field is refused by its path in the file.

use app::types::subscription::ImportFormat;
use serde_json::Value;

use super::Browser;
use crate::{services::ServiceError, state::AppState, upstream::oauth::TokenSet};

/// The largest credentials file read from disk.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The credentials file `format`'s CLI wrote at its default path on the
/// gateway's machine, for a browser on that machine.
pub fn read_local(state: &AppState, format: ImportFormat, browser: &Browser) -> Result<Value, ServiceError> {
    let wrong = |why: String| ServiceError::field("fromThisMachine", why);
    if !browser.local {
        return Err(wrong(
            "only a browser on the gateway's own machine may import its files; paste the file's contents instead"
                .into(),
        ));
    }
    let shown = format!("~/{}", format.default_path());
    let home = state
        .config
        .home_dir
        .as_ref()
        .ok_or_else(|| wrong("the gateway runs without a home directory (HOME)".into()))?;
    let path = home.join(format.default_path());
    let size = std::fs::metadata(&path).map_err(|_| {
        wrong(format!("{shown} was not found on the gateway's machine: sign in with {} there first", format.cli()))
    })?;
    if size.len() > MAX_FILE_BYTES {
        return Err(wrong(format!("{shown} is larger than a credentials file")));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| wrong(format!("{shown} could not be read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| wrong(format!("{shown} is not JSON: {e}")))
}

/// Claude Code's `~/.claude/.credentials.json`: `claudeAiOauth` with
/// `accessToken`, `refreshToken` and `expiresAt` (epoch ms).
pub fn claude_code(file: &Value) -> Result<TokenSet, ServiceError> {
    let fields = Fields { file, object: "claudeAiOauth", what: "Claude Code's ~/.claude/.credentials.json" };
    let access_token = fields.required("accessToken")?;
    let refresh_token = fields.optional("refreshToken")?;
    let expires_at = match &file["claudeAiOauth"]["expiresAt"] {
        Value::Null => None,
        v => Some(v.as_i64().ok_or_else(|| fields.wrong("expiresAt", "must be epoch milliseconds"))?),
    };
    Ok(TokenSet::given(access_token, refresh_token, expires_at, None))
}

/// Codex's `~/.codex/auth.json`: `tokens` with `access_token`,
/// `refresh_token`, `id_token` and `account_id` (the access token's
/// claims give its expiry).
pub fn codex(file: &Value) -> Result<TokenSet, ServiceError> {
    if file["tokens"].is_null() && file["OPENAI_API_KEY"].is_string() {
        return Err(ServiceError::field(
            "credentials.tokens",
            "is missing: this file holds an API key, not a ChatGPT sign-in; add the key as an openai connection instead",
        ));
    }
    let fields = Fields { file, object: "tokens", what: "Codex's ~/.codex/auth.json" };
    let access_token = fields.required("access_token")?;
    let refresh_token = fields.optional("refresh_token")?;
    let id_token = fields.optional("id_token")?;
    let mut tokens = TokenSet::given(access_token, refresh_token, None, id_token.as_deref());
    if let Some(account_id) = fields.optional("account_id")? {
        tokens.account_id = Some(account_id);
    }
    if tokens.account_id.is_none() {
        return Err(fields.wrong(
            "account_id",
            "is missing and the tokens do not name the ChatGPT account; sign in with `codex login` again and import the new file",
        ));
    }
    Ok(tokens)
}

/// Gemini CLI's `~/.gemini/oauth_creds.json`: `access_token`,
/// `refresh_token` and `expiry_date` (epoch ms) at the top level. The
/// account's Code Assist project is found on its first request.
pub fn gemini_cli(file: &Value) -> Result<TokenSet, ServiceError> {
    let fields = Fields { file, object: "", what: "Gemini CLI's ~/.gemini/oauth_creds.json" };
    let access_token = fields.required("access_token")?;
    let refresh_token = fields.optional("refresh_token")?;
    let expires_at = match &file["expiry_date"] {
        Value::Null => None,
        v => Some(v.as_i64().ok_or_else(|| fields.wrong("expiry_date", "must be epoch milliseconds"))?),
    };
    Ok(TokenSet::given(access_token, refresh_token, expires_at, None))
}

/// The string fields of one object of a credentials file (`object` empty:
/// the file's top level).
struct Fields<'a> {
    file: &'a Value,
    object: &'static str,
    /// The file, for messages.
    what: &'static str,
}

impl Fields<'_> {
    fn wrong(&self, name: &str, why: &str) -> ServiceError {
        match self.object {
            "" => ServiceError::field(&format!("credentials.{name}"), why),
            object => ServiceError::field(&format!("credentials.{object}.{name}"), why),
        }
    }

    fn required(&self, name: &str) -> Result<String, ServiceError> {
        self.optional(name)?.ok_or_else(|| {
            let why = match self.object {
                "" => format!("is missing: send the JSON of {}", self.what),
                object => format!("is missing: send the JSON of {}, which holds a {object} object", self.what),
            };
            self.wrong(name, &why)
        })
    }

    fn optional(&self, name: &str) -> Result<Option<String>, ServiceError> {
        let object = if self.object.is_empty() { self.file } else { &self.file[self.object] };
        match &object[name] {
            Value::Null => Ok(None),
            Value::String(s) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
            _ => Err(self.wrong(name, "must be a non-empty string")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(e: ServiceError) -> String {
        match e {
            ServiceError::Invalid(errors) => errors.into_iter().map(|e| e.field).collect::<Vec<_>>().join(","),
            other => panic!("not a field error: {other}"),
        }
    }

    #[test]
    fn each_file_is_read_and_each_bad_field_named() {
        let claude = json!({"claudeAiOauth": {"accessToken": "at", "refreshToken": "rt", "expiresAt": 5}});
        let t = claude_code(&claude).ok();
        assert_eq!(
            t.map(|t| (t.access_token, t.refresh_token, t.expires_at)),
            Some(("at".into(), Some("rt".into()), Some(5)))
        );
        let bad = json!({"claudeAiOauth": {"accessToken": "at", "expiresAt": "soon"}});
        assert_eq!(claude_code(&bad).map_err(field_of).err().as_deref(), Some("credentials.claudeAiOauth.expiresAt"));
        let codex_file = json!({"tokens": {"access_token": "at", "refresh_token": "rt", "account_id": "acct"}});
        assert_eq!(codex(&codex_file).ok().and_then(|t| t.account_id).as_deref(), Some("acct"));
        let no_account = json!({"tokens": {"access_token": "at"}});
        assert_eq!(codex(&no_account).map_err(field_of).err().as_deref(), Some("credentials.tokens.account_id"));
        let api_key = json!({"OPENAI_API_KEY": "sk-1", "tokens": null});
        assert_eq!(codex(&api_key).map_err(field_of).err().as_deref(), Some("credentials.tokens"));
        assert_eq!(codex(&json!({})).map_err(field_of).err().as_deref(), Some("credentials.tokens.access_token"));
        let gemini = json!({"access_token": "ya29.a", "refresh_token": "1//r", "expiry_date": 7, "scope": "s"});
        let t = gemini_cli(&gemini).ok().map(|t| (t.access_token, t.refresh_token, t.expires_at));
        assert_eq!(t, Some(("ya29.a".into(), Some("1//r".into()), Some(7))));
        assert_eq!(
            gemini_cli(&json!({"token": "x"})).map_err(field_of).err().as_deref(),
            Some("credentials.access_token")
        );
        let bad = json!({"access_token": "a", "expiry_date": "soon"});
        assert_eq!(gemini_cli(&bad).map_err(field_of).err().as_deref(), Some("credentials.expiry_date"));
    }
}
