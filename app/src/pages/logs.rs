//! `/logs`: recent upstream attempts, filterable by provider and status;
//! refreshes itself every few seconds once hydrated.

use leptos::prelude::*;
use leptos_router::{components::Form, hooks::use_query_map};

use crate::{
    api::get_logs,
    components::{Layout, LoadFailed, Loading, use_ticker},
    format::timestamp,
    types::LogRow,
};

/// How often the list refreshes in the browser.
const REFRESH_MS: u64 = 5000;

#[component]
pub fn LogsPage() -> impl IntoView {
    let query = use_query_map();
    let tick = use_ticker(std::time::Duration::from_millis(REFRESH_MS));
    let logs = Resource::new(
        move || (query.read().get("provider"), query.read().get("status"), tick.get()),
        |(provider, status, _)| get_logs(provider, status),
    );
    view! {
        <Layout title="Logs">
            <Form method="GET" action="" attr:class="flex gap-2 items-end mb-4">
                <label class="flex flex-col text-sm">
                    "Provider"
                    <input name="provider" value=move || query.read().get("provider").unwrap_or_default() class="border border-slate-300 rounded-md px-2 py-1" />
                </label>
                <label class="flex flex-col text-sm">
                    "Status"
                    <input name="status" value=move || query.read().get("status").unwrap_or_default() class="border border-slate-300 rounded-md px-2 py-1 w-24" />
                </label>
                <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white">"Filter"</button>
            </Form>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match logs.await {
                        Ok(list) => view! { <LogTable rows=list.logs /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

#[component]
fn LogTable(rows: Vec<LogRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="text-slate-500">"No requests yet."</p> }.into_any();
    }
    view! {
        <div class="overflow-x-auto"><table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="logs">
            <thead>
                <tr class="text-left border-b border-slate-200">
                    <th class="p-2">"Time (UTC)"</th>
                    <th class="p-2">"Provider / model"</th>
                    <th class="p-2">"Connection"</th>
                    <th class="p-2">"Status"</th>
                    <th class="p-2">"Latency"</th>
                    <th class="p-2">"Tokens in/out"</th>
                    <th class="p-2">"Error"</th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|r| {
                        let tokens = format!("{} / {}", r.prompt_tokens.map_or("–".into(), |t| t.to_string()), r.completion_tokens.map_or("–".into(), |t| t.to_string()));
                        let error = r.error_kind.map(|k| format!("{k}: {}", r.error_message.unwrap_or_default())).unwrap_or_default();
                        let latency = match r.ttfb_ms {
                            Some(t) => format!("{} ms (first byte {t} ms)", r.latency_ms),
                            None => format!("{} ms", r.latency_ms),
                        };
                        view! {
                            <tr class="border-b border-slate-100" data-request-id=r.request_id>
                                <td class="p-2 whitespace-nowrap">{timestamp(r.timestamp)}</td>
                                <td class="p-2">{format!("{}/{}", r.provider, r.model)}{if r.stream { " (stream)" } else { "" }}</td>
                                <td class="p-2 font-mono text-xs">{r.connection_id.unwrap_or_default()}</td>
                                <td class="p-2" data-testid="log-status">{r.status}</td>
                                <td class="p-2">{latency}</td>
                                <td class="p-2">{tokens}</td>
                                <td class="p-2 text-xs text-red-800">{error}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}
