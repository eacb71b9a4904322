//! The change feed: several gateways on one Postgres serve one
//! configuration and share what they learn about upstreams.
//!
//! Each instance holds its configuration in memory (the connection
//! registry, combos, aliases, API keys, the resilience settings, the
//! session leases) and rebuilds a part from the database when it changes. A change made here
//! rebuilds the part here and names it on the feed ([`feed`]); the store's
//! writer names the breakers, connection health, model lockouts and
//! session pins it stores. Every instance listens: a part another instance changed is
//! rebuilt; named breakers, connections, lockouts and pins are read back and
//! adopted, so an account one instance saw answer 429 cools on all of
//! them, and a session keeps its account whichever instance it reaches.
//!
//! Notifications sent while a listener's connection is down are lost, so
//! after every (re)connect the listener rebuilds the whole configuration
//! and adopts every stored breaker and connection: the catch-up read.
//! On SQLite (one instance) nothing is sent and nobody listens.

use sea_orm::{DbErr, sqlx::postgres::PgListener};
use std::{
    sync::{Arc, Weak},
    time::Duration,
};

use crate::{
    db::{
        self,
        feed::{self, Change, Message},
    },
    resilience,
    routing::affinity::{MAX_PINS, PinKey, stored_pin},
    state::AppState,
    upstream::catalog,
};

/// How long the listener waits before connecting again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Rebuilds `change`'s part here from the database (just written) and
/// tells the other instances to do the same.
pub async fn changed(state: &AppState, change: Change) -> Result<(), DbErr> {
    apply(state, &change).await?;
    feed::announce(&state.db, &state.store.instance, &change).await;
    Ok(())
}

/// Brings this process's memory in line with what the database holds for `change`.
async fn apply(state: &AppState, change: &Change) -> Result<(), DbErr> {
    let db = &state.db;
    match change {
        Change::Connections => state.routing.connections.reload(db, &state.auth.secrets).await,
        Change::Combos => state.routing.combos.reload(db).await,
        Change::Aliases => state.routing.aliases.reload(db).await,
        Change::Keys => state.auth.keys.reload(db).await,
        Change::Settings => super::resilience::reload(state).await,
        Change::Leases => {
            let stored = super::leases::stored(db, state.routing.leases.now()).await?;
            state.routing.leases.replace_all(stored);
            Ok(())
        }
        Change::Health(_) | Change::Lockouts(_) | Change::Pins(_) | Change::Breakers(_) => adopt(state, change).await,
        Change::ToolLimits(_)
        | Change::Windows(_)
        | Change::SlotsFreed(_)
        | Change::SignInAdmitted(_)
        | Change::SignInSucceeded(_) => {
            hear(state, change);
            Ok(())
        }
    }
}

/// Live state another instance stored: the named rows are read back and adopted.
async fn adopt(state: &AppState, change: &Change) -> Result<(), DbErr> {
    let db = &state.db;
    match change {
        Change::Health(ids) => {
            for id in ids {
                if let Some(row) = db::connections::get(db, id).await? {
                    state.engine.adopt_connection(id, db::resilience::health_from_row(&row));
                }
            }
        }
        Change::Lockouts(ids) => {
            for id in ids {
                state.engine.adopt_lockouts(id, db::lockouts::of_connection(db, id).await?);
            }
        }
        Change::Pins(ids) => {
            for (session, provider) in ids.iter().filter_map(|id| id.split_once(':')) {
                let Some(key) = PinKey::stored(session, provider) else { continue };
                match db::affinity::get(db, session, provider).await?.and_then(stored_pin) {
                    Some((key, pin)) => state.routing.affinity.restore(key, pin),
                    None => state.routing.affinity.forget(&key),
                }
            }
        }
        Change::Breakers(providers) => {
            let settings = state.resilience.current();
            for row in db::resilience::load_breakers(db).await? {
                if !providers.contains(&row.provider) {
                    continue;
                }
                let cfg = resilience::engine::breaker_config(&settings, catalog::category_of(&row.provider));
                if let Some(b) = db::resilience::breaker_from_row(&row, &cfg) {
                    state.engine.restore_breaker(&row.provider, b);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// What another instance tells as it happens, with nothing to read back:
/// learnt tool limits, the window gate's entries, sign-in attempts,
/// shared slots given back.
fn hear(state: &AppState, change: &Change) {
    match change {
        Change::ToolLimits(learnt) => {
            for (provider, model, count) in learnt.iter().filter_map(|n| feed::read_tool_limit(n)) {
                if let Some(provider) = catalog::find(provider) {
                    state.routing.tool_limits.adopt(provider.id, &model, count);
                }
            }
        }
        Change::SignInAdmitted(clients) => {
            for client in clients.iter().filter_map(|c| c.parse().ok()) {
                state.auth.login_throttle.admitted_elsewhere(client, state.engine.now());
            }
        }
        Change::SignInSucceeded(clients) => {
            for client in clients.iter().filter_map(|c| c.parse().ok()) {
                state.auth.login_throttle.succeeded(client);
            }
        }
        Change::Windows(entries) => {
            for window in entries.iter().filter_map(|w| feed::read_window(w)) {
                state.engine.adopt_window(window);
            }
        }
        Change::SlotsFreed(gates) => {
            for gate in gates.iter().filter_map(|g| feed::read_gate(g)) {
                state.admission.concurrency.wake(&gate);
            }
        }
        _ => {}
    }
}

/// The catch-up read: everything another instance may have changed.
async fn catch_up(state: &AppState) -> Result<(), DbErr> {
    for part in Change::WHOLE {
        apply(state, &part).await?;
    }
    let connections = db::connections::list(&state.db, None).await?;
    let mut locks = db::lockouts::load(&state.db, state.engine.now()).await?;
    for row in &connections {
        state.engine.adopt_connection(&row.id, db::resilience::health_from_row(row));
        let mine = locks.extract_if(.., |(_, l)| l.connection_id == row.id).collect();
        state.engine.adopt_lockouts(&row.id, mine);
    }
    let now = state.clock.now_ms();
    for (key, pin) in db::affinity::load(&state.db, now, MAX_PINS).await?.into_iter().filter_map(stored_pin) {
        state.routing.affinity.restore(key, pin);
    }
    let providers = db::resilience::load_breakers(&state.db).await?.into_iter().map(|r| r.provider).collect();
    apply(state, &Change::Breakers(providers)).await
}

/// Starts listening to the other instances (Postgres only). The listener
/// holds the state weakly: it ends when the gateway's state is dropped.
pub fn follow(state: &Arc<AppState>) {
    if !feed::shared(&state.db) {
        return;
    }
    let (weak, url) = (Arc::downgrade(state), state.config.database_url.clone());
    #[expect(
        clippy::disallowed_methods,
        reason = "the change feed's listener lives as long as the gateway, off the request path"
    )]
    tokio::spawn(listen(weak, url));
}

async fn listen(state: Weak<AppState>, url: String) {
    let mut listener = None;
    let mut caught_up = false;
    loop {
        let Some(l) = listener.as_mut() else {
            match subscribe(&url).await {
                Ok(l) => listener = Some(l),
                Err(e) => {
                    tracing::warn!(error = %e, "listening to the other instances failed; trying again");
                    tokio::time::sleep(RECONNECT_AFTER).await;
                }
            }
            continue;
        };
        if !caught_up {
            let Some(state) = state.upgrade() else { return };
            match catch_up(&state).await {
                Ok(()) => {
                    caught_up = true;
                    state.store.caught_up.send_replace(true);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "catching up with the other instances failed; trying again");
                    tokio::time::sleep(RECONNECT_AFTER).await;
                    continue;
                }
            }
        }
        match l.try_recv().await {
            Ok(Some(n)) => {
                let Some(state) = state.upgrade() else { return };
                let Some(message) = Message::parse(n.payload()) else { continue };
                if *message.instance == *state.store.instance {
                    continue;
                }
                match apply(&state, &message.change).await {
                    Ok(()) => state.store.applied.send_modify(|n| *n += 1),
                    Err(e) => {
                        tracing::warn!(error = %e, "applying another instance's change failed; catching up");
                        state.store.caught_up.send_replace(false);
                        caught_up = false;
                    }
                }
            }
            // The connection was lost (and re-established): what was sent
            // meanwhile is gone, so read everything again.
            Ok(None) => caught_up = lost(&state),
            Err(e) => {
                tracing::warn!(error = %e, "the change feed failed; reconnecting");
                (listener, caught_up) = (None, lost(&state));
                tokio::time::sleep(RECONNECT_AFTER).await;
            }
        }
    }
}

/// Marks the instance as behind until its next catch-up read.
fn lost(state: &Weak<AppState>) -> bool {
    if let Some(state) = state.upgrade() {
        state.store.caught_up.send_replace(false);
    }
    false
}

async fn subscribe(url: &str) -> Result<PgListener, sea_orm::sqlx::Error> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen(feed::CHANNEL).await?;
    Ok(listener)
}
