//! Provider connections (one account / key of one provider) as the API
//! accepts and returns them. Credentials are write-only: requests may carry
//! `apiKey`/`accessToken`, responses only ever carry `apiKeyMasked`.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

use super::validation::{Errors, FieldError};

/// How a connection authenticates upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthType {
    Apikey,
    Oauth,
    Local,
}

impl AuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apikey => "apikey",
            Self::Oauth => "oauth",
            Self::Local => "local",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "apikey" => Some(Self::Apikey),
            "oauth" => Some(Self::Oauth),
            "local" => Some(Self::Local),
            _ => None,
        }
    }
}

/// Per-connection limits that win over the global settings (§R5, §R4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimitOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<u32>,
    /// Exact upstream model id → concurrent request cap.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_concurrency: BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_max_wait_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    /// Accepted only to be refused by name: nothing here counts tokens
    /// before a request goes out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_time_between_requests_ms: Option<u64>,
}

impl RateLimitOverrides {
    fn validate(&self, errors: &mut Errors) {
        if self.max_concurrent == Some(0) {
            errors.push("rateLimitOverrides.maxConcurrent", "must be at least 1");
        }
        for (model, cap) in &self.model_concurrency {
            if model.trim().is_empty() {
                errors.push("rateLimitOverrides.modelConcurrency", "model ids must not be empty");
            }
            if *cap == 0 {
                errors.push(&format!("rateLimitOverrides.modelConcurrency.{model}"), "must be a positive integer");
            }
        }
        if self.rpm == Some(0) {
            errors.push("rateLimitOverrides.rpm", "must be at least 1");
        }
        if self.tpm.is_some() {
            errors.push(
                "rateLimitOverrides.tpm",
                "is not enforced by this gateway (it does not count tokens before a request goes out); \
                 limit the connection with rpm, minTimeBetweenRequestsMs or maxConcurrent",
            );
        }
    }
}

/// The dashboard's text for `modelConcurrency`: one `model=cap` per line.
pub fn format_model_concurrency(caps: &BTreeMap<String, u32>) -> String {
    caps.iter().map(|(model, cap)| format!("{model}={cap}")).collect::<Vec<_>>().join("\n")
}

/// Reads the dashboard's `modelConcurrency` text (one `model=cap` per
/// line, blank lines ignored); the same check runs in the browser as the
/// operator types and on the server when the form is saved.
pub fn parse_model_concurrency(text: &str) -> Result<BTreeMap<String, u32>, FieldError> {
    let mut caps = BTreeMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let refuse = |why: &str| FieldError::new("modelConcurrency", format!("line {}: {why}", n + 1));
        let Some((model, cap)) = line.split_once('=') else {
            return Err(refuse("write model=limit, e.g. glm-5=1"));
        };
        let model = model.trim();
        if model.is_empty() || model.chars().any(char::is_whitespace) {
            return Err(refuse("the model id must be one word, e.g. glm-5=1"));
        }
        let cap = match cap.trim().parse::<u32>() {
            Ok(c) if c > 0 => c,
            _ => return Err(refuse(&format!("the limit of {model} must be a whole number of at least 1"))),
        };
        if caps.insert(model.to_owned(), cap).is_some() {
            return Err(refuse(&format!("{model} is listed twice")));
        }
    }
    Ok(caps)
}

/// Reads the dashboard's `maxConcurrent` text: empty is unlimited.
pub fn parse_max_concurrent(text: &str) -> Result<Option<u32>, FieldError> {
    match text.trim() {
        "" => Ok(None),
        t => match t.parse::<u32>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(FieldError::new("maxConcurrent", "must be a whole number of at least 1 (empty = unlimited)")),
        },
    }
}

/// `POST /api/providers` body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateConnection {
    pub provider: String,
    pub name: String,
    #[serde(default)]
    pub auth_type: Option<AuthType>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub access_token: Option<String>,
    /// A subscription's refresh token (`authType: "oauth"`), with which
    /// the gateway renews the access token before it expires.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// When the access token expires (epoch ms).
    #[serde(default)]
    pub expires_at: Option<i64>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub is_active: Option<bool>,
    #[serde(default)]
    pub max_concurrent: Option<u32>,
    #[serde(default)]
    pub rate_limit_overrides: Option<RateLimitOverrides>,
    #[serde(default)]
    pub provider_specific_data: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub disable_cooling: Option<bool>,
    /// A Claude subscription accepts the low-priority lane at its usage
    /// wall (SPEC §R2.1).
    #[serde(default)]
    pub low_priority_mode: Option<bool>,
    /// A Claude subscription claims its free limit reset at its usage wall.
    #[serde(default)]
    pub auto_limit_reset: Option<bool>,
}

/// Highest accepted `priority` (lower is tried first).
pub const MAX_PRIORITY: i64 = 100_000;
/// Longest accepted credential, in bytes.
pub const MAX_CREDENTIAL_LEN: usize = 16 * 1024;

impl CreateConnection {
    /// The body with `providerSpecificData` read into the connection's own
    /// fields (see [`PROVIDER_SPECIFIC_KEYS`]).
    pub fn unfolded(mut self) -> Result<Self, Vec<FieldError>> {
        if let Some(data) = &self.provider_specific_data {
            let given = self.rate_limit_overrides.is_some();
            let flags = [
                ("disableCooling", &mut self.disable_cooling),
                ("lowPriorityMode", &mut self.low_priority_mode),
                ("autoLimitReset", &mut self.auto_limit_reset),
            ];
            if let Some(o) = unfold_specific_data(data, flags, given)? {
                self.rate_limit_overrides = Some(o);
            }
        }
        Ok(self)
    }

    /// Field checks that need no catalog; the server adds the provider check.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        e.text("provider", &self.provider, 64);
        e.text("name", &self.name, 100);
        check_common(
            &mut e,
            &CommonFields {
                api_key: self.api_key.as_deref(),
                access_token: self.access_token.as_deref(),
                base_url: self.base_url.as_deref(),
                priority: self.priority,
                max_concurrent: self.max_concurrent.map(Some),
                rate_limit_overrides: self.rate_limit_overrides.as_ref(),
                refresh_token: self.refresh_token.as_deref(),
                expires_at: self.expires_at,
                auth_type: self.auth_type,
            },
        );
        e.into_result()
    }
}

/// The `providerSpecificData` keys read here: the original kept a
/// connection's cooling switch, limits and usage-wall opt-ins in that
/// object, so a body written for it keeps working. Any other key is
/// refused by name.
const PROVIDER_SPECIFIC_KEYS: [&str; 4] = ["disableCooling", "rateLimitOverrides", "lowPriorityMode", "autoLimitReset"];

/// `providerSpecificData` taken apart into the connection's own fields
/// (its switches, named in `flags`, and `rateLimitOverrides`); a key given
/// both ways, of the wrong type, or read by nothing here is refused by name.
fn unfold_specific_data(
    data: &serde_json::Map<String, serde_json::Value>,
    mut flags: [(&str, &mut Option<bool>); 3],
    overrides_given: bool,
) -> Result<Option<RateLimitOverrides>, Vec<FieldError>> {
    let mut e = Errors::default();
    let mut overrides = None;
    for (key, value) in data {
        let field = format!("providerSpecificData.{key}");
        if let Some((name, flag)) = flags.iter_mut().find(|(name, _)| name == key) {
            match value.as_bool() {
                _ if flag.is_some() => e.push(&field, format!("is also given as {name}; send it once")),
                Some(b) => **flag = Some(b),
                None => e.push(&field, "must be true or false"),
            }
            continue;
        }
        match key.as_str() {
            "rateLimitOverrides" if overrides_given => {
                e.push(&field, "is also given as rateLimitOverrides; send it once")
            }
            "rateLimitOverrides" => match serde_json::from_value::<RateLimitOverrides>(value.clone()) {
                Ok(o) => overrides = Some(o),
                Err(err) => e.push(&field, err.to_string()),
            },
            _ => e.push(
                &field,
                format!(
                    "is not read by this gateway; providerSpecificData may hold only {}",
                    PROVIDER_SPECIFIC_KEYS.join(", ")
                ),
            ),
        }
    }
    e.into_result().map(|()| overrides)
}

/// A refresh token and an expiry belong to an OAuth access token, sent
/// together.
fn check_tokens(e: &mut Errors, f: &CommonFields<'_>) {
    if let Some(t) = f.refresh_token {
        check_credential(e, "refreshToken", t);
    }
    let tokens = f.refresh_token.is_some() || f.expires_at.is_some();
    if tokens && f.access_token.is_none() {
        e.push("accessToken", "is required with refreshToken or expiresAt");
    }
    if tokens && f.auth_type.is_some_and(|a| a != AuthType::Oauth) {
        e.push("authType", "must be \"oauth\" with refreshToken or expiresAt");
    }
    // Epoch milliseconds, from 2001 to 2286: a time in seconds is caught.
    if f.expires_at.is_some_and(|at| !(1_000_000_000_000..10_000_000_000_000).contains(&at)) {
        e.push("expiresAt", "must be a time in epoch milliseconds, e.g. 1767225600000 (not seconds)");
    }
}

/// `PUT /api/providers/{id}` body: every field optional; `null` clears the
/// nullable ones (`baseUrl`, `maxConcurrent`, `rateLimitOverrides`,
/// `providerSpecificData`). The provider of a connection never changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateConnection {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub auth_type: Option<AuthType>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub access_token: Option<String>,
    /// With a new `accessToken` of a subscription: its refresh token.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// With a new `accessToken` of a subscription: when it expires (epoch ms).
    #[serde(default)]
    pub expires_at: Option<i64>,
    #[serde(default, deserialize_with = "double_option")]
    pub base_url: Option<Option<String>>,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub is_active: Option<bool>,
    #[serde(default, deserialize_with = "double_option")]
    pub max_concurrent: Option<Option<u32>>,
    #[serde(default, deserialize_with = "double_option")]
    pub rate_limit_overrides: Option<Option<RateLimitOverrides>>,
    #[serde(default, deserialize_with = "double_option")]
    pub provider_specific_data: Option<Option<serde_json::Map<String, serde_json::Value>>>,
    #[serde(default)]
    pub disable_cooling: Option<bool>,
    #[serde(default)]
    pub low_priority_mode: Option<bool>,
    #[serde(default)]
    pub auto_limit_reset: Option<bool>,
}

impl UpdateConnection {
    /// The body with `providerSpecificData` read into the connection's own
    /// fields (see [`PROVIDER_SPECIFIC_KEYS`]).
    pub fn unfolded(mut self) -> Result<Self, Vec<FieldError>> {
        if let Some(Some(data)) = &self.provider_specific_data {
            let given = self.rate_limit_overrides.is_some();
            let flags = [
                ("disableCooling", &mut self.disable_cooling),
                ("lowPriorityMode", &mut self.low_priority_mode),
                ("autoLimitReset", &mut self.auto_limit_reset),
            ];
            if let Some(o) = unfold_specific_data(data, flags, given)? {
                self.rate_limit_overrides = Some(Some(o));
            }
        }
        Ok(self)
    }

    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        if let Some(name) = &self.name {
            e.text("name", name, 100);
        }
        check_common(
            &mut e,
            &CommonFields {
                api_key: self.api_key.as_deref(),
                access_token: self.access_token.as_deref(),
                base_url: self.base_url.as_ref().and_then(|b| b.as_deref()),
                priority: self.priority,
                max_concurrent: self.max_concurrent,
                rate_limit_overrides: self.rate_limit_overrides.as_ref().and_then(|r| r.as_ref()),
                refresh_token: self.refresh_token.as_deref(),
                expires_at: self.expires_at,
                auth_type: self.auth_type,
            },
        );
        e.into_result()
    }
}

/// The fields create and update share, borrowed for one validator.
struct CommonFields<'a> {
    api_key: Option<&'a str>,
    access_token: Option<&'a str>,
    base_url: Option<&'a str>,
    priority: Option<i32>,
    max_concurrent: Option<Option<u32>>,
    rate_limit_overrides: Option<&'a RateLimitOverrides>,
    refresh_token: Option<&'a str>,
    expires_at: Option<i64>,
    auth_type: Option<AuthType>,
}

/// A secret's shape: not empty, not huge, no control characters.
fn check_credential(e: &mut Errors, field: &str, v: &str) {
    if v.trim().is_empty() {
        e.push(field, "must not be empty");
    } else if v.len() > MAX_CREDENTIAL_LEN {
        e.push(field, format!("must be at most {MAX_CREDENTIAL_LEN} bytes"));
    } else if v.chars().any(|c| c.is_control()) {
        e.push(field, "must not contain control characters");
    }
}

fn check_common(e: &mut Errors, f: &CommonFields<'_>) {
    for (field, value) in [("apiKey", f.api_key), ("accessToken", f.access_token)] {
        if let Some(v) = value {
            check_credential(e, field, v);
        }
    }
    if let Some(url) = f.base_url {
        e.base_url("baseUrl", url);
    }
    if let Some(p) = f.priority {
        e.range("priority", i64::from(p), 0, MAX_PRIORITY);
    }
    if let Some(Some(0)) = f.max_concurrent {
        e.push("maxConcurrent", "must be at least 1 (omit it for unlimited)");
    }
    if let Some(r) = f.rate_limit_overrides {
        r.validate(e);
    }
    check_tokens(e, f);
}

/// Distinguishes "field absent" (`None`) from "field is null" (`Some(None)`).
fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

/// The live status badge of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    Active,
    Disabled,
    /// Its provider's breaker is OPEN: nothing of the provider is tried.
    BreakerOpen,
    CoolingDown,
    /// At least one of its models is locked out; the others serve.
    ModelLocked,
    Terminal,
}

impl ConnectionStatus {
    pub fn label(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Disabled => "disabled",
            Self::BreakerOpen => "breaker open",
            Self::CoolingDown => "cooling down",
            Self::ModelLocked => "model locked",
            Self::Terminal => "terminal",
        }
    }
}

/// A connection as every API response shows it — never the credential.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    pub id: String,
    pub provider: String,
    pub name: String,
    pub auth_type: AuthType,
    pub base_url: Option<String>,
    /// `…` + the last 4 characters of the credential, or `None` without one.
    pub api_key_masked: Option<String>,
    pub priority: i32,
    pub is_active: bool,
    pub max_concurrent: Option<u32>,
    pub rate_limit_overrides: Option<RateLimitOverrides>,
    pub rate_limit_protection: Option<bool>,
    pub disable_cooling: bool,
    pub provider_specific_data: Option<serde_json::Map<String, serde_json::Value>>,
    pub status: ConnectionStatus,
    /// How long the status lasts (cooling, breaker open, model locked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_remaining_ms: Option<u64>,
    pub test_status: Option<String>,
    pub last_error: Option<String>,
    pub last_error_type: Option<String>,
    /// Epoch milliseconds; in the past means eligible again.
    pub rate_limited_until: Option<i64>,
    pub backoff_level: i32,
    pub terminal_status: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `GET /api/providers` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectionList {
    pub connections: Vec<ConnectionView>,
    pub total: usize,
}

/// `POST /api/providers/{id}/test` answer: a live check of the credential.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionTestResult {
    /// The connection tested, by its name (set once the test ran).
    #[serde(default)]
    pub name: String,
    pub ok: bool,
    /// Upstream HTTP status; 0 when the request never got an answer.
    pub status: u16,
    pub latency_ms: u64,
    pub models: Vec<String>,
    pub error: Option<String>,
}

/// The masked form of a credential: `…` + its last 4 characters.
pub fn mask_secret(secret: &str) -> String {
    let tail: String = secret.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> CreateConnection {
        CreateConnection {
            provider: "openai".into(),
            name: "main".into(),
            api_key: Some("sk-test-1234".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_model_concurrency_text_reads_back_and_refuses_by_line() {
        let caps = parse_model_concurrency("glm-5=1\n\n glm-4.7 = 3 \n").unwrap();
        assert_eq!(format_model_concurrency(&caps), "glm-4.7=3\nglm-5=1");
        assert_eq!(parse_model_concurrency(&format_model_concurrency(&caps)).unwrap(), caps);
        for (text, says) in [
            ("glm-5", "line 1: write model=limit"),
            ("a=1\nglm-5=0", "line 2: the limit of glm-5 must be a whole number"),
            ("glm 5=1", "line 1: the model id must be one word"),
            ("a=1\na=2", "line 2: a is listed twice"),
            ("=2", "line 1: the model id"),
            ("a=-1", "line 1: the limit of a"),
        ] {
            let e = parse_model_concurrency(text).unwrap_err();
            assert_eq!(e.field, "modelConcurrency");
            assert!(e.message.starts_with(says), "{text}: {}", e.message);
        }
        assert_eq!(parse_max_concurrent(" ").unwrap(), None);
        assert_eq!(parse_max_concurrent("2").unwrap(), Some(2));
        assert!(parse_max_concurrent("0").is_err() && parse_max_concurrent("x").is_err());
    }

    #[test]
    fn valid_create_passes() {
        assert_eq!(valid().validate(), Ok(()));
    }

    #[test]
    fn create_reports_each_bad_field() {
        let bad = CreateConnection {
            name: " ".into(),
            base_url: Some("ftp://x".into()),
            priority: Some(-1),
            max_concurrent: Some(0),
            ..valid()
        };
        let fields: Vec<_> = bad.validate().unwrap_err().into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["name", "baseUrl", "priority", "maxConcurrent"]);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err =
            serde_json::from_str::<CreateConnection>(r#"{"provider":"openai","name":"x","apiKy":"k"}"#).unwrap_err();
        assert!(err.to_string().contains("apiKy"), "{err}");
    }

    #[test]
    fn update_distinguishes_null_from_absent() {
        let u: UpdateConnection = serde_json::from_str(r#"{"baseUrl":null}"#).unwrap();
        assert_eq!(u.base_url, Some(None));
        assert_eq!(u.max_concurrent, None);
    }

    #[test]
    fn model_concurrency_caps_must_be_positive() {
        let u: UpdateConnection =
            serde_json::from_str(r#"{"rateLimitOverrides":{"modelConcurrency":{"glm-5":0}}}"#).unwrap();
        let errs = u.validate().unwrap_err();
        assert_eq!(errs[0].field, "rateLimitOverrides.modelConcurrency.glm-5");
    }

    #[test]
    fn mask_keeps_only_last_four() {
        assert_eq!(mask_secret("sk-abcdef123456"), "…3456");
        assert_eq!(mask_secret("ab"), "…ab");
    }
}
