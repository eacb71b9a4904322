//! The client key a logged request came with, so usage can be told per
//! key (`GET /api/usage?groupBy=key`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProxyLogs {
    Table,
    KeyId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProxyLogs as T;
        manager.alter_table(Table::alter().table(T::Table).add_column(text_null(T::KeyId)).to_owned()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProxyLogs as T;
        manager.alter_table(Table::alter().table(T::Table).drop_column(T::KeyId).to_owned()).await
    }
}
