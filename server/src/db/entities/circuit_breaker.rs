use sea_orm::entity::prelude::*;

#[sea_orm::model]
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "domain_circuit_breakers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub provider: String,
    /// `CLOSED` | `DEGRADED` | `OPEN` | `HALF_OPEN`.
    pub state: String,
    pub failure_count: i32,
    pub last_failure_at: Option<i64>,
    /// `rate_limit` | `quota_exhausted`.
    pub last_failure_kind: Option<String>,
    pub open_cycles: i32,
    pub updated_at: i64,
}

impl ActiveModelBehavior for ActiveModel {}
