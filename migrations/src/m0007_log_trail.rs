//! The request log answers for a request as a whole: every row of one
//! client request is found by its id (the attempt trail), and a row says
//! whether the gateway refused the request itself, without calling any
//! upstream (breaker open, every connection cooling, bad key, …).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProxyLogs {
    Table,
    RequestId,
    Refused,
}

const INDEX: &str = "idx_proxy_logs_request_id";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProxyLogs as T;
        manager
            .alter_table(Table::alter().table(T::Table).add_column(boolean(T::Refused).default(false)).to_owned())
            .await?;
        manager
            .create_index(Index::create().name(INDEX).table(T::Table).col(T::RequestId).if_not_exists().to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ProxyLogs as T;
        manager.drop_index(Index::drop().name(INDEX).table(T::Table).to_owned()).await?;
        manager.alter_table(Table::alter().table(T::Table).drop_column(T::Refused).to_owned()).await
    }
}
