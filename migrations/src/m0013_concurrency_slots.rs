//! Concurrency slots shared by the instances on one Postgres (SPEC §R4
//! across instances): one row per slot of a limited gate, held by the
//! instance whose request runs in it. A slot whose instance stopped
//! sending heartbeats is free again, so a killed instance's slots come
//! back within seconds. A single instance (SQLite) counts in memory and
//! leaves this table empty.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ConcurrencySlots {
    Table,
    Gate,
    Slot,
    Instance,
    TakenAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ConcurrencySlots as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::Gate))
                    .col(integer(T::Slot))
                    .col(string_null(T::Instance))
                    .col(big_integer_null(T::TakenAt))
                    .primary_key(Index::create().col(T::Gate).col(T::Slot))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ConcurrencySlots::Table).to_owned()).await
    }
}
