//! Dashboard sessions, by the SHA-256 of their cookie token only, so a
//! restart signs nobody out and a leaked database holds no usable token.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DashboardSessions {
    Table,
    TokenHash,
    CreatedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use DashboardSessions as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::TokenHash).primary_key())
                    .col(big_integer(T::CreatedAt))
                    .col(big_integer(T::ExpiresAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(DashboardSessions::Table).to_owned()).await
    }
}
