use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "model_aliases")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub alias: String,
    /// `provider/model` or a combo name.
    pub target: String,
    pub created_at: i64,
}

impl ActiveModelBehavior for ActiveModel {}
