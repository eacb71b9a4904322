//! Write-behind persistence of live state: the engine's breakers,
//! connection health and (on a shared database) model lockouts, the
//! session affinity pins and the API keys' last use. Each producer leaves its changes in its own outbox (see
//! [`crate::outbox`]: the newest per key, never dropped) and never waits;
//! this task wakes on a change, takes every outbox and writes what it took.
//! `flush` waits until everything put before it is stored (shutdown, tests).
//! On a shared database it then tells the other instances which breakers
//! and connections it stored ([`db::feed`]), so they adopt them.

use sea_orm::DatabaseConnection;
use std::sync::Arc;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::{
    auth::api_keys::KeyUses,
    db::{
        self,
        entities::session_affinity,
        feed::{self, Change},
    },
    resilience::{clock::Clock, engine::EngineChanges, tool_limits::ToolLimitChanges},
    routing::affinity::PinChanges,
};

/// The outboxes of every producer of live state, and the writer's wake-up.
#[derive(Clone)]
pub struct Outboxes {
    pub engine: EngineChanges,
    pub pins: Arc<PinChanges>,
    pub key_uses: Arc<KeyUses>,
    /// Tool limits learnt: not stored, only told to other instances.
    pub tool_limits: Arc<ToolLimitChanges>,
}

impl Outboxes {
    fn new(wake: &Arc<Notify>) -> Self {
        use crate::outbox::Outbox;
        Self {
            engine: EngineChanges::new(wake),
            pins: Arc::new(Outbox::new(wake.clone())),
            key_uses: Arc::new(Outbox::new(wake.clone())),
            tool_limits: Arc::new(Outbox::new(wake.clone())),
        }
    }
}

#[derive(Clone)]
pub struct StateWriter {
    flushes: mpsc::Sender<oneshot::Sender<()>>,
}

impl StateWriter {
    /// Starts the writer; the producers put their changes in the returned outboxes.
    pub fn spawn(db: DatabaseConnection, clock: Arc<dyn Clock>, instance: Arc<str>) -> (Self, Outboxes) {
        let wake = Arc::new(Notify::new());
        let outboxes = Outboxes::new(&wake);
        let (flushes, flush_rx) = mpsc::channel(16);
        #[expect(
            clippy::disallowed_methods,
            reason = "the state writer lives as long as the process, off the request path"
        )]
        tokio::spawn(writer(db, clock, instance, outboxes.clone(), wake, flush_rx));
        (Self { flushes }, outboxes)
    }

    /// Waits until every change put before this call is stored.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.flushes.send(ack).await.is_ok() {
            let _ = done.await;
        }
    }
}

async fn writer(
    db: DatabaseConnection,
    clock: Arc<dyn Clock>,
    instance: Arc<str>,
    outboxes: Outboxes,
    wake: Arc<Notify>,
    mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
) {
    loop {
        let mut acks = Vec::new();
        tokio::select! {
            _ = wake.notified() => {}
            ack = flushes.recv() => match ack { Some(ack) => acks.push(ack), None => return },
        }
        while let Ok(ack) = flushes.try_recv() {
            acks.push(ack);
        }
        write(&db, &instance, &outboxes, clock.now_ms()).await;
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

/// Takes every outbox and stores what it held; names the stored breakers,
/// connections, lockouts and pins to the other instances.
async fn write(db: &DatabaseConnection, instance: &str, outboxes: &Outboxes, now: i64) {
    let mut breakers = Vec::new();
    for (provider, b) in outboxes.engine.breakers.take() {
        match db::resilience::save_breaker(db, &provider, &b, now).await {
            Ok(()) => breakers.push(provider),
            Err(e) => tracing::error!(error = %e, provider, "storing a circuit breaker failed"),
        }
    }
    let mut health = Vec::new();
    for (id, h) in outboxes.engine.connections.take() {
        match db::resilience::save_health(db, &id, &h, now).await {
            Ok(()) => health.push(id),
            Err(e) => tracing::error!(error = %e, connection_id = %id, "storing connection health failed"),
        }
    }
    // Model lockouts are kept only to be shared: a single instance loses
    // them on restart (SPEC §R3).
    let mut lockouts = Vec::new();
    let shared = db::feed::shared(db);
    for (id, locks) in outboxes.engine.lockouts.take().into_iter().filter(|_| shared) {
        match db::lockouts::replace(db, &id, &locks).await {
            Ok(()) => lockouts.push(id),
            Err(e) => tracing::error!(error = %e, connection_id = %id, "storing model lockouts failed"),
        }
    }
    let mut pins = Vec::new();
    for (key, pin) in outboxes.pins.take() {
        let (session, provider) = (key.session.hex(), key.provider);
        let stored = match pin {
            Some(pin) => {
                let row = session_affinity::Model {
                    key: session.clone(),
                    provider: provider.to_owned(),
                    connection_id: pin.connection_id.to_string(),
                    created_at: pin.created_at,
                    last_used_at: pin.last_used_at,
                    expires_at: pin.expires_at,
                };
                db::affinity::save(db, row).await
            }
            None => db::affinity::delete(db, &session, provider).await,
        };
        match stored {
            Ok(()) => pins.push(format!("{session}:{provider}")),
            Err(e) => tracing::error!(error = %e, provider, "storing a session affinity pin failed"),
        }
    }
    let learnt = outboxes.tool_limits.take().into_iter().filter(|_| shared);
    let tool_limits = learnt.map(|((provider, model), n)| feed::tool_limit(provider, &model, n)).collect();
    let windows = outboxes.engine.windows.take().into_values().filter(|_| shared).map(|w| feed::window(&w)).collect();
    let live = [
        Change::Breakers(breakers),
        Change::Health(health),
        Change::Lockouts(lockouts),
        Change::Pins(pins),
        Change::ToolLimits(tool_limits),
        Change::Windows(windows),
    ];
    for change in live {
        if change.ids().is_empty() {
            continue;
        }
        if let Err(e) = db::feed::notify(db, instance, &change).await {
            tracing::error!(error = %e, "telling the other instances about live state failed");
        }
    }
    for (id, at) in outboxes.key_uses.take() {
        if let Err(e) = db::api_keys::touch(db, &id, at).await {
            tracing::error!(error = %e, key_id = %id, "storing an API key's last use failed");
        }
    }
}
