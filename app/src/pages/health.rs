//! `/monitoring/health`: the status and why, traffic over the last hour or
//! day (`traffic`), provider circuit breakers with live countdowns
//! and reset buttons, connection health per provider, the queues at
//! connection limits (in flight, waiting), the sessions pinned to each
//! connection, the gateways sharing the database, and the process.
//! Refreshes every few seconds once hydrated; resets work without JS too.

use leptos::prelude::*;

use super::traffic::TrafficSection;
use crate::{
    api::{ResetBreakers, get_health},
    components::{BUTTON, Countdown, LastError, Layout, LoadFailed, Loading, REFRESH_TICKS, TableHead, use_ticker},
    format,
    types::monitoring::{
        BreakerInfo, FORGET_AFTER_MS, HEARTBEAT_MS, HealthReport, InstanceInfo, LeaseInfo, QueueInfo, SILENT_AFTER_MS,
        SessionAffinityInfo,
    },
};
use std::collections::BTreeMap;

#[component]
pub fn HealthPage() -> impl IntoView {
    let tick = use_ticker(std::time::Duration::from_secs(1));
    let reset = ServerAction::<ResetBreakers>::new();
    let report = Resource::new(move || (tick.get() / REFRESH_TICKS, reset.version().get()), |_| get_health());
    view! {
        <Layout title="Health">
            {LastError::default().track_saying(reset, "Breaker reset.").view()}
            <Transition fallback=Loading>
                {move || Suspend::new(async move { report.await.ok().map(|r| view! { <Summary r /> }) })}
            </Transition>
            <TrafficSection tick />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match report.await {
                        Ok(r) => view! { <Report r tick reset /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

/// The one status word, why, and the process.
#[component]
fn Summary(r: HealthReport) -> impl IntoView {
    let counts = &r.circuit_breakers;
    let summary = format!(
        " · up {} · {} MB · database {} · breakers: {} open, {} half-open, {} degraded, {} closed",
        crate::format::duration(r.system.uptime_s * 1000),
        r.system.rss_bytes / 1_048_576,
        match (r.db.ok, r.db.log_rows_dropped) {
            (false, _) => "unreachable".to_owned(),
            (true, 0) => "ok".to_owned(),
            (true, n) => format!("ok, {n} log rows dropped while it fell behind"),
        },
        counts.open,
        counts.half_open,
        counts.degraded,
        counts.closed,
    );
    let status_class = match r.status.as_str() {
        "healthy" => "bg-green-100 text-green-800",
        "down" => "bg-red-100 text-red-800",
        _ => "bg-amber-100 text-amber-800",
    };
    view! {
        <div class="mb-4 text-sm text-slate-700" data-testid="health-summary">
            <p>
                <span class=format!("px-2 py-0.5 rounded-md font-medium {status_class}") data-testid="health-status">
                    {r.status.clone()}
                </span>
                {summary}
            </p>
            <ul class="mt-1 list-disc pl-5" data-testid="health-reasons">
                {r.status_reasons.iter().map(|reason| view! { <li>{reason.clone()}</li> }).collect_view()}
            </ul>
        </div>
    }
}

#[component]
fn Report(r: HealthReport, tick: RwSignal<u64>, reset: ServerAction<ResetBreakers>) -> impl IntoView {
    let lockouts = r.lockouts.len();
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <div class="flex items-center justify-between mb-2">
                <h2 class="font-semibold">"Provider circuit breakers"</h2>
                <ActionForm action=reset>
                    <button type="submit" class=BUTTON>"Reset all"</button>
                </ActionForm>
            </div>
            <BreakerTable rows=r.provider_breakers tick reset />
        </section>
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <h2 class="font-semibold mb-2">"Connections"</h2>
            {if r.connection_health.is_empty() {
                view! { <p class="text-slate-500">"No connections yet — add one on the Providers page."</p> }.into_any()
            } else {
                view! {
                    <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="provider-health">
                        <TableHead columns=&["Provider", "Cooling down", "Connections", "Next back in"] />
                        <tbody>
                            {r
                                .connection_health
                                .into_iter()
                                .map(|(provider, h)| {
                                    let key = provider.clone();
                                    view! {
                                        <tr class="border-b border-slate-100" data-provider=key>
                                            <td class="p-2">{provider}</td>
                                            <td class="p-2">{h.cooling_down}</td>
                                            <td class="p-2">{h.total}</td>
                                            <td class="p-2">
                                                {h.soonest_retry_after_ms.map(|ms| view! { <Countdown ms tick /> })}
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table></div>
                }
                    .into_any()
            }}
            <p class="text-sm text-slate-600 mt-2">
                <a href="/monitoring/cooldowns" class="text-indigo-700">"Cooldown Manager"</a>
                {format!(" · {} — see ", format::count(lockouts, "model lockout"))}
                <a href="/settings/model-lockout" class="text-indigo-700">"Model Lockout"</a>
            </p>
        </section>
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <h2 class="font-semibold mb-2">"Queues"</h2>
            <QueueTable queues=r.queues />
            {let live = r.instances.iter().filter(|i| !i.silent).count();
            (live > 1).then(|| view! {
                <p class="text-sm text-slate-600 mt-2" data-testid="queues-shared">
                    {format!(
                        "{live} live instances share this database: each concurrency limit holds for them together, and each request queue here runs its share of the pace (1/{live}). The rows show this instance's requests."
                    )}
                </p>
            })}
            <p class="text-sm mt-2 tabular-nums" data-testid="waiting-for-cooldown" data-waiting=r.waiting_for_cooldown>
                {match r.waiting_for_cooldown {
                    0 => "No request is waiting for a cooldown or a combo's short lock to end.".to_owned(),
                    n => format!("{} waiting now for a cooldown or a combo's short lock to end.", format::count(n, "request")),
                }}
            </p>
        </section>
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <h2 class="font-semibold mb-2">"Session affinity"</h2>
            <PinTable affinity=r.session_affinity />
            <LeaseTable leases=r.session_leases tick />
        </section>
        <InstanceTable instances=r.instances />
        <p class="text-xs text-slate-500">{format!("Version {} · report from {}", r.system.version, crate::format::utc_time(&r.timestamp))}</p>
    }
}

/// Requests in flight and waiting at each connection (and model) limit,
/// and in each connection's request queue.
#[component]
fn QueueTable(queues: BTreeMap<String, QueueInfo>) -> impl IntoView {
    if queues.is_empty() {
        return view! {
            <p class="text-slate-500" data-testid="queues">
                "Nothing is limited yet: no connection has a concurrency limit, and no request queue has run since the gateway started. "
                <a href="/providers" class="text-indigo-700">"Set Max concurrent, per-model limits or rate-limit protection on a connection"</a>
                " to pace and queue its requests."
            </p>
        }
        .into_any();
    }
    view! {
        <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="queues">
            <TableHead columns=&["Connection", "Limit", "Model", "Running", "Waiting", "Paused"] />
            <tbody>
                {queues
                    .into_iter()
                    .map(|(id, q)| {
                        let busy = if q.queued > 0 { "text-amber-800 font-medium" } else { "" };
                        let (kind, running) = if q.kind == "rate_limit" {
                            ("Request queue", format!("{} of {} started", q.running, q.limit))
                        } else {
                            ("Concurrency", format!("{} of {} in flight", q.running, q.limit))
                        };
                        let is_paused = q.paused_until.is_some();
                        let paused = q.paused_until.map(|ms| format!("until {}", crate::format::timestamp(ms)));
                        view! {
                            <tr class="border-b border-slate-100" data-queue=id data-kind=q.kind.clone()>
                                <td class="p-2">{format!("{} ({})", q.connection, q.provider)}</td>
                                <td class="p-2">{kind}</td>
                                <td class="p-2">{q.model.unwrap_or_else(|| "all models".into())}</td>
                                <td class="p-2" data-running=q.running>{running}</td>
                                <td class=format!("p-2 {busy}") data-queued=q.queued>{q.queued}</td>
                                <td class="p-2 text-amber-800" data-paused=is_paused>{paused.unwrap_or_default()}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}

/// The gateways sharing this database (Postgres only: nothing on SQLite),
/// as their heartbeats say.
#[component]
fn InstanceTable(instances: Vec<InstanceInfo>) -> impl IntoView {
    (!instances.is_empty()).then(|| {
        view! {
            <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
                <h2 class="font-semibold mb-2">"Instances on this database"</h2>
                <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="instances">
                    <TableHead columns=&["Instance", "Version", "Started", "Last heard", "State"] />
                    <tbody>
                        {instances.into_iter().map(|i| {
                            let (state, class) = match (i.silent, i.caught_up) {
                                (true, _) => ("silent: stopped, or cut off from the database", "text-red-800"),
                                (false, false) => ("catching up with the others", "text-amber-800"),
                                (false, true) => ("up to date", "text-green-800"),
                            };
                            let name = if i.this { format!("{} (this one)", i.name) } else { i.name.clone() };
                            view! {
                                <tr class="border-b border-slate-100" data-instance=i.name data-silent=i.silent>
                                    <td class="p-2 font-mono">{name}</td>
                                    <td class="p-2">{i.version}</td>
                                    <td class="p-2">{crate::format::timestamp(i.started_at)}</td>
                                    <td class="p-2 tabular-nums">{crate::format::ago(i64::try_from(i.last_seen_ms_ago).unwrap_or(i64::MAX))}</td>
                                    <td class=format!("p-2 {class}")>{state}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table></div>
                <p class="text-sm text-slate-600 mt-2">
                    {format!(
                        "Each instance stores a heartbeat every {}; one not heard for {} is shown silent, and forgotten after {}.",
                        crate::format::duration(HEARTBEAT_MS),
                        crate::format::duration(SILENT_AFTER_MS),
                        crate::format::duration(FORGET_AFTER_MS),
                    )}
                </p>
            </section>
        }
    })
}

/// The active exclusive session leases (SPEC §R2.3): which connection each
/// holds, for whom (a hash prefix), at which generation, until when.
#[component]
fn LeaseTable(leases: Vec<LeaseInfo>, tick: RwSignal<u64>) -> impl IntoView {
    if leases.is_empty() {
        return view! {
            <p class="text-slate-500 mt-3" data-testid="session-leases">
                "No connection is leased. An agent with a lease:exclusive key can hold one of its allowed connections for itself (POST /api/v1/session-leases)."
            </p>
        }
        .into_any();
    }
    view! {
        <h3 class="font-medium mt-4 mb-1">"Exclusive leases"</h3>
        <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="session-leases">
            <TableHead columns=&["Connection", "Provider", "Owner", "Generation", "Ends in"] />
            <tbody>
                {leases
                    .into_iter()
                    .map(|l| {
                        let ms = l.remaining_ms;
                        view! {
                            <tr class="border-b border-slate-100" data-lease=l.connection_id>
                                <td class="p-2">{l.connection}</td>
                                <td class="p-2">{l.provider}</td>
                                <td class="p-2 font-mono">{format!("{}…", l.owner_hash)}</td>
                                <td class="p-2" data-generation=l.generation>{l.generation}</td>
                                <td class="p-2"><Countdown ms tick /></td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}

/// How many client sessions each connection holds pinned (SPEC §R2.2).
#[component]
fn PinTable(affinity: SessionAffinityInfo) -> impl IntoView {
    let settings = view! { <a href="/settings/session-affinity" class="text-indigo-700">"Session affinity"</a> };
    if affinity.ttl_ms == 0 {
        return view! {
            <p class="text-slate-500" data-testid="session-pins">
                "Off: every request takes the routing order. Turn it on in " {settings} "."
            </p>
        }
        .into_any();
    }
    let lifetime = crate::format::duration(affinity.ttl_ms);
    if affinity.pins.is_empty() {
        return view! {
            <p class="text-slate-500" data-testid="session-pins">
                {format!(
                    "No session is pinned. When a provider has more than one usable connection, a conversation stays on the connection that served it for {lifetime} after its last request (",
                )}
                {settings}
                ")."
            </p>
        }
        .into_any();
    }
    view! {
        <div data-testid="session-pins">
        <div class="overflow-x-auto"><table class="w-full text-sm">
            <TableHead columns=&["Connection", "Provider", "Pinned sessions"] />
            <tbody>
                {affinity
                    .pins
                    .into_iter()
                    .map(|p| {
                        view! {
                            <tr class="border-b border-slate-100" data-connection=p.connection_id>
                                <td class="p-2">{p.connection}</td>
                                <td class="p-2">{p.provider}</td>
                                <td class="p-2" data-sessions=p.sessions>{p.sessions}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table></div>
        <p class="text-sm text-slate-600 mt-2">
            {format!("A pin lasts {lifetime} after the session's last request — ")}
            {settings}
            "."
        </p>
        </div>
    }
    .into_any()
}

#[component]
fn BreakerTable(rows: Vec<BreakerInfo>, tick: RwSignal<u64>, reset: ServerAction<ResetBreakers>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="text-slate-500" data-testid="breakers">"Every provider circuit breaker is closed."</p> }
            .into_any();
    }
    view! {
        <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="breakers">
            <TableHead columns=&["Provider", "State", "Failures", "Last failure", "Probe in", ""] />
            <tbody>
                {rows
                    .into_iter()
                    .map(|b| {
                        let class = match b.state.as_str() {
                            "OPEN" => "bg-red-100 text-red-800",
                            "HALF_OPEN" | "DEGRADED" => "bg-amber-100 text-amber-800",
                            _ => "bg-green-100 text-green-800",
                        };
                        let last = b.last_failure.as_deref().map_or_else(|| "—".into(), crate::format::utc_time);
                        let provider = b.provider.clone();
                        let reset_label = format!("Reset {}", b.provider);
                        view! {
                            <tr class="border-b border-slate-100" data-breaker=b.provider.clone()>
                                <td class="p-2">{b.provider.clone()}</td>
                                <td class="p-2">
                                    <span class=format!("px-2 py-0.5 rounded-md text-xs font-medium {class}") data-state=b.state.clone()>
                                        {crate::format::breaker_state(&b.state).to_owned()}
                                    </span>
                                </td>
                                <td class="p-2">{b.failure_count}</td>
                                <td class="p-2 text-xs">{last}</td>
                                <td class="p-2">{(b.retry_after_ms > 0).then(|| view! { <Countdown ms=b.retry_after_ms tick /> })}</td>
                                <td class="p-2">
                                    <ActionForm action=reset>
                                        <input type="hidden" name="provider" value=provider />
                                        <button type="submit" class=BUTTON aria-label=reset_label>"Reset"</button>
                                    </ActionForm>
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}
