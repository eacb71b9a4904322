use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub name: String,
    /// Hex SHA-256 of the key; the key itself is never stored.
    #[sea_orm(unique)]
    pub key_hash: String,
    pub key_prefix: String,
    /// JSON array of scope names.
    pub scopes: String,
    /// JSON array of connection ids, or NULL for any.
    pub allowed_connections: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

impl ActiveModelBehavior for ActiveModel {}
