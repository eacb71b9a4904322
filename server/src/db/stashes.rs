//! The `stashes` table: sealed values kept a few minutes for one later
//! request (`services::stash`).

use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use super::entities::stash as row;

/// Keeps `sealed` under (`kind`, `id`), and forgets the values of `kind`
/// put before `forget_before`.
pub async fn put(
    db: &DatabaseConnection,
    kind: &str,
    id: &str,
    sealed: String,
    now: i64,
    forget_before: i64,
) -> Result<(), DbErr> {
    row::Entity::delete_many()
        .filter(row::Column::Kind.eq(kind))
        .filter(row::Column::PutAt.lt(forget_before))
        .exec(db)
        .await?;
    let r =
        row::ActiveModel { kind: Set(kind.to_owned()), id: Set(id.to_owned()), sealed: Set(sealed), put_at: Set(now) };
    row::Entity::insert(r).exec(db).await?;
    Ok(())
}

/// The value under (`kind`, `id`), left in place.
pub async fn peek(db: &DatabaseConnection, kind: &str, id: &str) -> Result<Option<row::Model>, DbErr> {
    row::Entity::find_by_id((kind.to_owned(), id.to_owned())).one(db).await
}

/// The value under (`kind`, `id`), removed: of two instances taking it at
/// once, only the one whose delete removed the row has it.
pub async fn take(db: &DatabaseConnection, kind: &str, id: &str) -> Result<Option<row::Model>, DbErr> {
    let Some(found) = peek(db, kind, id).await? else { return Ok(None) };
    let deleted = row::Entity::delete_by_id((kind.to_owned(), id.to_owned())).exec(db).await?;
    Ok((deleted.rows_affected == 1).then_some(found))
}
