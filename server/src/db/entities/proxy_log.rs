use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, Default, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proxy_logs")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub created_at: i64,
    pub request_id: String,
    pub endpoint: String,
    pub provider: String,
    pub connection_id: Option<String>,
    pub model: String,
    pub status: i32,
    pub latency_ms: i64,
    pub ttfb_ms: Option<i64>,
    pub stream: bool,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub cached_tokens: Option<i64>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub egress_ip: Option<String>,
    /// The gateway answered without calling any upstream.
    pub refused: bool,
    /// How long the gateway itself held the request before this row's
    /// attempt (queue, concurrency slot, cooldown and combo waits).
    pub wait_ms: i64,
    /// The client key the request came with (`None`: no key, or refused
    /// before its key was read).
    pub key_id: Option<String>,
}

impl ActiveModelBehavior for ActiveModel {}
