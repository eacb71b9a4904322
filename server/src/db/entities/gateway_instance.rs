use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gateway_instances")]
pub struct Model {
    /// The instance's random name on the change feed.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub version: String,
    pub started_at: i64,
    pub last_seen_at: i64,
    /// Whether it had read what the others changed at its last heartbeat.
    pub caught_up: bool,
}

impl ActiveModelBehavior for ActiveModel {}
