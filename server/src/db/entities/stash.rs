use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "stashes")]
pub struct Model {
    /// What the value is (`new-key`, `sign-in`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The value as JSON, sealed with the gateway's secret key.
    pub sealed: String,
    pub put_at: i64,
}

impl ActiveModelBehavior for ActiveModel {}
