use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_connections")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub provider: String,
    pub name: String,
    pub auth_type: String,
    pub base_url: Option<String>,
    /// `v1:` + base64(nonce ‖ AES-256-GCM ciphertext); see `auth::secrets`.
    pub credential_enc: Option<String>,
    /// The masked form shown by the API (`…abcd`).
    pub credential_suffix: Option<String>,
    pub priority: i32,
    pub is_active: bool,
    pub max_concurrent: Option<i32>,
    /// JSON of `app::types::RateLimitOverrides`.
    pub rate_limit_overrides: Option<String>,
    pub rate_limit_protection: Option<bool>,
    pub disable_cooling: bool,
    /// JSON object.
    pub provider_specific_data: Option<String>,
    pub rate_limited_until: Option<i64>,
    pub test_status: Option<String>,
    pub last_error: Option<String>,
    pub last_error_type: Option<String>,
    pub error_code: Option<String>,
    pub backoff_level: i32,
    pub terminal_status: Option<String>,
    pub expired_retry_count: i32,
    pub rejected_streak: i32,
    /// JSON list of the model ids the last passing test listed.
    pub discovered_models: Option<String>,
    /// JSON: what the provider last stated of a subscription's plan windows.
    pub plan_usage: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ActiveModelBehavior for ActiveModel {}
