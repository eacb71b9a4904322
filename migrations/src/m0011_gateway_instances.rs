//! One row per gateway instance on a shared database, written by the
//! instance every few seconds (its heartbeat), so Health lists every
//! instance, its version and how long ago it was last heard.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum GatewayInstances {
    Table,
    Id,
    Version,
    StartedAt,
    LastSeenAt,
    CaughtUp,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use GatewayInstances as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::Id).primary_key())
                    .col(string(T::Version))
                    .col(big_integer(T::StartedAt))
                    .col(big_integer(T::LastSeenAt))
                    .col(boolean(T::CaughtUp))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(GatewayInstances::Table).to_owned()).await
    }
}
