//! Client API keys in memory: hash → key facts, swapped atomically when a
//! key is created or revoked, so checking a key never touches the database.

use app::types::Scope;
use arc_swap::ArcSwap;
use sea_orm::{DatabaseConnection, DbErr};
use std::{collections::HashMap, sync::Arc};

use crate::db::api_keys;

/// Prefix of every generated client key.
pub const KEY_PREFIX: &str = "omr-";

/// What the gateway knows about a presented, valid key.
#[derive(Debug, Clone)]
pub struct KeyEntry {
    pub id: String,
    pub scopes: Vec<Scope>,
    /// `None` = every connection.
    pub allowed_connections: Option<Vec<String>>,
}

impl KeyEntry {
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    pub fn may_use(&self, connection_id: &str) -> bool {
        self.allowed_connections.as_ref().is_none_or(|ids| ids.iter().any(|id| id == connection_id))
    }
}

#[derive(Default)]
pub struct KeyRegistry {
    by_hash: ArcSwap<HashMap<String, Arc<KeyEntry>>>,
}

impl KeyRegistry {
    pub fn lookup(&self, presented: &str) -> Option<Arc<KeyEntry>> {
        self.by_hash.load().get(&super::sha256_hex(presented)).cloned()
    }

    /// `requireApiKey`: once any key exists, `/v1/*` needs one.
    pub fn any(&self) -> bool {
        !self.by_hash.load().is_empty()
    }

    pub async fn reload(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let map = api_keys::list(db)
            .await?
            .into_iter()
            .map(|row| {
                let entry = KeyEntry {
                    id: row.id,
                    scopes: parse_scopes(&row.scopes),
                    allowed_connections: row.allowed_connections.as_deref().and_then(|s| serde_json::from_str(s).ok()),
                };
                (row.key_hash, Arc::new(entry))
            })
            .collect();
        self.by_hash.store(Arc::new(map));
        Ok(())
    }
}

/// Scope names from the stored JSON array; unknown names are ignored.
pub fn parse_scopes(json: &str) -> Vec<Scope> {
    serde_json::from_str::<Vec<String>>(json).unwrap_or_default().iter().filter_map(|s| Scope::parse(s)).collect()
}

/// A new random client key.
pub fn generate() -> String {
    format!("{KEY_PREFIX}{}", super::random_token(32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_unique_and_prefixed() {
        let (a, b) = (generate(), generate());
        assert!(a.starts_with(KEY_PREFIX) && a.len() > 40);
        assert_ne!(a, b);
    }

    #[test]
    fn allow_list_restricts_connections() {
        let k =
            KeyEntry { id: "k".into(), scopes: vec![Scope::Inference], allowed_connections: Some(vec!["c1".into()]) };
        assert!(k.may_use("c1") && !k.may_use("c2"));
        assert!(k.has(Scope::Inference) && !k.has(Scope::Management));
    }
}
