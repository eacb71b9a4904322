//! The `concurrency_slots` table: the slots of limited gates shared by the
//! instances on one Postgres (`proxy::dispatch::shared_slots`). A slot is
//! free when no instance holds it or when its holder has not sent a
//! heartbeat since `silent_before` (a killed instance's slots come back).
//! Postgres only: a single instance counts in memory.

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement};

use super::feed::{self, Change, Message};

/// Takes the lowest free slot below `cap` of `gate` for `instance`; `None`
/// when every one is held. Takers running at once skip each other's rows
/// (`SKIP LOCKED`), so they never wait on each other nor take one slot twice.
pub async fn take(
    db: &DatabaseConnection,
    gate: &str,
    cap: u32,
    instance: &str,
    now: i64,
    silent_before: i64,
) -> Result<Option<i32>, DbErr> {
    let sql = "UPDATE concurrency_slots SET instance = $2, taken_at = $3 \
         WHERE (gate, slot) = (SELECT c.gate, c.slot FROM concurrency_slots c \
            WHERE c.gate = $1 AND c.slot < $4 AND (c.instance IS NULL OR NOT EXISTS ( \
                SELECT 1 FROM gateway_instances i WHERE i.id = c.instance AND i.last_seen_at >= $5)) \
            ORDER BY c.slot LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING slot";
    let values = [gate.into(), instance.into(), now.into(), i64::from(cap).into(), silent_before.into()];
    let row = db.query_one_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, values)).await?;
    row.map(|r| r.try_get::<i32>("", "slot")).transpose()
}

/// Makes sure `gate` has rows for `cap` slots (a gate's first use, or a
/// raised cap); rows already there are kept.
pub async fn provide(db: &DatabaseConnection, gate: &str, cap: u32) -> Result<(), DbErr> {
    let sql = "INSERT INTO concurrency_slots (gate, slot) SELECT $1, s FROM generate_series(0, $2 - 1) AS s \
         ON CONFLICT DO NOTHING";
    db.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, [gate.into(), i64::from(cap).into()]))
        .await?;
    Ok(())
}

/// Gives a slot back and, in the same round trip, tells the other
/// instances that `gate` has room (their waiters try again at once).
pub async fn give_back(db: &DatabaseConnection, gate: &str, slot: i32, instance: &str) -> Result<(), DbErr> {
    let sql = "WITH freed AS (UPDATE concurrency_slots SET instance = NULL, taken_at = NULL \
            WHERE gate = $1 AND slot = $2 AND instance = $3 RETURNING gate) \
         SELECT pg_notify($4, $5) FROM freed";
    let payload = Message::payloads(instance, &Change::SlotsFreed(vec![feed::gate(gate)])).concat();
    let values = [gate.into(), slot.into(), instance.into(), feed::CHANNEL.into(), payload.into()];
    db.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, values)).await?;
    Ok(())
}

/// An instance stopping cleanly gives back every slot it still holds.
pub async fn give_back_all(db: &DatabaseConnection, instance: &str) -> Result<(), DbErr> {
    let sql = "UPDATE concurrency_slots SET instance = NULL, taken_at = NULL WHERE instance = $1";
    db.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, [instance.into()])).await?;
    Ok(())
}
