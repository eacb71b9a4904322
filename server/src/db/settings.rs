//! The `key_value` table: small JSON settings and the admin password hash.

use super::entities::key_value;
use sea_orm::{
    ActiveValue::Set,
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    sea_query::{Expr, OnConflict},
};

/// Key of the admin password's argon2 PHC string.
pub const ADMIN_PASSWORD_HASH: &str = "adminPasswordHash";

pub async fn get(db: &DatabaseConnection, key: &str) -> Result<Option<String>, DbErr> {
    Ok(key_value::Entity::find_by_id(key.to_owned()).one(db).await?.map(|m| m.value))
}

/// Inserts or replaces `key`.
pub async fn put(db: &DatabaseConnection, key: &str, value: &str, now: i64) -> Result<(), DbErr> {
    let row = key_value::ActiveModel { key: Set(key.to_owned()), value: Set(value.to_owned()), updated_at: Set(now) };
    key_value::Entity::insert(row)
        .on_conflict(
            OnConflict::column(key_value::Column::Key)
                .update_columns([key_value::Column::Value, key_value::Column::UpdatedAt])
                .to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// Replaces `key`'s value with `value` only if it still holds `old`
/// (`None`: no row yet); false when another writer changed it first, so
/// that a read-modify-write (of another instance too) is never lost.
pub async fn swap(db: &DatabaseConnection, key: &str, old: Option<&str>, value: &str, now: i64) -> Result<bool, DbErr> {
    use key_value::Column as C;
    let changed = match old {
        None => {
            let row =
                key_value::ActiveModel { key: Set(key.to_owned()), value: Set(value.to_owned()), updated_at: Set(now) };
            let insert = key_value::Entity::insert(row).on_conflict(OnConflict::column(C::Key).do_nothing().to_owned());
            insert.exec_without_returning(db).await?
        }
        Some(old) => {
            key_value::Entity::update_many()
                .col_expr(C::Value, Expr::value(value))
                .col_expr(C::UpdatedAt, Expr::value(now))
                .filter(C::Key.eq(key))
                .filter(C::Value.eq(old))
                .exec(db)
                .await?
                .rows_affected
        }
    };
    Ok(changed == 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]
    use super::*;

    #[tokio::test]
    async fn a_swap_holds_only_against_the_value_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::build_state(crate::config::Config::for_data_dir(dir.path().to_path_buf())).await.unwrap();
        let db = &state.db;
        assert!(swap(db, "k", None, "a", 1).await.unwrap(), "the first value");
        assert!(!swap(db, "k", None, "b", 2).await.unwrap(), "another writer made the row first");
        assert!(!swap(db, "k", Some("stale"), "b", 2).await.unwrap(), "read before another writer changed it");
        assert_eq!(get(db, "k").await.unwrap().as_deref(), Some("a"), "nothing lost");
        assert!(swap(db, "k", Some("a"), "b", 3).await.unwrap());
        assert_eq!(get(db, "k").await.unwrap().as_deref(), Some("b"));
    }
}
