//! `/logs`: recent upstream attempts and the requests the gateway refused
//! itself, newest first, with connections by name and times relative to
//! the answer (absolute on hover). Filters: provider, connection and model
//! (case-insensitive substrings), status class and time window; older
//! pages by a cursor. `?request=<id>` shows one request's attempt trail,
//! oldest first. Refreshes itself every few seconds once hydrated (the
//! first page only).

use leptos::prelude::*;
use leptos_router::{
    components::Form,
    hooks::{query_signal, use_query_map},
};

use crate::{
    api::get_logs,
    components::{ErrorDetail, Layout, LoadFailed, Loading, use_ticker},
    format::{ago, query_escape, timestamp},
    types::{LOG_WINDOWS, LogList, LogRow, LogSearch, StatusClass},
};

/// How often the first page refreshes in the browser.
const REFRESH_MS: u64 = 5000;
const INPUT: &str = "border border-slate-300 rounded-md px-2 py-1";

/// The search the page's query string describes.
fn search_of(query: &leptos_router::params::ParamsMap) -> LogSearch {
    let text = |k: &str| query.get(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    LogSearch {
        provider: text("provider"),
        connection: text("connection"),
        model: text("model"),
        status: text("status").and_then(|s| StatusClass::parse(&s)),
        window: text("window"),
        before: text("before").and_then(|b| b.parse().ok()),
        request: text("request"),
    }
}

/// The query string of `search` (for the older page's link).
fn query_of(search: &LogSearch) -> String {
    let pairs = [
        ("provider", search.provider.clone()),
        ("connection", search.connection.clone()),
        ("model", search.model.clone()),
        ("status", search.status.map(|s| s.as_str().to_owned())),
        ("window", search.window.clone()),
        ("before", search.before.map(|b| b.to_string())),
        ("request", search.request.clone()),
    ];
    pairs.into_iter().filter_map(|(k, v)| v.map(|v| format!("{k}={}", query_escape(&v)))).collect::<Vec<_>>().join("&")
}

#[component]
pub fn LogsPage() -> impl IntoView {
    let query = use_query_map();
    let tick = use_ticker(std::time::Duration::from_millis(REFRESH_MS));
    let search = Memo::new(move |_| search_of(&query.read()));
    // Older pages stay put; the first page follows new requests.
    let logs = Resource::new(
        move || (search.get(), if search.with(|s| s.before.is_none()) { tick.get() } else { 0 }),
        |(s, _)| get_logs(s.provider, s.connection, s.model, s.status, s.window, s.before, s.request),
    );
    let trail = move || search.with(|s| s.request.clone());
    view! {
        <Layout title="Logs" summary="Every upstream attempt and every request the gateway refused itself, newest first.">
            {move || match trail() {
                Some(id) => view! { <TrailHeading id /> }.into_any(),
                None => view! { <Filters search /> }.into_any(),
            }}
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match logs.await {
                        Ok(list) => view! { <LogTable list search=search.get_untracked() /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

#[component]
fn TrailHeading(id: String) -> impl IntoView {
    view! {
        <div class="mb-4">
            <a href="/logs" class="text-sm text-indigo-700">"← All requests"</a>
            <h2 class="text-lg font-semibold mt-1" data-testid="trail-heading">
                "Attempt trail of request " <code class="text-base">{id}</code>
            </h2>
            <p class="text-sm text-slate-600">"Every attempt this request made, oldest first: the connection, what it answered, why the gateway moved on, and how long it took."</p>
        </div>
    }
}

#[component]
/// The filter form. Each input follows the address (`prop:` as well as
/// the attribute): once typed in, an input's value no longer follows its
/// attribute, so "Clear filters" would leave the old text in it and the
/// next Filter would apply it again.
fn Filters(search: Memo<LogSearch>) -> impl IntoView {
    let (status, _) = query_signal::<String>("status");
    let (window, _) = query_signal::<String>("window");
    let text = move |f: fn(&LogSearch) -> Option<String>| move || search.with(f).unwrap_or_default();
    view! {
        <Form method="GET" action="" attr:class="flex flex-wrap gap-2 items-end mb-4" attr:data-testid="log-filters">
            <label class="flex flex-col text-sm">
                "Provider"
                <input name="provider" value=text(|s| s.provider.clone()) prop:value=text(|s| s.provider.clone()) class=INPUT />
            </label>
            <label class="flex flex-col text-sm">
                "Connection"
                <input name="connection" value=text(|s| s.connection.clone()) prop:value=text(|s| s.connection.clone()) class=INPUT />
            </label>
            <label class="flex flex-col text-sm">
                "Model"
                <input name="model" value=text(|s| s.model.clone()) prop:value=text(|s| s.model.clone()) class=INPUT />
            </label>
            <label class="flex flex-col text-sm">
                "Status"
                <select name="status" class=INPUT>
                    <option value="">"any"</option>
                    {StatusClass::ALL
                        .into_iter()
                        .map(|c| {
                            let chosen = move || status.get().as_deref() == Some(c.as_str());
                            view! { <option value=c.as_str() selected=chosen prop:selected=chosen>{c.as_str()}</option> }
                        })
                        .collect_view()}
                </select>
            </label>
            <label class="flex flex-col text-sm">
                "Time"
                <select name="window" class=INPUT>
                    <option value="">"all kept"</option>
                    {LOG_WINDOWS
                        .into_iter()
                        .map(|(key, label, _)| {
                            let chosen = move || window.get().as_deref() == Some(key);
                            view! { <option value=key selected=chosen prop:selected=chosen>{label}</option> }
                        })
                        .collect_view()}
                </select>
            </label>
            <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white">"Filter"</button>
            <a href="/logs" class="text-sm text-indigo-700 py-1">"Clear filters"</a>
        </Form>
    }
}

#[component]
fn LogTable(list: LogList, search: LogSearch) -> impl IntoView {
    if list.logs.is_empty() {
        let text = if search.narrows() { "No requests match these filters." } else { "No requests yet." };
        return view! { <p class="text-slate-500" data-testid="logs-empty">{text}</p> }.into_any();
    }
    let older =
        list.older.map(|before| format!("/logs?{}", query_of(&LogSearch { before: Some(before), ..search.clone() })));
    let in_trail = search.request.is_some();
    let newest = search.before.is_some().then(|| format!("/logs?{}", query_of(&LogSearch { before: None, ..search })));
    let now = list.generated_at;
    view! {
        <div class="overflow-x-auto"><table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="logs">
            <thead>
                <tr class="text-left border-b border-slate-200">
                    <th class="p-2">"When"</th>
                    <th class="p-2">"Provider / model"</th>
                    <th class="p-2">"Connection"</th>
                    <th class="p-2">"Status"</th>
                    <th class="p-2">"Latency"</th>
                    <th class="p-2">"Tokens in/out"</th>
                    <th class="p-2">"Error"</th>
                    {(!in_trail).then(|| view! { <th class="p-2">"Trail"</th> })}
                </tr>
            </thead>
            <tbody>{list.logs.into_iter().map(|r| view! { <LogLine r now in_trail /> }).collect_view()}</tbody>
        </table></div>
        <nav class="flex gap-4 mt-3 text-sm" aria-label="Pages">
            {newest.map(|href| view! { <a href=href class="text-indigo-700">"← Newest"</a> })}
            {older.map(|href| view! { <a href=href class="text-indigo-700" data-testid="older">"Older →"</a> })}
        </nav>
    }
    .into_any()
}

#[component]
fn LogLine(r: LogRow, now: i64, in_trail: bool) -> impl IntoView {
    let tokens = format!(
        "{} / {}",
        r.prompt_tokens.map_or("–".into(), |t| t.to_string()),
        r.completion_tokens.map_or("–".into(), |t| t.to_string())
    );
    let latency = match r.ttfb_ms {
        Some(t) => format!("{} ms (first byte {t} ms)", r.latency_ms),
        None => format!("{} ms", r.latency_ms),
    };
    // The gateway's own hold before the attempt comes first: it is time the client waited too.
    let latency = if r.wait_ms > 0 { format!("waited {} ms · {latency}", r.wait_ms) } else { latency };
    let connection = match (r.connection_name, r.connection_id) {
        (Some(name), _) => name.into_any(),
        (None, Some(_)) => "(deleted)".into_any(),
        (None, None) if r.refused => view! { <span class="text-amber-800">"refused by the gateway"</span> }.into_any(),
        (None, None) => "—".into_any(),
    };
    let target = match (r.provider.is_empty(), r.model.is_empty()) {
        (false, _) => format!("{}/{}", r.provider, r.model),
        (true, false) => r.model,
        (true, true) => "—".to_owned(),
    };
    let trail = (!in_trail).then(|| {
        let label = format!("Attempt trail of request {}", r.request_id);
        let href = format!("/logs?request={}", query_escape(&r.request_id));
        view! { <td class="p-2"><a href=href aria-label=label class="text-indigo-700 whitespace-nowrap">"Attempts"</a></td> }
    });
    view! {
        <tr class="border-b border-slate-100" data-request-id=r.request_id.clone() data-refused=r.refused.then_some("true")>
            <td class="p-2 whitespace-nowrap" title=format!("{} UTC", timestamp(r.timestamp))>{ago(now - r.timestamp)}</td>
            <td class="p-2">{target}{if r.stream { " (stream)" } else { "" }}</td>
            <td class="p-2" data-testid="log-connection">{connection}</td>
            <td class="p-2" data-testid="log-status">{r.status}</td>
            <td class="p-2">{latency}</td>
            <td class="p-2">{tokens}</td>
            <td class="p-2 text-xs text-red-800" data-testid="log-error">
                {r.error_kind.map(|kind| view! { <ErrorDetail text=format!("{kind}: {}", r.error_message.unwrap_or_default()) /> })}
            </td>
            {trail}
        </tr>
    }
}
