//! The combos the proxy routes by name, read lock-free (`ArcSwap`) and
//! rebuilt from the database after each change.

use app::types::combo::Combo;
use arc_swap::ArcSwap;
use sea_orm::{DatabaseConnection, DbErr};
use std::{collections::HashMap, sync::Arc};

use crate::db::combos;

#[derive(Default)]
pub struct ComboRegistry {
    by_name: ArcSwap<HashMap<String, Arc<Combo>>>,
}

impl ComboRegistry {
    pub fn get(&self, name: &str) -> Option<Arc<Combo>> {
        self.by_name.load().get(name).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Combo>> {
        let mut all: Vec<Arc<Combo>> = self.by_name.load().values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    pub async fn reload(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let map = combos::list(db).await?.into_iter().map(|c| (c.name.clone(), Arc::new(c))).collect();
        self.by_name.store(Arc::new(map));
        Ok(())
    }
}
