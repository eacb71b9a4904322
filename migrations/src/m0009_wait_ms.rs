//! The time the gateway itself held a request before an attempt (request
//! queue, concurrency slot, cooldown and combo waits), per log row.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProxyLogs {
    Table,
    WaitMs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProxyLogs as T;
        manager
            .alter_table(Table::alter().table(T::Table).add_column(big_integer(T::WaitMs).default(0)).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProxyLogs as T;
        manager.alter_table(Table::alter().table(T::Table).drop_column(T::WaitMs).to_owned()).await
    }
}
