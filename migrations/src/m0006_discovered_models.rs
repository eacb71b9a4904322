//! The model ids a connection's last passing test listed, so `/v1/models`
//! can name the models of a custom (`openai-compatible`) upstream.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderConnections {
    Table,
    DiscoveredModels,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProviderConnections as T;
        manager.alter_table(Table::alter().table(T::Table).add_column(text_null(T::DiscoveredModels)).to_owned()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProviderConnections as T;
        manager.alter_table(Table::alter().table(T::Table).drop_column(T::DiscoveredModels).to_owned()).await
    }
}
