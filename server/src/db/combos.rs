//! The `combos` table: one row per combo, targets and config as JSON.

use app::types::combo::Combo;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, QueryOrder, sea_query::OnConflict};

use super::entities::combo;

/// Every stored combo that still parses (others are reported and skipped).
pub async fn list(db: &DatabaseConnection) -> Result<Vec<Combo>, DbErr> {
    let rows = combo::Entity::find().order_by_asc(combo::Column::Name).all(db).await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let targets = serde_json::from_str::<serde_json::Value>(&r.targets).ok()?;
            let config = match r.config.as_deref() {
                Some(c) => serde_json::from_str::<serde_json::Value>(c).ok()?,
                None => serde_json::json!({}),
            };
            let doc = serde_json::json!({"name": r.name, "strategy": r.strategy, "targets": targets, "config": config});
            serde_json::from_value(doc)
                .map_err(|e| tracing::warn!(combo = %r.name, error = %e, "stored combo skipped"))
                .ok()
        })
        .collect())
}

/// Inserts or replaces the combo.
pub async fn put(db: &DatabaseConnection, c: &Combo, now: i64) -> Result<(), DbErr> {
    let strategy =
        serde_json::to_value(c.strategy).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let row = combo::ActiveModel {
        name: Set(c.name.clone()),
        strategy: Set(strategy),
        targets: Set(serde_json::to_string(&c.targets).unwrap_or_default()),
        config: Set((c.config != Default::default()).then(|| serde_json::to_string(&c.config).unwrap_or_default())),
        created_at: Set(now),
        updated_at: Set(now),
    };
    use combo::Column as C;
    combo::Entity::insert(row)
        .on_conflict(
            OnConflict::column(C::Name).update_columns([C::Strategy, C::Targets, C::Config, C::UpdatedAt]).to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes the combo; `false` when there was none.
pub async fn delete(db: &DatabaseConnection, name: &str) -> Result<bool, DbErr> {
    Ok(combo::Entity::delete_by_id(name.to_owned()).exec(db).await?.rows_affected > 0)
}
