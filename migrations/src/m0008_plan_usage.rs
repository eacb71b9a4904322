//! What a subscription's provider last stated of its plan windows (JSON),
//! so the Providers bars and the quota strategies survive a restart.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderConnections {
    Table,
    PlanUsage,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProviderConnections as T;
        manager.alter_table(Table::alter().table(T::Table).add_column(text_null(T::PlanUsage)).to_owned()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProviderConnections as T;
        manager.alter_table(Table::alter().table(T::Table).drop_column(T::PlanUsage).to_owned()).await
    }
}
