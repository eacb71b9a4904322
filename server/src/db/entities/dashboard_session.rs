use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dashboard_sessions")]
pub struct Model {
    /// Hex SHA-256 of the cookie token.
    #[sea_orm(primary_key, auto_increment = false)]
    pub token_hash: String,
    pub created_at: i64,
    pub expires_at: i64,
}

impl ActiveModelBehavior for ActiveModel {}
