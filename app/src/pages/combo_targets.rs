//! The targets of a combo's form, for a browser with JavaScript: its rows
//! (model, weight, connection, a pipeline step's prompt; moved and removed
//! in place) and a picker that adds one. Both edit the form's targets
//! text, which is what the form posts and what a browser without
//! JavaScript edits directly. And a saved combo's targets in words.

use std::{collections::BTreeMap, sync::Arc};

use leptos::prelude::*;

use crate::types::{
    CatalogEntry, ConnectionList,
    combo::{ComboList, ComboTarget, format_targets, parse_targets},
};

const INPUT: &str = "border border-slate-300 rounded-md px-2 py-1";
const BUTTON: &str = "px-2 py-1 rounded-md border border-slate-300 bg-white hover:bg-slate-100 text-sm";

/// What the target rows and picker offer: the models the connections
/// serve, the combos, and the live connections a target may be pinned to.
#[derive(Clone, Copy)]
pub struct Picks {
    /// The models the connections serve, by provider.
    pub served: Resource<Result<Vec<CatalogEntry>, ServerFnError>>,
    pub connections: Resource<Result<ConnectionList, ServerFnError>>,
    pub combos: Resource<Result<ComboList, ServerFnError>>,
}

/// Adds a target line to the targets text from pickers: a model the
/// connections serve (or a combo), optionally one live connection of its
/// provider and a weight. Needs JavaScript; the text itself works without.
#[component]
pub fn TargetPicker(typed: RwSignal<String>, problem: RwSignal<Option<String>>) -> impl IntoView {
    let picks = expect_context::<Picks>();
    let (model, connection, weight) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let add = move |_| {
        let mut line = model.get_untracked();
        if line.is_empty() {
            return;
        }
        if let w @ 0..=100 = weight.get_untracked().trim().parse::<u32>().unwrap_or(u32::MAX) {
            line.push_str(&format!(" {w}"));
        }
        let pinned = connection.get_untracked();
        if !pinned.is_empty() {
            line.push_str(&format!(" @{pinned}"));
        }
        typed.update(|text| {
            if !text.trim().is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&line);
        });
        problem.set(parse_targets(&typed.get_untracked()).err().map(|e| e.message));
        connection.set(String::new());
    };
    let provider = move || model.get().split_once('/').map(|(p, _)| p.to_owned());
    view! {
        <div class="flex flex-wrap gap-2 items-end text-sm" data-testid="target-picker">
            <label class="flex flex-col">
                "Pick a model"
                <select class=INPUT on:change=move |ev| {
                    model.set(event_target_value(&ev));
                    connection.set(String::new());
                }>
                    <option value="">"choose…"</option>
                    <Transition fallback=|| ()>
                        {move || Suspend::new(async move {
                            let catalog = picks.served.await.unwrap_or_default();
                            let combos = picks.combos.await.map(|l| l.combos).unwrap_or_default();
                            view! {
                                {catalog
                                    .into_iter()
                                    .filter(|p| !p.models.is_empty())
                                    .map(|p| {
                                        let id = p.id.clone();
                                        view! {
                                            <optgroup label=p.name>
                                                {p.models.into_iter().map(|m| {
                                                    let value = format!("{id}/{m}");
                                                    let label = value.clone();
                                                    view! { <option value=value>{label}</option> }
                                                }).collect_view()}
                                            </optgroup>
                                        }
                                    })
                                    .collect_view()}
                                <optgroup label="Combos">
                                    {combos.into_iter().map(|c| {
                                        let label = c.name.clone();
                                        view! { <option value=c.name>{label}</option> }
                                    }).collect_view()}
                                </optgroup>
                            }
                        })}
                    </Transition>
                </select>
            </label>
            <label class="flex flex-col">
                "On connection (optional)"
                <select class=INPUT prop:value=move || connection.get() on:change=move |ev| connection.set(event_target_value(&ev))>
                    <option value="">"any of its provider"</option>
                    <Transition fallback=|| ()>
                        {move || Suspend::new(async move {
                            let all = picks.connections.await.map(|l| l.connections).unwrap_or_default();
                            view! {
                                <For each=move || {
                                    let p = provider();
                                    all.iter().filter(|c| Some(&c.provider) == p.as_ref()).cloned().collect::<Vec<_>>()
                                } key=|c| c.id.clone() let:c>
                                    <option value=c.id.clone()>{format!("{} ({})", c.name, c.provider)}</option>
                                </For>
                            }
                        })}
                    </Transition>
                </select>
            </label>
            <label class="flex flex-col">
                "Weight"
                <input type="number" min="0" max="100" class=format!("{INPUT} w-20") prop:value=move || weight.get() on:input=move |ev| weight.set(event_target_value(&ev)) />
            </label>
            <button type="button" class=BUTTON on:click=add>"Add target"</button>
        </div>
    }
}

/// Changes the targets the text holds and writes them back to it.
fn edit_targets(
    typed: RwSignal<String>,
    problem: RwSignal<Option<String>>,
    change: impl FnOnce(&mut Vec<ComboTarget>),
) {
    let mut targets = typed.with_untracked(|t| parse_targets(t).unwrap_or_default());
    change(&mut targets);
    typed.set(format_targets(&targets));
    problem.set(None);
}

/// The targets as rows, in order: each with its weight, its connection
/// (any of its provider, or one), a pipeline step's prompt, and buttons to
/// move or remove it. While the text does not read as targets, the rows
/// say so and the text is where to fix it.
#[component]
pub fn TargetRows(typed: RwSignal<String>, problem: RwSignal<Option<String>>, pipeline: Signal<bool>) -> impl IntoView {
    let picks = expect_context::<Picks>();
    let connections = move || picks.connections.get().and_then(Result::ok).map(|l| l.connections).unwrap_or_default();
    let row = move |(i, t): (usize, ComboTarget), last: usize| {
        let provider = t.model.split_once('/').map(|(p, _)| p.to_owned());
        let pinned = t.connection_id.clone().unwrap_or_default();
        let options: Vec<_> = connections()
            .into_iter()
            .filter(|c| Some(&c.provider) == provider.as_ref())
            .map(|c| {
                let selected = c.id == pinned;
                view! { <option value=c.id.clone() selected=selected>{format!("{} ({})", c.name, c.provider)}</option> }
            })
            .collect();
        let set = move |change: fn(&mut ComboTarget, String)| {
            move |ev: leptos::ev::Event| {
                let value = event_target_value(&ev);
                edit_targets(typed, problem, |ts| {
                    if let Some(t) = ts.get_mut(i) {
                        change(t, value);
                    }
                });
            }
        };
        let swap = move |with: usize| move |_| edit_targets(typed, problem, |ts| ts.swap(i, with));
        let model = t.model.clone();
        view! {
            <tr class="border-b border-slate-100" data-target-row=i>
                <td class="p-1 font-mono text-xs">{t.model.clone()}</td>
                <td class="p-1">
                    <input
                        type="number"
                        min="0"
                        max="100"
                        aria-label=format!("Weight of {model}")
                        class=format!("{INPUT} w-20")
                        value=t.weight.map(|w| w.to_string()).unwrap_or_default()
                        on:change=set(|t, v| t.weight = v.trim().parse().ok())
                    />
                </td>
                <td class="p-1">
                    <select aria-label=format!("Connection of {model}") class=INPUT on:change=set(|t, v| t.connection_id = Some(v).filter(|v| !v.is_empty()))>
                        <option value="" selected=pinned.is_empty()>"any of its provider"</option>
                        {options}
                    </select>
                </td>
                <td class="p-1" hidden=move || !pipeline.get()>
                    <input
                        aria-label=format!("Prompt of {model}")
                        class=INPUT
                        value=t.prompt.clone().unwrap_or_default()
                        on:change=set(|t, v| t.prompt = Some(v.trim().to_owned()).filter(|p| !p.is_empty()))
                    />
                </td>
                <td class="p-1 whitespace-nowrap">
                    <button type="button" class=BUTTON aria-label=format!("Move {model} up") disabled=i == 0 on:click=swap(i.saturating_sub(1))>"↑"</button>
                    <button type="button" class=BUTTON aria-label=format!("Move {model} down") disabled=i == last on:click=swap((i + 1).min(last))>"↓"</button>
                    <button
                        type="button"
                        class=BUTTON
                        aria-label=format!("Remove {model}")
                        on:click=move |_| edit_targets(typed, problem, |ts| {
                            if i < ts.len() {
                                ts.remove(i);
                            }
                        })
                    >
                        "Remove"
                    </button>
                </td>
            </tr>
        }
    };
    move || {
        match typed.with(|t| parse_targets(t)) {
        Ok(targets) => {
            let last = targets.len().saturating_sub(1);
            view! {
                <table class="text-sm" data-testid="target-rows">
                    <thead>
                        <tr class="text-left text-xs text-slate-600">
                            <th class="p-1">"Target"</th>
                            <th class="p-1">"Weight"</th>
                            <th class="p-1">"Connection"</th>
                            <th class="p-1" hidden=move || !pipeline.get()>"Step prompt"</th>
                            <th class="p-1"><span class="sr-only">"Order"</span></th>
                        </tr>
                    </thead>
                    <tbody>{targets.into_iter().enumerate().map(|t| row(t, last)).collect_view()}</tbody>
                </table>
            }
            .into_any()
        }
        Err(_) if typed.with(|t| t.trim().is_empty()) => {
            view! { <p class="text-sm text-slate-500" data-testid="target-rows">"No targets yet: add one below."</p> }.into_any()
        }
        Err(_) => view! {
            <p class="text-sm text-amber-800" data-testid="target-rows">"The targets text does not read as targets yet: fix it under “Targets as text”."</p>
        }
        .into_any(),
    }
    }
}

/// The connections' names by id, for the targets pinned to one.
pub fn connection_names(list: Result<ConnectionList, ServerFnError>) -> Arc<BTreeMap<String, String>> {
    let connections = list.map(|l| l.connections).unwrap_or_default();
    Arc::new(connections.into_iter().map(|c| (c.id, c.name)).collect())
}

/// A saved combo's targets in words, in order: the model, its weight, the
/// connection it is pinned to (by name) and a pipeline step's prompt.
#[component]
pub fn TargetList(targets: Vec<ComboTarget>, names: Arc<BTreeMap<String, String>>) -> impl IntoView {
    view! {
        <ol class="text-xs space-y-1" data-testid="targets">
            {targets
                .into_iter()
                .map(|t| {
                    let pinned = t.connection_id.map(|id| names.get(&id).cloned().unwrap_or(format!("connection {id}")));
                    view! {
                        <li>
                            <span class="font-mono whitespace-nowrap">{t.model}</span>
                            {t.weight.map(|w| format!(" · weight {w}"))}
                            {pinned.map(|name| format!(" · on {name}"))}
                            {t.prompt.map(|p| view! { <span class="text-slate-500">{format!(" · step: {p}")}</span> })}
                        </li>
                    }
                })
                .collect_view()}
        </ol>
    }
}
