//! OmniRoute-RS: one axum binary serving the `/v1/*` proxy endpoints for
//! coding agents, the `/api/*` management API and the Leptos dashboard.

pub mod api;
pub mod auth;
pub mod config;
pub mod db;
mod forward_writes;
pub mod listener;
pub mod memory;
pub mod outbox;
pub mod protocols;
pub mod proxy;
pub mod resilience;
pub mod routing;
pub mod services;
pub mod state;
pub mod store;
pub mod upstream;
pub mod web;
pub mod workers;

use anyhow::Context;
use axum::Router;
use hyper_util::client::proxy::matcher::Matcher;
use std::{future::Future, sync::Arc};
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::{
    auth::{Auth, api_keys::KeyRegistry, password, secrets::SecretBox},
    config::Config,
    resilience::{
        clock::{Clock, SystemClock},
        engine::Engine,
    },
    routing::{
        Routing,
        affinity::{Affinity, MAX_PINS, stored_pin},
    },
    state::AppState,
    store::{AttemptRecord, Store, traffic::Traffic},
    upstream::executor::Executor,
};

/// Opens the database (applying migrations), ensures an admin password,
/// and loads the in-memory registries. Prints a generated password once.
pub async fn build_state(config: Config) -> anyhow::Result<Arc<AppState>> {
    build_state_with_clock(config, Arc::new(SystemClock)).await
}

/// [`build_state`] with the resilience engine reading `clock` (tests
/// drive time by hand).
pub async fn build_state_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Arc<AppState>> {
    db::files::private_dir(&config.data_dir)
        .with_context(|| format!("creating data dir {}", config.data_dir.display()))?;
    let db = db::connect(&config.database_url).await.context("opening the database")?;
    let secrets = SecretBox::load(config.secret_key.as_deref(), &config.data_dir)?;
    if let Some(generated) = password::ensure_initial(&db, config.initial_password.as_deref()).await? {
        println!(
            "\n  OmniRoute admin password (shown once): {generated}\n  Change it with `omniroute reset-password`.\n"
        );
    }
    let extra_roots = match &config.upstream_ca_file {
        Some(path) => upstream::read_roots(path).map_err(|e| anyhow::anyhow!("OMNIROUTE_UPSTREAM_CA_FILE: {e}"))?,
        None => Vec::new(),
    };
    let executor = Executor::new(config.connect_timeout, config.fetch_timeout, Matcher::from_env(), extra_roots)
        .context("OMNIROUTE_UPSTREAM_CA_FILE: building the HTTP client")?;
    let resilience = services::resilience::load(&db, config.resilience_env.clone()).await?;
    let traffic = seeded_traffic(&db, clock.now_ms()).await?;
    let (store, outboxes) = Store::spawn(&db, config.log_retention_rows, traffic, clock.clone());
    let routing = Routing::new(clock.clone(), outboxes.pins, outboxes.tool_limits);
    let engine = Engine::new(clock.clone(), outboxes.engine);
    restore_engine(&engine, &db, &resilience.current()).await?;
    restore_pins(&routing.affinity, &db, engine.now()).await?;
    routing.leases.replace_all(services::leases::stored(&db, engine.now()).await?);
    let auth = Auth {
        secrets,
        keys: KeyRegistry::new(clock.clone(), outboxes.key_uses),
        login_throttle: Default::default(),
        callback: Default::default(),
    };
    let state = Arc::new(AppState {
        engine,
        routing,
        admission: Default::default(),
        auth,
        store,
        resilience,
        clock,
        health_cache: parking_lot::Mutex::new(None),
        started_at: Instant::now(),
        clients: listener::Clients::new(config.client, config.trust_proxy, config.shutdown_grace),
        upstream: Arc::new(executor),
        db,
        config,
    });
    state.auth.keys.reload(&state.db).await?;
    state.routing.connections.reload(&state.db, &state.auth.secrets).await?;
    state.routing.combos.reload(&state.db).await?;
    state.routing.aliases.reload(&state.db).await?;
    services::quotas::restore(&state).await?;
    services::changes::follow(&state);
    services::instances::spawn_heartbeat(&state);
    Ok(state)
}

/// The traffic rollup seeded with the last day of the request log.
async fn seeded_traffic(db: &sea_orm::DatabaseConnection, now: i64) -> anyhow::Result<Traffic> {
    let traffic = Traffic::default();
    let rows = db::logs::recent_attempts(db, now - store::traffic::KEEP_MS).await?;
    let records = rows.into_iter().map(|r| AttemptRecord {
        created_at: r.created_at,
        provider: r.provider,
        connection_id: r.connection_id,
        status: r.status,
        latency_ms: r.latency_ms,
        ttfb_ms: r.ttfb_ms,
        stream: r.stream,
        wait_ms: r.wait_ms,
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens,
        cached_tokens: r.cached_tokens,
        ..AttemptRecord::default()
    });
    traffic.add(records.collect::<Vec<_>>().iter().filter_map(AttemptRecord::sample));
    Ok(traffic)
}

/// Loads breakers and connection health as the last run left them (an
/// open breaker stays open, a cooling connection keeps cooling) and the
/// egress IPs seen in the last 24 h. Model lockouts are lost on restart
/// (SPEC §R3); on a shared database the change feed's first catch-up
/// reads the ones the other instances hold.
async fn restore_engine(
    engine: &Engine,
    db: &sea_orm::DatabaseConnection,
    settings: &app::types::settings::ResilienceSettings,
) -> anyhow::Result<()> {
    for row in db::resilience::load_breakers(db).await? {
        let cfg = resilience::engine::breaker_config(settings, upstream::catalog::category_of(&row.provider));
        if let Some(b) = db::resilience::breaker_from_row(&row, &cfg) {
            engine.restore_breaker(&row.provider, b);
        }
    }
    for row in db::connections::list(db, None).await? {
        engine.restore_connection(&row.id, db::resilience::health_from_row(&row));
    }
    let since = engine.now() - resilience::egress::EGRESS_WINDOW_MS;
    for (connection_id, ip, at) in db::logs::recent_egress(db, since).await? {
        if let Ok(ip) = ip.parse() {
            engine.restore_egress(&connection_id, ip, at);
        }
    }
    Ok(())
}

/// Loads the unexpired session affinity pins (SPEC §R2.2).
async fn restore_pins(affinity: &Affinity, db: &sea_orm::DatabaseConnection, now: i64) -> anyhow::Result<()> {
    for (key, pin) in db::affinity::load(db, now, MAX_PINS).await?.into_iter().filter_map(stored_pin) {
        affinity.restore(key, pin);
    }
    Ok(())
}

/// Every route of the binary.
pub fn router(state: Arc<AppState>) -> Router {
    let browser_facing = api::router(&state)
        .with_state(state.clone())
        .merge(web::router(&state))
        .layer(axum::middleware::from_fn_with_state(state.clone(), web::cross_site::guard))
        .layer(axum::middleware::from_fn(web::security_headers));
    let leases = Router::new()
        .route("/api/v1/session-leases", axum::routing::post(proxy::leases::handle).options(proxy::leases::options))
        .with_state(state.clone());
    proxy::router(&state).with_state(state).merge(leases).merge(browser_facing)
}

/// Serves until `shutdown` resolves, then stops accepting, lets in-flight
/// requests and streams finish for at most the configured grace period
/// (see [`listener`]), and flushes the write-behind request log.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    #[expect(clippy::disallowed_methods, reason = "the shutdown watcher lives as long as the server")]
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    services::quotas::spawn_refresher(&state);
    serve_until_stopped(&state, listener, stop_rx).await?;
    flush(&state).await;
    Ok(())
}

/// Serves the gateway's routes on `listener` until `stop` turns true (see
/// [`listener`]).
pub async fn serve_until_stopped(
    state: &Arc<AppState>,
    listener: TcpListener,
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    listener::serve_until_stopped(router(state.clone()), &state.clients, listener, stop).await
}

/// Writes what is still queued behind the requests (log rows, resilience
/// state, plan windows) before the process exits.
pub async fn flush(state: &AppState) {
    state.store.flush().await;
    services::instances::leave(state).await;
    services::quotas::store(state).await;
    tracing::info!("shutdown complete");
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
