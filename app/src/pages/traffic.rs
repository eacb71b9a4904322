//! Health's traffic section: tiles for the last hour against the hour
//! before, then per provider its requests by outcome, latency and breaker
//! over the last hour or day (`?window=`), its connections on expand.
//! Rendered on the server (readable without JS), refreshed after hydration.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    api::get_traffic,
    components::{
        ChartLegend, ChartTable, ChoiceLink, Frame, LoadFailed, Loading, REFRESH_TICKS, TrafficChart, token_count,
    },
    types::traffic::{ProviderTraffic, TRAFFIC_WINDOWS, TrafficPoint, TrafficReport},
};

#[component]
pub fn TrafficSection(tick: RwSignal<u64>) -> impl IntoView {
    let query = use_query_map();
    let window = Memo::new(move |_| query.read().get("window").unwrap_or_else(|| TRAFFIC_WINDOWS[0].0.to_owned()));
    let report = Resource::new(move || (window.get(), tick.get() / REFRESH_TICKS), |(w, _)| get_traffic(Some(w)));
    // Which disclosures are open, kept across refreshes.
    let open = RwSignal::new(std::collections::HashSet::<String>::new());
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm" data-testid="traffic">
            <div class="flex flex-wrap items-center justify-between gap-2 mb-2">
                <h2 class="font-semibold">"Traffic"</h2>
                <nav aria-label="Traffic window" class="text-sm flex gap-3">
                    {TRAFFIC_WINDOWS
                        .into_iter()
                        .map(|(key, label, _, _)| {
                            let current = move || window.get() == key;
                            view! { <ChoiceLink href=move || format!("?window={key}") current label /> }
                        })
                        .collect_view()}
                </nav>
            </div>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match report.await {
                        Ok(r) => view! { <Report r open /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn Report(r: TrafficReport, open: RwSignal<std::collections::HashSet<String>>) -> impl IntoView {
    let buckets = r.providers.first().map_or(0, |p| p.series.points.len());
    let frame = Frame { start_ms: r.start_ms, bucket_ms: r.bucket_ms, buckets };
    view! {
        <Tiles now=r.last_hour before=r.previous_hour window=r.window.clone() />
        {if r.providers.is_empty() {
            view! {
                <p class="text-slate-500" data-testid="traffic-empty">
                    "No upstream requests in this window. Point an agent at the gateway ("
                    <a href="/get-started" class="text-indigo-700">"Get started"</a>
                    ") and its traffic shows here per provider."
                </p>
            }
            .into_any()
        } else {
            view! {
                <ChartLegend />
                {r.providers.into_iter().map(|p| view! { <ProviderChart p frame open /> }).collect_view()}
            }
            .into_any()
        }}
    }
}

/// A change against the hour before, signed.
fn delta(now: f64, before: f64, unit: &str, digits: usize) -> String {
    let d = now - before;
    let sign = if d > 0.0 {
        "+"
    } else if d < 0.0 {
        "−"
    } else {
        "±"
    };
    format!("{sign}{:.digits$}{unit} vs the hour before", d.abs())
}

#[component]
fn Tiles(now: TrafficPoint, before: TrafficPoint, window: String) -> impl IntoView {
    // The tiles always hold the last hour; the charts follow the window.
    let (_, label, _, _) = crate::types::traffic::traffic_window(&window);
    let caption = if window == TRAFFIC_WINDOWS[0].0 {
        "The last hour, against the hour before:".to_owned()
    } else {
        format!("The last hour, against the hour before (the charts below cover the {label}):")
    };
    let p95 = |p: &TrafficPoint| f64::from(p.p95_ms.unwrap_or(0));
    let wait = |p: &TrafficPoint| f64::from(p.wait_p95_ms.unwrap_or(0));
    let tokens = |p: &TrafficPoint| (p.input_tokens + p.output_tokens) as f64;
    let tiles = [
        (
            "Requests (last hour)",
            now.requests().to_string(),
            delta(f64::from(now.requests()), f64::from(before.requests()), "", 0),
        ),
        (
            "Error rate",
            format!("{:.1} %", now.error_rate() * 100.0),
            delta(now.error_rate() * 100.0, before.error_rate() * 100.0, " pt", 1),
        ),
        (
            "p95 latency",
            now.p95_ms.map_or("–".to_owned(), |ms| format!("{ms} ms")),
            delta(p95(&now), p95(&before), " ms", 0),
        ),
        (
            "p95 gateway wait",
            now.wait_p95_ms.map_or("–".to_owned(), |ms| format!("{ms} ms")),
            delta(wait(&now), wait(&before), " ms", 0),
        ),
        (
            "Tokens (last hour)",
            format!("{} in · {} out", token_count(now.input_tokens), token_count(now.output_tokens)),
            delta(tokens(&now), tokens(&before), "", 0),
        ),
    ];
    view! {
        <p class="text-xs text-slate-600 mb-1" data-testid="traffic-tiles-caption">{caption}</p>
        <ul class="grid grid-cols-1 sm:grid-cols-2 lg:grid-cols-5 gap-3 mb-4" data-testid="traffic-tiles" title="The gateway's wait is its own hold before an attempt: request queue, concurrency slot, cooldown and combo waits. Tokens are what the upstreams' answers reported, input and output.">
            {tiles
                .into_iter()
                .map(|(label, value, change)| {
                    view! {
                        <li class="border border-slate-200 rounded-md p-3">
                            <p class="text-xs text-slate-600">{label}</p>
                            <p class="text-xl font-semibold tabular-nums" data-tile=label>{value}</p>
                            <p class="text-xs text-slate-500 tabular-nums">{change}</p>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// Whether the disclosure `key` is open (kept across refreshes).
fn kept(open: RwSignal<std::collections::HashSet<String>>, key: String) -> impl Fn() -> bool + Send + Sync + 'static {
    move || open.with(|o| o.contains(&key))
}

/// Remembers a disclosure's state when the user toggles it.
fn toggled(open: RwSignal<std::collections::HashSet<String>>, key: String) -> impl Fn(leptos::ev::Event) + 'static {
    move |ev| {
        let is_open = event_target::<leptos::web_sys::Element>(&ev).has_attribute("open");
        open.update(|o| {
            if is_open {
                o.insert(key.clone());
            } else {
                o.remove(&key);
            }
        });
    }
}

#[component]
fn ProviderChart(p: ProviderTraffic, frame: Frame, open: RwSignal<std::collections::HashSet<String>>) -> impl IntoView {
    let total = crate::components::describe(&p.series.total);
    let connections = p.connections.len();
    view! {
        <div class="mt-4" data-traffic-provider=p.provider.clone()>
            <h3 class="font-medium">{p.provider.clone()}</h3>
            <p class="text-sm text-slate-600 tabular-nums" data-testid="traffic-total">{total}</p>
            <TrafficChart label=format!("Requests and latency of {}", p.provider) series=p.series.clone() frame breaker=p.breaker />
            <ChartTable series=p.series frame />
            <details class="text-sm mt-1" open=kept(open, format!("{}/connections", p.provider)) on:toggle=toggled(open, format!("{}/connections", p.provider))>
                <summary class="cursor-pointer text-indigo-700">{format!("Connections ({connections})")}</summary>
                {p
                    .connections
                    .into_iter()
                    .map(|c| {
                        let name = c.name.unwrap_or_else(|| "(deleted)".to_owned());
                        view! {
                            <div class="mt-2 pl-3 border-l border-slate-200" data-traffic-connection=name.clone()>
                                <p class="font-medium">{name.clone()}</p>
                                <p class="text-slate-600 tabular-nums">{crate::components::describe(&c.series.total)}</p>
                                <TrafficChart label=format!("Requests and latency of connection {name}") series=c.series frame />
                            </div>
                        }
                    })
                    .collect_view()}
            </details>
        </div>
    }
}
