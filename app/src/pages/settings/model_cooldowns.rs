//! The Model Cooldowns card (Settings → Model Lockout): every active model
//! lockout with its remaining time, re-enable one or all. Read-only
//! otherwise; refreshes every few seconds once hydrated.

use leptos::prelude::*;

use crate::{
    api::{ClearModelCooldown, get_model_cooldowns},
    components::{BUTTON, Countdown, LoadFailed, Loading, REFRESH_TICKS, TableHead, action_error, use_ticker},
    types::monitoring::ModelCooldown,
};

#[component]
pub fn ModelCooldownsCard() -> impl IntoView {
    let tick = use_ticker(std::time::Duration::from_secs(1));
    let clear = ServerAction::<ClearModelCooldown>::new();
    let list = Resource::new(move || (tick.get() / REFRESH_TICKS, clear.version().get()), |_| get_model_cooldowns());
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm" data-card="model-cooldowns">
            <div class="flex items-center justify-between mb-2">
                <h2 class="font-semibold">"Model cooldowns"</h2>
                <ActionForm action=clear>
                    <input type="hidden" name="all" value="true" />
                    <button type="submit" class=BUTTON>"Re-enable all"</button>
                </ActionForm>
            </div>
            <p class="text-sm text-slate-600 mb-3">
                "Models locked on one connection after failures. They re-enable themselves when the time runs out or after successes; re-enable one here to try it now."
            </p>
            {action_error(clear)}
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match list.await {
                        Ok(l) => view! { <LockTable items=l.items tick clear /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn LockTable(items: Vec<ModelCooldown>, tick: RwSignal<u64>, clear: ServerAction<ClearModelCooldown>) -> impl IntoView {
    if items.is_empty() {
        return view! { <p class="text-slate-500" data-testid="model-cooldowns">"No model is locked."</p> }.into_any();
    }
    view! {
        <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="model-cooldowns">
            <TableHead columns=&["Provider", "Connection", "Model", "Reason", "Remaining", "Failures", ""] />
            <tbody>
                {items
                    .into_iter()
                    .map(|m| {
                        let [provider, connection, model, key] =
                            [m.provider.clone(), m.connection_id.clone(), m.model.clone(), m.model.clone()];
                        let on = m.connection_name.as_deref().unwrap_or("its connection");
                        let label = format!("Re-enable {} on {on}", m.model);
                        view! {
                            <tr class="border-b border-slate-100" data-model=key>
                                <td class="p-2">{m.provider}</td>
                                <td class="p-2" title=m.connection_id.clone() data-testid="lock-connection">
                                    {m.connection_name.clone().unwrap_or_else(|| "(disabled or deleted)".to_owned())}
                                </td>
                                <td class="p-2">{m.model}</td>
                                <td class="p-2">{m.reason}</td>
                                <td class="p-2"><Countdown ms=m.remaining_ms tick /></td>
                                <td class="p-2">{m.failure_count}</td>
                                <td class="p-2">
                                    <ActionForm action=clear>
                                        <input type="hidden" name="provider" value=provider />
                                        <input type="hidden" name="connection" value=connection />
                                        <input type="hidden" name="model" value=model />
                                        <button type="submit" class=BUTTON aria-label=label>"Re-enable"</button>
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
