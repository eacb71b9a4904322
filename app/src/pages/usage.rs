//! `/usage`: requests and tokens per model, API key, connection or day
//! over the last day, week or month — a bar chart of the largest groups
//! and a table of all of them, from the request log (`GET /api/usage`).
//! The grouping and the window are links (`?by=&window=`), so the page is
//! whole without JavaScript.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    api::get_usage,
    components::{ChoiceLink, Layout, LoadFailed, Loading, REFRESH_TICKS, TableHead, token_count, use_ticker},
    types::usage::{USAGE_WINDOWS, UsageGroup, UsageGroupBy, UsageReport},
};

/// The chart shows this many groups at most (the table has them all).
const CHART_ROWS: usize = 12;
const WIDTH: f64 = 600.0;
const LABEL_W: f64 = 170.0;
const VALUE_W: f64 = 70.0;
const ROW_H: f64 = 22.0;

#[component]
pub fn UsagePage() -> impl IntoView {
    let query = use_query_map();
    let by = Memo::new(move |_| query.read().get("by").unwrap_or_else(|| "model".into()));
    let window = Memo::new(move |_| query.read().get("window").unwrap_or_else(|| USAGE_WINDOWS[0].0.to_owned()));
    let tick = use_ticker(std::time::Duration::from_secs(1));
    let report = Resource::new(
        move || (by.get(), window.get(), tick.get() / (REFRESH_TICKS * 6)),
        |(b, w, _)| get_usage(Some(b), Some(w)),
    );
    view! {
        <Layout title="Usage" summary="Requests and tokens through the gateway, as the upstreams reported them">
            <section class="mb-6 bg-white p-4 rounded-md shadow-sm" data-testid="usage">
                <div class="flex flex-wrap gap-x-6 gap-y-2 mb-3 text-sm">
                    <nav aria-label="Group usage" class="flex flex-wrap gap-3">
                        {UsageGroupBy::ALL
                            .into_iter()
                            .map(|g| {
                                let current = move || by.get() == g.as_str();
                                let href = move || format!("?by={}&window={}", g.as_str(), window.get());
                                view! { <ChoiceLink href current label=g.label() /> }
                            })
                            .collect_view()}
                    </nav>
                    <nav aria-label="Usage window" class="flex flex-wrap gap-3">
                        {USAGE_WINDOWS
                            .into_iter()
                            .map(|(key, label, _)| {
                                let current = move || window.get() == key;
                                let href = move || format!("?by={}&window={key}", by.get());
                                view! { <ChoiceLink href current label /> }
                            })
                            .collect_view()}
                    </nav>
                </div>
                <Transition fallback=Loading>
                    {move || Suspend::new(async move {
                        match report.await {
                            Ok(r) => view! { <Report r /> }.into_any(),
                            Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                        }
                    })}
                </Transition>
                <p class="text-xs text-slate-500 mt-3 max-w-prose">
                    "A request counts once, however many attempts it took; its tokens are what the upstream that answered reported (cached: input read from the provider's prompt cache). Requests the gateway refused itself carry no tokens. The request log's retention bounds how far back this reaches."
                </p>
            </section>
        </Layout>
    }
}

#[component]
fn Report(r: UsageReport) -> impl IntoView {
    if r.groups.is_empty() {
        return view! { <p class="text-sm text-slate-600" data-testid="usage-empty">"No requests in this window."</p> }
            .into_any();
    }
    let mut groups = r.groups;
    if r.group_by == UsageGroupBy::Day {
        groups.sort_by(|a, b| a.group.cmp(&b.group));
    }
    let by = r.group_by;
    view! {
        <UsageChart groups=groups.iter().take(CHART_ROWS).cloned().collect() />
        <div class="overflow-x-auto">
            <table class="w-full text-sm mt-3" data-testid="usage-table">
                <TableHead columns=&["", "Requests", "Input tokens", "Cached", "Output tokens"] />
                <tbody>
                    {groups
                        .into_iter()
                        .map(|g| {
                            let label = label(by, &g);
                            view! {
                                <tr class="border-b border-slate-100" data-group=g.group.clone().unwrap_or_default()>
                                    <td class="p-2 break-words">{label}</td>
                                    <td class="p-2 tabular-nums">{g.requests}</td>
                                    <td class="p-2 tabular-nums">{g.input_tokens}</td>
                                    <td class="p-2 tabular-nums">{g.cached_tokens}</td>
                                    <td class="p-2 tabular-nums">{g.output_tokens}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// How a group is named: a key or connection by its name, a request
/// without one as such.
fn label(by: UsageGroupBy, g: &UsageGroup) -> String {
    match (&g.group, &g.name) {
        (Some(_), Some(name)) => name.clone(),
        (Some(id), None) if matches!(by, UsageGroupBy::Key | UsageGroupBy::Connection) => format!("{id} (deleted)"),
        (Some(id), None) => id.clone(),
        (None, _) => match by {
            UsageGroupBy::Key => "without an API key".into(),
            UsageGroupBy::Connection => "answered by the gateway itself".into(),
            _ => "unknown".into(),
        },
    }
}

/// Horizontal bars: each group's tokens, input then output (its requests
/// when no upstream reported tokens); the exact figures on hover.
#[component]
fn UsageChart(groups: Vec<UsageGroup>) -> impl IntoView {
    let tokens = groups.iter().any(|g| g.input_tokens + g.output_tokens > 0);
    let total = |g: &UsageGroup| if tokens { g.input_tokens + g.output_tokens } else { g.requests };
    let max = groups.iter().map(total).max().unwrap_or(1).max(1) as f64;
    let bar_w = WIDTH - LABEL_W - VALUE_W;
    let height = ROW_H * groups.len() as f64;
    let unit = if tokens { "tokens (input, then output)" } else { "requests" };
    view! {
        <figure>
            <svg viewBox=format!("0 0 {WIDTH} {height}") class="w-full max-w-3xl" role="img" aria-label=format!("Usage chart: {unit} per group") data-testid="usage-chart">
                {groups
                    .into_iter()
                    .enumerate()
                    .map(|(i, g)| {
                        let y = ROW_H * i as f64;
                        let scale = |n: i64| bar_w * n as f64 / max;
                        let (first, second) = if tokens { (g.input_tokens, g.output_tokens) } else { (g.requests, 0) };
                        let title = format!(
                            "{}: {} requests, {} input tokens ({} cached), {} output tokens",
                            g.name.clone().or(g.group.clone()).unwrap_or_else(|| "none".into()),
                            g.requests,
                            g.input_tokens,
                            g.cached_tokens,
                            g.output_tokens
                        );
                        let name: String = g.name.clone().or(g.group.clone()).unwrap_or_else(|| "none".into()).chars().take(26).collect();
                        view! {
                            <g>
                                <title>{title}</title>
                                <text x="0" y=y + 15.0 class="fill-slate-700 text-[11px]">{name}</text>
                                <rect x=LABEL_W y=y + 4.0 width=scale(first) height="14" class="fill-indigo-500" />
                                <rect x=LABEL_W + scale(first) y=y + 4.0 width=scale(second) height="14" class="fill-sky-300" />
                                <text x=LABEL_W + scale(first + second) + 4.0 y=y + 15.0 class="fill-slate-600 text-[11px]">
                                    {token_count(u64::try_from(total(&g)).unwrap_or(0))}
                                </text>
                            </g>
                        }
                    })
                    .collect_view()}
            </svg>
            <figcaption class="text-xs text-slate-500">{format!("The largest groups by {unit}; the table lists every group.")}</figcaption>
        </figure>
    }
}
