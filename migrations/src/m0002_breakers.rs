//! Provider circuit breakers survive a restart (SPEC §R1): an open breaker
//! stays open.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DomainCircuitBreakers {
    Table,
    Provider,
    State,
    FailureCount,
    LastFailureAt,
    LastFailureKind,
    OpenCycles,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DomainCircuitBreakers::Table)
                    .if_not_exists()
                    .col(string(DomainCircuitBreakers::Provider).primary_key())
                    .col(string(DomainCircuitBreakers::State))
                    .col(integer(DomainCircuitBreakers::FailureCount))
                    .col(big_integer_null(DomainCircuitBreakers::LastFailureAt))
                    .col(string_null(DomainCircuitBreakers::LastFailureKind))
                    .col(integer(DomainCircuitBreakers::OpenCycles))
                    .col(big_integer(DomainCircuitBreakers::UpdatedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(DomainCircuitBreakers::Table).to_owned()).await
    }
}
