//! `/combos`: the combos — named virtual models that fail over across
//! providers in their strategy's order — and the aliases. Create, edit,
//! delete; the targets are typed one per line and checked as they are
//! typed, with the same rules the server applies on save. Works as plain
//! form posts too.

use leptos::prelude::*;

use std::{collections::BTreeMap, sync::Arc};

use super::combo_targets::{Picks, TargetList, TargetPicker, TargetRows, connection_names};
use crate::{
    api::{
        DeleteAlias, DeleteCombo, SaveAlias, SaveCombo, get_aliases, get_combo_status, get_combos, get_connections,
        get_served_models,
    },
    components::{
        CONFIRM_BUTTON, Confirm, Countdown, EditPanel, LastError, Layout, LoadFailed, Loading, REFRESH_TICKS, edited,
        reset_on_success, use_ticker,
    },
    types::{
        CatalogEntry,
        alias::Alias,
        combo::{Combo, ComboStatusList, ConfigForm, Strategy, format_targets, parse_strategy, parse_targets},
        settings::human_ms,
        validation::FieldError,
    },
};

const INPUT: &str = "border border-slate-300 rounded-md px-2 py-1";
const BUTTON: &str = "px-2 py-1 rounded-md border border-slate-300 bg-white hover:bg-slate-100 text-sm";

#[component]
pub fn CombosPage() -> impl IntoView {
    let save = ServerAction::<SaveCombo>::new();
    let delete = ServerAction::<DeleteCombo>::new();
    let combos = Resource::new(move || (save.version().get(), delete.version().get()), |_| get_combos());
    // What each combo's targets are doing now, refreshed like Health.
    let tick = use_ticker(std::time::Duration::from_secs(1));
    let status = Resource::new(move || (tick.get() / REFRESH_TICKS, save.version().get()), |_| get_combo_status());
    let live = Live { status, tick };
    let editing = edited();
    let served = Resource::new(|| (), |_| get_served_models());
    let connections = Resource::new(|| (), |_| get_connections());
    provide_context(Picks { served, connections, combos });
    let save_alias = ServerAction::<SaveAlias>::new();
    let delete_alias = ServerAction::<DeleteAlias>::new();
    let aliases = Resource::new(move || (save_alias.version().get(), delete_alias.version().get()), |_| get_aliases());
    view! {
        <Layout title="Combos">
            {LastError::default()
                .track_saying(save, "Combo saved.")
                .track_saying(delete, "Combo deleted.")
                .track_saying(save_alias, "Alias saved.")
                .track_saying(delete_alias, "Alias deleted.")
                .view()}
            <p class="mb-4 text-sm text-slate-600">
                "A combo is a model name your clients send (\"model\": \"coding\"); the gateway tries its targets in the order its strategy gives, skipping what is cooling, locked or behind an open breaker, until one answers."
            </p>
            <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
                <h2 class="font-semibold mb-2">"Create a combo"</h2>
                <ComboForm combo=None save />
            </section>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match combos.await {
                        Ok(list) => {
                            let names = connection_names(connections.await);
                            view! { <ComboTable combos=list.combos names save delete live editing /> }.into_any()
                        }
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
            <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
                <h2 class="font-semibold mb-2">"Aliases"</h2>
                <p class="text-xs text-slate-600 mb-2">
                    "Another name clients may send for a provider/model or a combo, e.g. fast → groq/llama-3.3-70b."
                </p>
                <ActionForm action=save_alias attr:class="flex flex-wrap gap-2 items-end mb-3" attr:data-testid="add-alias">
                    <label class="flex flex-col text-sm">
                        "Alias"
                        <input name="alias" required class=INPUT placeholder="fast" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "Stands for (provider/model or combo)"
                        <input name="model" required class=INPUT placeholder="groq/llama-3.3-70b" />
                    </label>
                    <button type="submit" class=BUTTON>"Save alias"</button>
                </ActionForm>
                <Transition fallback=Loading>
                    {move || Suspend::new(async move {
                        let list = aliases.await.map(|l| l.aliases).unwrap_or_default();
                        view! { <AliasTable aliases=list delete=delete_alias /> }
                    })}
                </Transition>
            </section>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let entries = served.await.unwrap_or_default();
                    view! { <KnownModels entries /> }
                })}
            </Transition>
        </Layout>
    }
}

/// The create form (`combo: None`) or the edit form of one combo.
#[component]
fn ComboForm(combo: Option<Combo>, save: ServerAction<SaveCombo>) -> impl IntoView {
    let editing = combo.is_some();
    let name = combo.as_ref().map(|c| c.name.clone());
    let current = combo.as_ref().map_or(Strategy::RECOMMENDED, |c| c.strategy);
    let lines = combo.as_ref().map(|c| format_targets(&c.targets)).unwrap_or_default();
    let text = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
    let cfg = combo.as_ref().map(|c| c.config.clone()).unwrap_or_default();
    let config = RwSignal::new(ConfigForm {
        combo_timeout_ms: cfg.combo_timeout_ms.map(human_ms).unwrap_or_default(),
        judge_model: cfg.judge_model.clone().unwrap_or_default(),
        max_retries: text(cfg.max_retries.map(u64::from)),
        retry_delay_ms: cfg.retry_delay_ms.map(human_ms).unwrap_or_default(),
    });
    // Each form's inputs need their own ids (the create form, each edit form).
    let form_id = name.clone().unwrap_or_else(|| "new".to_owned());
    let chosen = RwSignal::new(current);
    let not_chosen = move |s: Strategy| move || chosen.get() != s;
    let problem = RwSignal::new(None::<String>);
    let typed = RwSignal::new(lines.clone());
    // The config fields checked as they are typed, by the rules the server applies.
    let config_errors = Memo::new(move |_| config.get().config(chosen.get(), cfg.clone()).err().unwrap_or_default());
    let input = move |label: &'static str,
                      name: &'static str,
                      field: &'static str,
                      get: fn(&ConfigForm) -> String,
                      set: fn(&mut ConfigForm, String)| {
        view! {
            <ConfigInput
                label
                name
                field
                id=format!("{form_id}-{name}")
                value=get(&config.get_untracked())
                errors=config_errors
                on_input=Callback::new(move |v: String| config.update(|c| set(c, v)))
            />
        }
    };
    // The rows replace the text once the checks and pickers run (hydrated).
    let live = RwSignal::new(false);
    Effect::new(move |_| live.set(true));
    // A saved new combo leaves an empty form behind (an edit form folds away).
    let form = NodeRef::<leptos::html::Form>::new();
    if !editing {
        reset_on_success(save, form);
        #[cfg(target_arch = "wasm32")]
        Effect::new(move |_| {
            if let Some(Ok(_)) = save.value().get() {
                typed.set(String::new());
                chosen.set(Strategy::Priority);
                config.set(ConfigForm::default());
            }
        });
    }
    view! {
        <ActionForm action=save node_ref=form attr:class="flex flex-col gap-2" attr:data-testid=if editing { "edit-combo" } else { "create-combo" }>
            {name.clone().map(|n| view! { <input type="hidden" name="replace" value=n /> })}
            <div class="flex flex-wrap gap-3 items-end">
                <label class="flex flex-col text-sm">
                    "Name (the model clients send)"
                    <input name="name" required value=name.clone() readonly=editing class=INPUT placeholder="coding" />
                </label>
                <label class="flex flex-col text-sm">
                    "Strategy"
                    <select
                        name="strategy"
                        class=INPUT
                        on:change=move |ev| {
                            if let Ok(s) = parse_strategy(&event_target_value(&ev)) {
                                chosen.set(s);
                            }
                        }
                    >
                        {Strategy::GROUPS
                            .into_iter()
                            .map(|(group, strategies)| {
                                let options = strategies
                                    .iter()
                                    .map(|&s| {
                                        let label = if s == Strategy::RECOMMENDED {
                                            format!("{} (recommended)", s.as_str())
                                        } else {
                                            s.as_str().to_owned()
                                        };
                                        view! { <option value=s.as_str() selected=s == current>{label}</option> }
                                    })
                                    .collect_view();
                                view! { <optgroup label=group>{options}</optgroup> }
                            })
                            .collect_view()}
                    </select>
                </label>
                {input("Timeout (e.g. 5 min; empty = none)", "combo_timeout_ms", "config.comboTimeoutMs", |c| c.combo_timeout_ms.clone(), |c, v| c.combo_timeout_ms = v)}
            </div>
            <p class="text-xs text-slate-600" data-testid="strategy-explain">{move || chosen.get().explain()}</p>
            <div class="flex flex-wrap gap-3 items-end" hidden=not_chosen(Strategy::Fusion)>
                {input("Judge (provider/model or a combo; empty = the first target)", "judge_model", "config.judgeModel", |c| c.judge_model.clone(), |c, v| c.judge_model = v)}
            </div>
            <div class="flex flex-wrap gap-3 items-end" hidden=not_chosen(Strategy::Pipeline)>
                {input("Step retries on 429/502/503/504 (0–10, default 1)", "max_retries", "config.maxRetries", |c| c.max_retries.clone(), |c, v| c.max_retries = v)}
                {input("Between retries (default 2 s)", "retry_delay_ms", "config.retryDelayMs", |c| c.retry_delay_ms.clone(), |c, v| c.retry_delay_ms = v)}
            </div>
            {move || {
                live.get().then(|| view! { <TargetRows typed problem pipeline=Signal::derive(move || chosen.get() == Strategy::Pipeline) /> })
            }}
            // The text is the form without JavaScript; with it, the rows above edit it.
            <details open=move || !live.get() data-testid="targets-text">
            <summary class="cursor-pointer text-sm text-indigo-700">"Targets as text"</summary>
            <label class="flex flex-col text-sm">
                "Targets, in order — one per line: provider/model (or another combo's name), then optionally a weight (0–100) and @connection-id; a pipeline step may end with | its prompt"
                <textarea
                    name="targets"
                    rows="3"
                    required
                    class=format!("{INPUT} font-mono text-xs")
                    placeholder="openai/gpt-4o 90\ndeepseek/deepseek-chat 10"
                    aria-invalid=move || problem.get().is_some().to_string()
                    prop:value=move || typed.get()
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        problem.set(parse_targets(&text).err().map(|e| e.message));
                        typed.set(text);
                    }
                >
                    {lines}
                </textarea>
            </label>
            </details>
            {move || problem.get().map(|m| view! { <p class="text-xs text-red-700" data-field-error="targets">{m}</p> })}
            // The picker writes target lines with JavaScript; without it, the text is the editor.
            {move || live.get().then(|| view! { <TargetPicker typed problem /> })}
            <div>
                <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white">
                    {if editing { "Save" } else { "Create" }}
                </button>
            </div>
        </ActionForm>
    }
}

/// One config input of the combo form: its label, the value as typed, and
/// the shared checks' message for its field under it.
#[component]
fn ConfigInput(
    label: &'static str,
    name: &'static str,
    field: &'static str,
    id: String,
    value: String,
    errors: Memo<Vec<FieldError>>,
    on_input: Callback<String>,
) -> impl IntoView {
    let error = move || errors.get().into_iter().find(|e| e.field == field).map(|e| e.message);
    let error_id = format!("{id}-error");
    let described = error_id.clone();
    view! {
        <div class="flex flex-col">
        <label class="flex flex-col text-sm">
            {label}
            <input
                id=id
                name=name
                value=value
                class=INPUT
                aria-invalid=move || error().is_some().to_string()
                aria-describedby=move || error().map(|_| described.clone())
                on:input=move |ev| on_input.run(event_target_value(&ev))
            />
        </label>
        {move || error().map(|m| view! { <p id=error_id.clone() class="text-xs text-red-700" data-field-error=field>{m}</p> })}
        </div>
    }
}

/// The live state every row reads.
#[derive(Clone, Copy)]
struct Live {
    status: Resource<Result<ComboStatusList, ServerFnError>>,
    tick: RwSignal<u64>,
}

/// One combo's targets now: ready, or held back (why, and for how long),
/// and the target that served last.
#[component]
fn ComboNow(name: String, live: Live) -> impl IntoView {
    view! {
        <Transition fallback=Loading>
            {move || {
                let name = name.clone();
                Suspend::new(async move {
                    let now = live.status.await.ok().and_then(|l| l.combos.into_iter().find(|c| c.name == name));
                    now.map(|c| {
                        let last = c.last_served.map_or("nothing yet".to_owned(), |m| m);
                        view! {
                            <ul class="text-xs" data-testid="now">
                                {c.targets
                                    .into_iter()
                                    .map(|t| {
                                        let (mark, class) = if t.ready { ("ready", "text-green-800") } else { ("held", "text-amber-800") };
                                        view! {
                                            <li class=class data-ready=t.ready.to_string()>
                                                <span class="font-mono">{t.model}</span>
                                                {format!(" — {mark}")}
                                                {t.reason.map(|r| format!(": {r}"))}
                                                {t.retry_after_ms.map(|ms| view! { " (" <Countdown ms tick=live.tick /> ")" })}
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                                <li class="text-slate-500" data-testid="last-served">{format!("last served: {last}")}</li>
                            </ul>
                        }
                    })
                })
            }}
        </Transition>
    }
}

#[component]
fn ComboTable(
    combos: Vec<Combo>,
    /// The connections' names by id, for pinned targets.
    names: Arc<BTreeMap<String, String>>,
    save: ServerAction<SaveCombo>,
    delete: ServerAction<DeleteCombo>,
    live: Live,
    /// The row whose Edit panel is open.
    editing: RwSignal<Option<String>>,
) -> impl IntoView {
    if combos.is_empty() {
        return view! { <p class="text-slate-500" data-testid="combos">"No combos yet. Create one above."</p> }
            .into_any();
    }
    view! {
        <div class="overflow-x-auto mb-6">
        <table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="combos">
            <thead>
                <tr class="text-left border-b border-slate-200">
                    <th class="p-2">"Name"</th>
                    <th class="p-2">"Strategy"</th>
                    <th class="p-2">"Targets"</th>
                    <th class="p-2">"Settings"</th>
                    <th class="p-2">"Now"</th>
                    <th class="p-2">"Actions"</th>
                </tr>
            </thead>
            <tbody>
                {combos
                    .into_iter()
                    .map(|c| {
                        let settings = settings_summary(&c);
                        let (strategy, targets) = (c.strategy, c.targets.clone());
                        // Each part of the row owns its copy of the name.
                        let [row, cell, name, now, name_key] = std::array::from_fn(|_| c.name.clone());
                        let edit_label = format!("Edit {name}");
                        let edit_title = format!("Edit the combo “{name}”");
                        let saved = Signal::derive(move || matches!(save.value().get(), Some(Ok(_))));
                        view! {
                            <tr id=format!("combo-{name_key}") class="border-b border-slate-100 align-top target:bg-amber-50" data-combo=row>
                                <td class="p-2 font-mono whitespace-nowrap" data-testid="name">{cell}</td>
                                <td class="p-2" data-testid="strategy" title=strategy.explain()>{strategy.as_str()}</td>
                                <td class="p-2"><TargetList targets names=names.clone() /></td>
                                <td class="p-2 text-xs" data-testid="settings">{settings}</td>
                                <td class="p-2"><ComboNow name=now live /></td>
                                <td class="p-2 flex flex-wrap gap-1">
                                    <Confirm
                                        verb="Delete"
                                        subject=name.clone()
                                        question=format!("Delete the combo “{name}”? Requests for it are refused from then on.")
                                    >
                                        <ActionForm action=delete>
                                            <input type="hidden" name="name" value=name />
                                            <button type="submit" class=CONFIRM_BUTTON>"Delete combo"</button>
                                        </ActionForm>
                                    </Confirm>
                                    <EditPanel label=edit_label title=edit_title key=format!("combo-{name_key}") editing saved>
                                        <ComboForm combo=Some(c.clone()) save />
                                    </EditPanel>
                                </td>
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

/// A combo's config in words: its timeout, and its strategy's own fields.
fn settings_summary(c: &Combo) -> String {
    let cfg = &c.config;
    let mut parts =
        vec![cfg.combo_timeout_ms.map_or("no timeout".to_owned(), |ms| format!("timeout {}", human_ms(ms)))];
    if let Some(ms) = cfg.target_timeout_ms {
        parts.push(format!("{} per target", human_ms(ms)));
    }
    match c.strategy {
        Strategy::Fusion => {
            let judge = cfg.judge_model.as_deref().unwrap_or("the first target");
            parts.push(format!("judge: {judge}"));
            let t = cfg.fusion(c.targets.len());
            parts.push(format!(
                "waits for {} answers, then {}; at most {}",
                t.min_panel,
                human_ms(t.straggler_grace_ms),
                human_ms(t.panel_hard_timeout_ms)
            ));
        }
        Strategy::Pipeline => {
            parts.push(format!("step retries {} ({} apart)", cfg.max_retries(), human_ms(cfg.retry_delay_ms())));
        }
        _ => {}
    }
    parts.join("; ")
}

/// The `provider/model` ids the catalog knows, to copy into targets.
#[component]
fn KnownModels(entries: Vec<CatalogEntry>) -> impl IntoView {
    view! {
        <details class="bg-white p-4 rounded-md shadow-sm" data-testid="known-models">
            <summary class="disclosure cursor-pointer font-semibold">"Models your connections serve"</summary>
            <p class="text-xs text-slate-600 mt-1">
                "The catalog's models of each provider with an active connection, and the models its connections' tests found (as GET /v1/models lists them). Providers that pass model ids through take any other id too; add a connection on Providers to use another provider."
            </p>
            <ul class="mt-2 text-xs font-mono columns-2">
                {entries
                    .into_iter()
                    .flat_map(|p| p.models.into_iter().map(move |m| format!("{}/{m}", p.id)))
                    .map(|id| view! { <li>{id}</li> })
                    .collect_view()}
            </ul>
        </details>
    }
}

#[component]
fn AliasTable(aliases: Vec<Alias>, delete: ServerAction<DeleteAlias>) -> impl IntoView {
    if aliases.is_empty() {
        return view! { <p class="text-slate-500 text-sm" data-testid="aliases">"No aliases yet."</p> }.into_any();
    }
    view! {
        <div class="overflow-x-auto"><table class="w-full text-sm" data-testid="aliases">
            <tbody>
                {aliases
                    .into_iter()
                    .map(|a| {
                        let [row, cell, name] = std::array::from_fn(|_| a.alias.clone());
                        view! {
                            <tr class="border-b border-slate-100" data-alias=row>
                                <td class="p-2 font-mono whitespace-nowrap">{cell}</td>
                                <td class="p-2 font-mono">{format!("→ {}", a.model)}</td>
                                <td class="p-2">
                                    <Confirm
                                        verb="Delete"
                                        subject=name.clone()
                                        question=format!("Delete the alias “{name}”? Requests for it are refused from then on.")
                                    >
                                        <ActionForm action=delete>
                                            <input type="hidden" name="alias" value=name />
                                            <button type="submit" class=CONFIRM_BUTTON>"Delete alias"</button>
                                        </ActionForm>
                                    </Confirm>
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
