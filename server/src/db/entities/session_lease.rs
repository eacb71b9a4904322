use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "session_leases")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// Hex SHA-256 of the owner token.
    pub owner_hash: String,
    pub key_id: String,
    pub provider: String,
    pub connection_id: String,
    pub generation: i64,
    /// `ACTIVE`, `RELEASED` or `EXPIRED`.
    pub state: String,
    /// The owner hash while active (unique), else NULL.
    #[sea_orm(unique)]
    pub active_owner: Option<String>,
    /// The connection while active (unique), else NULL.
    #[sea_orm(unique)]
    pub active_connection: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub released_at: Option<i64>,
    pub release_reason: Option<String>,
}

impl ActiveModelBehavior for ActiveModel {}
