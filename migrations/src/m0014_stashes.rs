//! Values kept a few minutes for one later request, in the database so
//! that any instance (and any worker) can take them: a new API key shown
//! once after a plain form post, a subscription sign-in waiting for its
//! code. Each value is sealed with the gateway's secret key.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Stashes {
    Table,
    Kind,
    Id,
    Sealed,
    PutAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use Stashes as T;
        manager
            .create_table(
                Table::create()
                    .table(T::Table)
                    .if_not_exists()
                    .col(string(T::Kind))
                    .col(string(T::Id))
                    .col(text(T::Sealed))
                    .col(big_integer(T::PutAt))
                    .primary_key(Index::create().col(T::Kind).col(T::Id))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Stashes::Table).to_owned()).await
    }
}
