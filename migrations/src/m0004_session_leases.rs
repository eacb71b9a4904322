//! Exclusive session leases (SPEC §R2.3). A lease is stored by the SHA-256
//! of its owner token only. `active_owner` and `active_connection` hold the
//! owner hash and the connection while the lease is active and are NULL
//! after it: their UNIQUE constraints make "one active lease per owner"
//! and "one active lease per connection" database facts, so several
//! gateway instances sharing the database cannot both hand one out.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum SessionLeases {
    Table,
    Id,
    OwnerHash,
    KeyId,
    Provider,
    ConnectionId,
    Generation,
    State,
    ActiveOwner,
    ActiveConnection,
    CreatedAt,
    ExpiresAt,
    ReleasedAt,
    ReleaseReason,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use SessionLeases as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::Id).primary_key())
                    .col(string(T::OwnerHash))
                    .col(string(T::KeyId))
                    .col(string(T::Provider))
                    .col(string(T::ConnectionId))
                    .col(big_integer(T::Generation))
                    .col(string(T::State))
                    .col(string_null(T::ActiveOwner).unique_key())
                    .col(string_null(T::ActiveConnection).unique_key())
                    .col(big_integer(T::CreatedAt))
                    .col(big_integer(T::ExpiresAt))
                    .col(big_integer_null(T::ReleasedAt))
                    .col(string_null(T::ReleaseReason))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(Index::create().name("idx_session_leases_owner").table(T::Table).col(T::OwnerHash).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(SessionLeases::Table).to_owned()).await
    }
}
