//! `/monitoring/cooldowns`, the Cooldown Manager: every provider held
//! back as a whole (breaker, window gate) and every connection excluded
//! right now — cooling down, model-locked or terminal — with the time
//! left. Clear one, a selection, or all of a provider; terminal states
//! are listed but only new credentials (Providers) or an operator reset
//! end them. The cooldown rules are editable inline.

use leptos::prelude::*;
use std::collections::BTreeSet;

use crate::{
    api::{ClearCooldowns, ResetBreakers, get_cooldowns},
    components::{
        BUTTON, CONFIRM_BUTTON, Confirm, Countdown, ErrorDetail, LastError, Layout, LoadFailed, Loading, REFRESH_TICKS,
        TableHead, use_ticker,
    },
    format,
    pages::settings::{SettingsCards, cards::COOLDOWN_RULES_CARD},
    types::monitoring::{CooldownConnection, ExclusionStatus, ProviderExclusion},
};

/// The form the row checkboxes belong to (they sit in the table).
const SELECTION_FORM: &str = "clear-selected";

#[component]
pub fn CooldownsPage() -> impl IntoView {
    let tick = use_ticker(std::time::Duration::from_secs(1));
    let clear = ServerAction::<ClearCooldowns>::new();
    let reset = ServerAction::<ResetBreakers>::new();
    let changes = move || (tick.get() / REFRESH_TICKS, clear.version().get(), reset.version().get());
    let list = Resource::new(changes, |_| get_cooldowns());
    view! {
        <Layout title="Cooldown Manager" summary="What keeps traffic away from a provider or a connection right now, and the way to end it.">
            {LastError::default().track(clear).track_saying(reset, "Breaker reset.").view()}
            <ClearResult clear />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match list.await {
                        Ok(l) => {
                            view! {
                                <HeldProviders rows=l.providers tick reset />
                                <Excluded rows=l.connections tick clear />
                            }
                                .into_any()
                        }
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
            <SettingsCards cards=std::slice::from_ref(&COOLDOWN_RULES_CARD) />
        </Layout>
    }
}

/// What the last clear did (with JS).
#[component]
fn ClearResult(clear: ServerAction<ClearCooldowns>) -> impl IntoView {
    move || {
        clear.value().get().and_then(Result::ok).map(|r| {
            let text = format!(
                "Cleared {}; {} unchanged; {} terminal left as they are; {} lifted.",
                format::count(r.cleared, "connection"),
                r.unchanged,
                r.skipped_terminal,
                format::count(r.lockouts_cleared, "model lockout")
            );
            view! { <p role="status" data-testid="clear-result" class="mb-4 p-3 rounded-md bg-slate-100">{text}</p> }
        })
    }
}

/// Providers held back as a whole, each with its reset.
#[component]
fn HeldProviders(
    rows: Vec<ProviderExclusion>,
    tick: RwSignal<u64>,
    reset: ServerAction<ResetBreakers>,
) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="mb-6 text-slate-500" data-testid="held-providers">"No provider is held back."</p> }
            .into_any();
    }
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <h2 class="font-semibold mb-2">"Providers held back"</h2>
            <div class="overflow-x-auto">
                <table class="w-full text-sm" data-testid="held-providers">
                    <TableHead columns=&["Provider", "Held by", "Time left", "Failures", ""] />
                    <tbody>
                        {rows
                            .into_iter()
                            .map(|p| {
                                let held_by = match p.kind.as_str() {
                                    "window_gate" => "window gate (provider cooldown)".to_owned(),
                                    _ => format!("breaker {}", crate::format::breaker_state(&p.state)),
                                };
                                let [row, cell, input] = std::array::from_fn(|_| p.provider.clone());
                                view! {
                                    <tr class="border-b border-slate-100" data-held-provider=row>
                                        <td class="p-2">{cell}</td>
                                        <td class="p-2">{held_by}</td>
                                        <td class="p-2"><Countdown ms=p.remaining_ms tick /></td>
                                        <td class="p-2">{p.failure_count}</td>
                                        <td class="p-2">
                                            <ActionForm action=reset>
                                                <input type="hidden" name="provider" value=input />
                                                <button type="submit" class=BUTTON aria-label=format!("Reset {}", p.provider)>
                                                    "Reset"
                                                </button>
                                            </ActionForm>
                                        </td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

#[component]
fn Excluded(rows: Vec<CooldownConnection>, tick: RwSignal<u64>, clear: ServerAction<ClearCooldowns>) -> impl IntoView {
    if rows.is_empty() {
        return view! {
            <p class="mb-6 text-slate-500" data-testid="cooldowns">"No connection is excluded: every one can serve."</p>
        }
        .into_any();
    }
    let providers: BTreeSet<String> = rows.iter().map(|r| r.provider.clone()).collect();
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="cooldowns">
                <TableHead columns=&["", "Provider", "Connection", "Status", "Back in", "Backoff level", "Last error", "Model locks", ""] />
                <tbody>{rows.into_iter().map(|r| view! { <Row r tick clear /> }).collect_view()}</tbody>
            </table></div>
            <ClearForms providers clear />
        </section>
    }
    .into_any()
}

/// "Clear selected" (the row checkboxes belong to it) and "Clear all of
/// provider".
#[component]
fn ClearForms(providers: BTreeSet<String>, clear: ServerAction<ClearCooldowns>) -> impl IntoView {
    view! {
        <div class="flex flex-wrap gap-4 mt-3 items-end">
            <ActionForm action=clear attr:id=SELECTION_FORM>
                <button type="submit" class=BUTTON>"Clear selected"</button>
            </ActionForm>
            <Confirm
                verb="Clear all"
                subject="of a provider".into()
                question="Clear the cooldowns and model lockouts of every connection of the provider? They are tried again at once, even those that just failed; terminal ones stay as they are.".into()
            >
                <ActionForm action=clear attr:class="flex gap-2 items-end">
                    <input type="hidden" name="all" value="true" />
                    <label class="flex flex-col text-sm">
                        "Provider"
                        <select name="provider" class="border border-slate-300 rounded-md px-2 py-1">
                            {providers
                                .into_iter()
                                .map(|p| {
                                    let value = p.clone();
                                    view! { <option value=value>{p}</option> }
                                })
                                .collect_view()}
                        </select>
                    </label>
                    <button type="submit" class=CONFIRM_BUTTON>"Clear all of provider"</button>
                </ActionForm>
            </Confirm>
        </div>
    }
    .into_any()
}

#[component]
fn Row(r: CooldownConnection, tick: RwSignal<u64>, clear: ServerAction<ClearCooldowns>) -> impl IntoView {
    let terminal = r.status == ExclusionStatus::Terminal;
    let status = match (r.status, r.terminal_status.as_deref()) {
        (ExclusionStatus::Terminal, Some(t)) => format!("terminal: {t}"),
        (ExclusionStatus::Terminal, None) => "terminal".to_owned(),
        (ExclusionStatus::CoolingDown, _) => "cooling down".to_owned(),
        (ExclusionStatus::ModelLocked, _) => "model locked".to_owned(),
    };
    let locks = r.lockouts.iter().map(|l| format!("{} ({})", l.model, l.reason)).collect::<Vec<_>>().join(", ");
    let error = [r.last_error_type.clone(), r.last_error.clone()].into_iter().flatten().collect::<Vec<_>>().join(": ");
    let [id_row, id_select, id_clear] = std::array::from_fn(|_| r.id.clone());
    let status_attr = status.clone();
    view! {
        <tr class="border-b border-slate-100 align-top" data-connection-id=id_row data-status=status_attr>
            <td class="p-2">
                {(!terminal)
                    .then(|| {
                        view! {
                            <input type="checkbox" name="connection_ids[]" value=id_select form=SELECTION_FORM aria-label=format!("Select {}", r.name) />
                        }
                    })}
            </td>
            <td class="p-2">{r.provider.clone()}</td>
            <td class="p-2">{r.name.clone()}</td>
            <td class="p-2">{status}</td>
            <td class="p-2">{(r.cooldown_remaining_ms > 0).then(|| view! { <Countdown ms=r.cooldown_remaining_ms tick /> })}</td>
            <td class="p-2">{r.backoff_level}</td>
            <td class="p-2 text-xs">{(!error.is_empty()).then(|| view! { <ErrorDetail text=error /> })}</td>
            <td class="p-2 text-xs">{locks}</td>
            <td class="p-2">
                {if terminal {
                    // A full page load: the browser scrolls to the row.
                    view! { <a href=format!("/providers#connection-{}", r.id) rel="external" class="text-indigo-700 text-xs">"Reconnect on Providers"</a> }.into_any()
                } else {
                    view! {
                        <ActionForm action=clear>
                            <input type="hidden" name="connection_ids[]" value=id_clear />
                            <button type="submit" class=BUTTON aria-label=format!("Clear {}", r.name)>"Clear"</button>
                        </ActionForm>
                    }
                        .into_any()
                }}
            </td>
        </tr>
    }
    .into_any()
}
