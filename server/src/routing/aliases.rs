//! The aliases the proxy resolves before routing, read lock-free
//! (`ArcSwap`) and rebuilt from the database after each change.

use app::types::alias::Alias;
use arc_swap::ArcSwap;
use sea_orm::{DatabaseConnection, DbErr};
use std::{collections::HashMap, sync::Arc};

use crate::db::aliases;

#[derive(Default)]
pub struct AliasRegistry {
    by_alias: ArcSwap<HashMap<String, String>>,
}

impl AliasRegistry {
    /// What `name` stands for, when it is an alias.
    pub fn resolve(&self, name: &str) -> Option<String> {
        let map = self.by_alias.load();
        if map.is_empty() {
            return None;
        }
        map.get(name).cloned()
    }

    pub fn all(&self) -> Vec<Alias> {
        let mut all: Vec<Alias> =
            self.by_alias.load().iter().map(|(a, m)| Alias { alias: a.clone(), model: m.clone() }).collect();
        all.sort_by(|a, b| a.alias.cmp(&b.alias));
        all
    }

    pub async fn reload(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let map = aliases::list(db).await?.into_iter().map(|a| (a.alias, a.model)).collect();
        self.by_alias.store(Arc::new(map));
        Ok(())
    }
}
