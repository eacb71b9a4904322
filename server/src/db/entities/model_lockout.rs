use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "model_lockouts")]
pub struct Model {
    /// The engine's key of the lock (provider, connection, model scope).
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    pub provider: String,
    pub connection_id: String,
    pub model: String,
    /// The classifier's reason, as `ErrorReason::as_str` spells it.
    pub reason: String,
    pub until: i64,
    pub failure_count: i64,
    pub last_failure_at: i64,
    pub last_cooldown_ms: i64,
}

impl ActiveModelBehavior for ActiveModel {}
