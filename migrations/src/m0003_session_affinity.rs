//! Session affinity pins survive a restart (SPEC §R2.2). A session is
//! stored by the SHA-256 of its key only, never by the key.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum SessionAccountAffinity {
    Table,
    /// Hex SHA-256 of the session key.
    Key,
    Provider,
    ConnectionId,
    CreatedAt,
    LastUsedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use SessionAccountAffinity as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::Key))
                    .col(string(T::Provider))
                    .col(string(T::ConnectionId))
                    .col(big_integer(T::CreatedAt))
                    .col(big_integer(T::LastUsedAt))
                    .col(big_integer(T::ExpiresAt))
                    .primary_key(Index::create().col(T::Key).col(T::Provider))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(SessionAccountAffinity::Table).to_owned()).await
    }
}
