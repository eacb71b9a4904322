//! Where the resilience engine's durable state lives: breakers in
//! `domain_circuit_breakers`, connection health in the cooldown columns of
//! `provider_connections`. Written behind the request by
//! the store (`store::state`); read once at start.

use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, sea_query::OnConflict,
};

use super::{
    connections::ConnectionRow,
    entities::{circuit_breaker, provider_connection},
};
use crate::resilience::{
    breaker::{Breaker, BreakerConfig, BreakerState, FailureKind},
    connection_health::{ConnectionHealth, TerminalStatus},
};

pub async fn load_breakers(db: &DatabaseConnection) -> Result<Vec<circuit_breaker::Model>, DbErr> {
    circuit_breaker::Entity::find().all(db).await
}

/// The breaker a stored row describes (`None` for an unreadable state).
pub fn breaker_from_row(row: &circuit_breaker::Model, cfg: &BreakerConfig) -> Option<Breaker> {
    Some(Breaker::restored(
        BreakerState::parse(&row.state)?,
        u32::try_from(row.failure_count).unwrap_or(0),
        row.last_failure_at,
        row.last_failure_kind.as_deref().and_then(FailureKind::parse),
        u32::try_from(row.open_cycles).unwrap_or(0),
        cfg,
    ))
}

pub async fn save_breaker(db: &DatabaseConnection, provider: &str, b: &Breaker, now: i64) -> Result<(), DbErr> {
    let row = circuit_breaker::ActiveModel {
        provider: Set(provider.to_owned()),
        state: Set(b.stored_state().as_str().to_owned()),
        failure_count: Set(i32::try_from(b.failure_count()).unwrap_or(i32::MAX)),
        last_failure_at: Set(b.last_failure_at()),
        last_failure_kind: Set(b.last_failure_kind().map(|k| k.as_str().to_owned())),
        open_cycles: Set(i32::try_from(b.open_cycles()).unwrap_or(i32::MAX)),
        updated_at: Set(now),
    };
    use circuit_breaker::Column as C;
    circuit_breaker::Entity::insert(row)
        .on_conflict(
            OnConflict::column(C::Provider)
                .update_columns([
                    C::State,
                    C::FailureCount,
                    C::LastFailureAt,
                    C::LastFailureKind,
                    C::OpenCycles,
                    C::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// A connection's health as its row stores it.
pub fn health_from_row(row: &ConnectionRow) -> ConnectionHealth {
    ConnectionHealth {
        rate_limited_until: row.rate_limited_until,
        last_error: row.last_error.clone(),
        last_error_type: row.last_error_type.clone(),
        error_code: row.error_code.clone(),
        backoff_level: u32::try_from(row.backoff_level).unwrap_or(0),
        terminal: row.terminal_status.as_deref().and_then(TerminalStatus::parse),
        expired_retries: u32::try_from(row.expired_retry_count).unwrap_or(0),
        rejected_streak: u32::try_from(row.rejected_streak).unwrap_or(0),
    }
}

/// Writes a connection's health columns (a deleted connection: no-op).
pub async fn save_health(db: &DatabaseConnection, id: &str, h: &ConnectionHealth, now: i64) -> Result<(), DbErr> {
    use provider_connection::Column as C;
    let int = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    provider_connection::Entity::update_many()
        .col_expr(C::RateLimitedUntil, h.rate_limited_until.into())
        .col_expr(C::LastError, h.last_error.clone().into())
        .col_expr(C::LastErrorType, h.last_error_type.clone().into())
        .col_expr(C::ErrorCode, h.error_code.clone().into())
        .col_expr(C::BackoffLevel, int(h.backoff_level).into())
        .col_expr(C::TerminalStatus, h.terminal.map(|t| t.as_str().to_owned()).into())
        .col_expr(C::ExpiredRetryCount, int(h.expired_retries).into())
        .col_expr(C::RejectedStreak, int(h.rejected_streak).into())
        .col_expr(C::UpdatedAt, now.into())
        .filter(C::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}
