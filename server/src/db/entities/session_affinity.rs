use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "session_account_affinity")]
pub struct Model {
    /// Hex SHA-256 of the session key.
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub provider: String,
    pub connection_id: String,
    pub created_at: i64,
    pub last_used_at: i64,
    pub expires_at: i64,
}

impl ActiveModelBehavior for ActiveModel {}
