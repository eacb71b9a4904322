//! Foundation tables: connections, client API keys, settings, combos,
//! aliases and the per-attempt request log.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderConnections {
    Table,
    Id,
    Provider,
    Name,
    AuthType,
    BaseUrl,
    CredentialEnc,
    CredentialSuffix,
    Priority,
    IsActive,
    MaxConcurrent,
    RateLimitOverrides,
    RateLimitProtection,
    DisableCooling,
    ProviderSpecificData,
    RateLimitedUntil,
    TestStatus,
    LastError,
    LastErrorType,
    ErrorCode,
    BackoffLevel,
    TerminalStatus,
    ExpiredRetryCount,
    RejectedStreak,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    Name,
    KeyHash,
    KeyPrefix,
    Scopes,
    AllowedConnections,
    CreatedAt,
    LastUsedAt,
}

#[derive(DeriveIden)]
enum KeyValue {
    Table,
    Key,
    Value,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Combos {
    Table,
    Name,
    Strategy,
    Targets,
    Config,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ModelAliases {
    Table,
    Alias,
    Target,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ProxyLogs {
    Table,
    Id,
    CreatedAt,
    RequestId,
    Endpoint,
    Provider,
    ConnectionId,
    Model,
    Status,
    LatencyMs,
    TtfbMs,
    Stream,
    PromptTokens,
    CompletionTokens,
    CachedTokens,
    ErrorKind,
    ErrorMessage,
    EgressIp,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProviderConnections::Table)
                    .if_not_exists()
                    .col(string(ProviderConnections::Id).primary_key())
                    .col(string(ProviderConnections::Provider))
                    .col(string(ProviderConnections::Name))
                    .col(string(ProviderConnections::AuthType))
                    .col(text_null(ProviderConnections::BaseUrl))
                    .col(text_null(ProviderConnections::CredentialEnc))
                    .col(string_null(ProviderConnections::CredentialSuffix))
                    .col(integer(ProviderConnections::Priority).default(0))
                    .col(boolean(ProviderConnections::IsActive).default(true))
                    .col(integer_null(ProviderConnections::MaxConcurrent))
                    .col(text_null(ProviderConnections::RateLimitOverrides))
                    .col(boolean_null(ProviderConnections::RateLimitProtection))
                    .col(boolean(ProviderConnections::DisableCooling).default(false))
                    .col(text_null(ProviderConnections::ProviderSpecificData))
                    .col(big_integer_null(ProviderConnections::RateLimitedUntil))
                    .col(string_null(ProviderConnections::TestStatus))
                    .col(text_null(ProviderConnections::LastError))
                    .col(string_null(ProviderConnections::LastErrorType))
                    .col(string_null(ProviderConnections::ErrorCode))
                    .col(integer(ProviderConnections::BackoffLevel).default(0))
                    .col(string_null(ProviderConnections::TerminalStatus))
                    .col(integer(ProviderConnections::ExpiredRetryCount).default(0))
                    .col(integer(ProviderConnections::RejectedStreak).default(0))
                    .col(big_integer(ProviderConnections::CreatedAt))
                    .col(big_integer(ProviderConnections::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_provider_connections_provider")
                    .table(ProviderConnections::Table)
                    .col(ProviderConnections::Provider)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .if_not_exists()
                    .col(string(ApiKeys::Id).primary_key())
                    .col(string(ApiKeys::Name))
                    .col(string_uniq(ApiKeys::KeyHash))
                    .col(string(ApiKeys::KeyPrefix))
                    .col(text(ApiKeys::Scopes))
                    .col(text_null(ApiKeys::AllowedConnections))
                    .col(big_integer(ApiKeys::CreatedAt))
                    .col(big_integer_null(ApiKeys::LastUsedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(KeyValue::Table)
                    .if_not_exists()
                    .col(string(KeyValue::Key).primary_key())
                    .col(text(KeyValue::Value))
                    .col(big_integer(KeyValue::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Combos::Table)
                    .if_not_exists()
                    .col(string(Combos::Name).primary_key())
                    .col(string(Combos::Strategy))
                    .col(text(Combos::Targets))
                    .col(text_null(Combos::Config))
                    .col(big_integer(Combos::CreatedAt))
                    .col(big_integer(Combos::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ModelAliases::Table)
                    .if_not_exists()
                    .col(string(ModelAliases::Alias).primary_key())
                    .col(string(ModelAliases::Target))
                    .col(big_integer(ModelAliases::CreatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ProxyLogs::Table)
                    .if_not_exists()
                    .col(big_pk_auto(ProxyLogs::Id))
                    .col(big_integer(ProxyLogs::CreatedAt))
                    .col(string(ProxyLogs::RequestId))
                    .col(string(ProxyLogs::Endpoint))
                    .col(string(ProxyLogs::Provider))
                    .col(string_null(ProxyLogs::ConnectionId))
                    .col(string(ProxyLogs::Model))
                    .col(integer(ProxyLogs::Status))
                    .col(big_integer(ProxyLogs::LatencyMs))
                    .col(big_integer_null(ProxyLogs::TtfbMs))
                    .col(boolean(ProxyLogs::Stream))
                    .col(big_integer_null(ProxyLogs::PromptTokens))
                    .col(big_integer_null(ProxyLogs::CompletionTokens))
                    .col(big_integer_null(ProxyLogs::CachedTokens))
                    .col(string_null(ProxyLogs::ErrorKind))
                    .col(text_null(ProxyLogs::ErrorMessage))
                    .col(string_null(ProxyLogs::EgressIp))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_proxy_logs_created_at")
                    .table(ProxyLogs::Table)
                    .col(ProxyLogs::CreatedAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }
}
