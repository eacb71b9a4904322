//! `/monitoring/health`: per-provider connection health. Breaker states,
//! countdowns and reset buttons join this page with the resilience engine.

use leptos::prelude::*;
use std::collections::BTreeMap;

use crate::{
    api::get_connections,
    components::{Layout, Loading},
    types::{ConnectionStatus, ConnectionView},
};

#[component]
pub fn HealthPage() -> impl IntoView {
    let connections = Resource::new(|| (), |_| get_connections());
    view! {
        <Layout title="Health">
            <p class="mb-4 p-3 rounded-md bg-amber-50 text-amber-900">
                "Circuit breaker states, countdowns and reset buttons are not available yet; they arrive with the resilience engine."
            </p>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match connections.await {
                        Ok(list) => view! { <ProviderSummary rows=list.connections /> }.into_any(),
                        Err(e) => view! { <p role="alert">{e.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

#[component]
fn ProviderSummary(rows: Vec<ConnectionView>) -> impl IntoView {
    let mut by_provider: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for c in rows {
        let slot = match c.status {
            ConnectionStatus::Active => 0,
            ConnectionStatus::CoolingDown => 1,
            ConnectionStatus::Disabled => 2,
            ConnectionStatus::Terminal => 3,
        };
        by_provider.entry(c.provider).or_default()[slot] += 1;
    }
    if by_provider.is_empty() {
        return view! { <p class="text-slate-500">"No connections yet — add one on the Providers page."</p> }
            .into_any();
    }
    view! {
        <table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="provider-health">
            <thead>
                <tr class="text-left border-b border-slate-200">
                    <th class="p-2">"Provider"</th>
                    <th class="p-2">"Active"</th>
                    <th class="p-2">"Cooling down"</th>
                    <th class="p-2">"Disabled"</th>
                    <th class="p-2">"Terminal"</th>
                </tr>
            </thead>
            <tbody>
                {by_provider
                    .into_iter()
                    .map(|(provider, [a, c, d, t])| {
                        view! {
                            <tr class="border-b border-slate-100">
                                <td class="p-2">{provider}</td>
                                <td class="p-2">{a}</td>
                                <td class="p-2">{c}</td>
                                <td class="p-2">{d}</td>
                                <td class="p-2">{t}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
