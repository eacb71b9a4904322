//! The input for each kind of setting, bound to the card's draft: a value
//! typed here is checked at once by the card. Inputs are named
//! `fields[<json path>]` so a plain form post carries the same map.

use leptos::prelude::*;
use std::collections::BTreeMap;

use super::cards::Field;
use crate::types::settings::{
    EnvSource, ErrorReason, FieldKind, ModelLockoutSettings, RuleScope, duration_ms, human_ms, is_duration, rule_rows,
    tokens,
};

const INPUT: &str = "border border-slate-300 rounded-md px-2 py-1";
const SMALL_BUTTON: &str = "px-2 py-0.5 rounded-md border border-slate-300 text-xs";

/// The columns of one operator rule row.
pub const RULE_KEYS: [&str; 6] = ["provider", "status", "match", "scope", "reason", "cooldownMs"];

type Draft = RwSignal<BTreeMap<String, String>>;

/// What is wrong with one input: as the browser sees it while typing, and
/// as the server answered the last save.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldErrors {
    pub browser: Vec<String>,
    pub server: Vec<String>,
}

fn read(draft: Draft, key: &str) -> String {
    draft.with(|d| d.get(key).cloned().unwrap_or_default())
}

fn write(draft: Draft, key: &str, value: String) {
    draft.update(|d| {
        d.insert(key.to_owned(), value);
    });
}

fn input_name(path: &str) -> String {
    format!("fields[{path}]")
}

/// A select of `options` (value, label) bound to the draft.
fn select(
    path: &'static str,
    draft: Draft,
    start: &str,
    pinned: bool,
    options: &[(&'static str, &'static str)],
) -> AnyView {
    let options: Vec<_> = options
        .iter()
        .map(|&(value, label)| view! { <option value=value selected=start == value>{label}</option> })
        .collect();
    view! {
        <select
            id=path
            name=input_name(path)
            prop:value=move || read(draft, path)
            on:change=move |ev| write(draft, path, event_target_value(&ev))
            disabled=pinned
            class=INPUT
        >
            {options}
        </select>
    }
    .into_any()
}

#[component]
pub fn FieldInput(
    field: &'static Field,
    draft: Draft,
    initial: BTreeMap<String, String>,
    env: Option<EnvSource>,
    errors: Signal<FieldErrors>,
    /// The built-in default's form text, for the hint and the reset.
    default: Option<String>,
) -> impl IntoView {
    let path = field.path;
    let pinned = env.as_ref().is_some_and(|e| e.wins);
    let note = env.map(|e| {
        let text =
            if e.wins { format!("set by env {}", e.variable) } else { format!("default from env {}", e.variable) };
        view! { <span class="text-xs text-amber-800 bg-amber-50 px-1 rounded" data-env=e.variable>{text}</span> }
    });
    // The draft starts as the saved values, or as what a refused plain post typed.
    let start = draft.with_untracked(|d| d.get(path).cloned()).unwrap_or_default();
    let saved = initial.get(path).cloned().unwrap_or_default();
    let control = match field.kind {
        FieldKind::Int | FieldKind::OptInt | FieldKind::TextList | FieldKind::Text => view! {
            <input
                type="text"
                inputmode=if matches!(field.kind, FieldKind::TextList | FieldKind::Text) { "text" } else { "numeric" }
                id=path
                name=input_name(path)
                value=start
                prop:value=move || read(draft, path)
                on:input=move |ev| write(draft, path, event_target_value(&ev))
                disabled=pinned
                aria-invalid=move || errors.with(|e| !e.browser.is_empty() || !e.server.is_empty()).to_string()
                class=format!("{INPUT} w-48")
            />
        }
        .into_any(),
        FieldKind::Bool => view! {
            <input
                type="checkbox"
                class="self-start"
                id=path
                name=input_name(path)
                value="true"
                checked=start == "true"
                prop:checked=move || read(draft, path) == "true"
                on:change=move |ev| write(draft, path, event_target_checked(&ev).to_string())
                disabled=pinned
            />
        }
        .into_any(),
        FieldKind::Choice(names) => {
            let options: Vec<(&str, &str)> = names.iter().map(|&n| (n, n)).collect();
            select(path, draft, &start, pinned, &options)
        }
        FieldKind::Codes => view! { <CodeChips path draft start /> }.into_any(),
        FieldKind::Rules => view! { <RulesEditor path draft start=draft.get_untracked() /> }.into_any(),
    };
    let wide = matches!(field.kind, FieldKind::Codes | FieldKind::Rules);
    view! {
        <div class=if wide { "flex flex-col gap-1 text-sm col-span-3" } else { "flex flex-col gap-1 text-sm" } data-field=path>
            <label for=path class="flex items-center gap-2">
                {field.label}
                {note}
            </label>
            {control}
            {(!wide && !pinned).then(|| view! { <DefaultHint path draft saved default /> })}
            {move || {
                let FieldErrors { browser, server } = errors.get();
                let tagged = browser.into_iter().map(|m| (m, "browser")).chain(server.into_iter().map(|m| (m, "server")));
                tagged
                    .map(|(m, origin)| view! { <p class="text-xs text-red-700" data-error=path data-origin=origin>{m}</p> })
                    .collect_view()
            }}
        </div>
    }
}

/// How to read a value: a duration in words as it is typed ("= 2 min"),
/// the default, and — when the saved value differs from it — a mark and
/// a way back to it (in the browser; without JS, the default to type).
#[component]
fn DefaultHint(path: &'static str, draft: Draft, saved: String, default: Option<String>) -> impl IntoView {
    let words = |text: &str| match duration_ms(text.trim()) {
        Ok(ms) if is_duration(path) => human_ms(ms),
        _ if text.is_empty() => "empty".to_owned(),
        _ => text.to_owned(),
    };
    let typed = move || is_duration(path).then(|| duration_ms(read(draft, path).trim()).ok()).flatten();
    let default_view = default.map(|default| {
        let changed = saved != default;
        let back = default.clone();
        view! {
            <span data-default=path>{format!("default {}", words(&default))}</span>
            {changed.then(|| view! {
                <span class="px-1 rounded bg-amber-100 text-amber-800" data-changed=path>"changed"</span>
                <button
                    type="button"
                    class="text-indigo-700 underline"
                    title=format!("Put the default back (saved only with Save): {path}")
                    on:click=move |_| write(draft, path, back.clone())
                >
                    "reset to default"
                </button>
            })}
        }
    });
    view! {
        <span class="text-xs text-slate-500 flex flex-wrap gap-2 tabular-nums">
            {move || typed().map(|ms| view! { <span data-human=path>{format!("= {}", human_ms(ms))}</span> })}
            {default_view}
        </span>
    }
}

/// Status-code chips: remove with ×, add through the box; a code outside
/// 100–599 or already listed is refused on the spot.
#[component]
fn CodeChips(path: &'static str, draft: Draft, start: String) -> impl IntoView {
    let adding = RwSignal::new(String::new());
    let refused = RwSignal::new(None::<String>);
    let codes = move || read(draft, path).split(',').flat_map(tokens).map(str::to_owned).collect::<Vec<_>>();
    let set_codes = move |codes: Vec<String>| write(draft, path, codes.join(", "));
    let add = move |_| {
        let text = adding.get().trim().to_owned();
        let mut list = codes();
        let problem = match text.parse::<u64>() {
            Err(_) => Some(format!("{text:?} is not a status code")),
            Ok(code) => ModelLockoutSettings::code_problem(code)
                .or_else(|| list.contains(&code.to_string()).then(|| format!("{code} is already listed"))),
        };
        refused.set(problem.clone());
        if problem.is_none() {
            list.push(text);
            set_codes(list);
            adding.set(String::new());
        }
    };
    view! {
        <input type="hidden" name=input_name(path) value=start prop:value=move || read(draft, path) />
        <div class="flex flex-wrap gap-1 items-center">
            {move || {
                codes()
                    .into_iter()
                    .map(|code| {
                        let remove = code.clone();
                        view! {
                            <span class="px-2 py-0.5 rounded-full bg-slate-200 text-xs" data-chip=code.clone()>
                                {code.clone()}
                                <button
                                    type="button"
                                    class="ml-1"
                                    aria-label=format!("Remove {code}")
                                    on:click=move |_| set_codes(codes().into_iter().filter(|c| *c != remove).collect())
                                >
                                    "×"
                                </button>
                            </span>
                        }
                    })
                    .collect_view()
            }}
            <input
                aria-label="Add error code"
                inputmode="numeric"
                class=format!("{INPUT} w-24")
                prop:value=move || adding.get()
                on:input=move |ev| adding.set(event_target_value(&ev))
            />
            <button type="button" class=SMALL_BUTTON on:click=add>
                "Add"
            </button>
        </div>
        {move || refused.get().map(|m| view! { <p class="text-xs text-red-700" data-error="chip">{m}</p> })}
    }
}

/// The operator rule list: one row per rule, the last row blank for a new
/// one; rows are keyed by index so typing never re-creates an input.
#[component]
fn RulesEditor(path: &'static str, draft: Draft, start: BTreeMap<String, String>) -> impl IntoView {
    let rows = Memo::new(move |_| draft.with(|d| rule_rows(path, d)));
    let key = move |i: usize, col: &str| format!("{path}.{i}.{col}");
    let add_row = move |_| {
        let n = rows.get_untracked();
        draft.update(|d| {
            for col in RULE_KEYS {
                d.insert(key(n, col), String::new());
            }
        });
    };
    let remove_row = move |i: usize| {
        draft.update(|d| {
            let n = rule_rows(path, d);
            for row in i..n {
                for col in RULE_KEYS {
                    match d.remove(&key(row + 1, col)) {
                        Some(v) => d.insert(key(row, col), v),
                        None => d.remove(&key(row, col)),
                    };
                }
            }
        });
    };
    let start_values = StoredValue::new(start);
    let cell = move |i: usize, col: &'static str| {
        let k = key(i, col);
        let start = start_values.with_value(|m| m.get(&k).cloned().unwrap_or_default());
        let (k_read, k_write) = (k.clone(), k.clone());
        let on_input = move |ev: leptos::ev::Event| write(draft, &k_write, event_target_value(&ev));
        let value = move || read(draft, &k_read);
        match col {
            "scope" | "reason" => {
                let (blank, choices): (&str, Vec<&str>) = if col == "scope" {
                    ("(choose)", RuleScope::ALL.iter().map(|s| s.as_str()).collect())
                } else {
                    ("(classifier decides)", ErrorReason::ALL.iter().map(|r| r.as_str()).collect())
                };
                let options = std::iter::once(("", blank)).chain(choices.into_iter().map(|c| (c, c)));
                view! {
                    <select name=input_name(&k) aria-label=format!("Rule {} {col}", i + 1) class=INPUT prop:value=value on:change=on_input>
                        {options
                            .map(|(v, label)| view! { <option value=v selected=start == v>{label}</option> })
                            .collect_view()}
                    </select>
                }
                .into_any()
            }
            _ => view! {
                <input
                    name=input_name(&k)
                    aria-label=format!("Rule {} {col}", i + 1)
                    class=format!("{INPUT} w-full")
                    value=start
                    prop:value=value
                    on:input=on_input
                />
            }
            .into_any(),
        }
    };
    view! {
        <div class="overflow-x-auto"><table class="text-sm w-full" data-testid="rules">
            <thead>
                <tr class="text-left">
                    {RULE_KEYS.map(|c| view! { <th class="p-1 font-medium">{c}</th> })}
                    <th></th>
                </tr>
            </thead>
            <tbody>
                <For each=move || 0..rows.get() key=|i| *i let:i>
                    <tr>
                        {RULE_KEYS.map(|col| view! { <td class="p-1">{cell(i, col)}</td> })}
                        <td class="p-1">
                            <button type="button" class=SMALL_BUTTON on:click=move |_| remove_row(i)>
                                "Remove"
                            </button>
                        </td>
                    </tr>
                </For>
            </tbody>
        </table></div>
        <button type="button" class=format!("{SMALL_BUTTON} self-start") on:click=add_row>
            "Add rule"
        </button>
    }
}
