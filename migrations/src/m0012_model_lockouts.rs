//! Model lockouts (SPEC §R3), stored behind the requests on a shared
//! database only, so they reach the other instances (a single instance
//! keeps them in memory and loses them on restart). One row per lock,
//! under the engine's key (provider, connection and model scope).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ModelLockouts {
    Table,
    Key,
    Provider,
    ConnectionId,
    Model,
    Reason,
    Until,
    FailureCount,
    LastFailureAt,
    LastCooldownMs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ModelLockouts as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::Key).primary_key())
                    .col(string(T::Provider))
                    .col(string(T::ConnectionId))
                    .col(string(T::Model))
                    .col(string(T::Reason))
                    .col(big_integer(T::Until))
                    .col(big_integer(T::FailureCount))
                    .col(big_integer(T::LastFailureAt))
                    .col(big_integer(T::LastCooldownMs))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_model_lockouts_connection")
                    .table(T::Table)
                    .col(T::ConnectionId)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ModelLockouts::Table).to_owned()).await
    }
}
