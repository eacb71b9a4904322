//! One settings card: the current values, and behind Edit a form that the
//! shared rules validate on every keystroke (Save stays disabled and the
//! field says why while the draft is invalid). Save PATCHes exactly this
//! card's fields; the server's field errors, if any, show at the fields.
//! Without JS the form is a plain post and Cancel a plain reset.

use leptos::{html, prelude::*};
use std::collections::BTreeMap;

use super::{
    cards::{Card, Field},
    inputs::{FieldErrors, FieldInput},
};
use crate::{
    api::SaveResilience,
    types::{
        FieldError,
        settings::{
            FieldKind, ResilienceSettings, ResilienceView, apply_patch, form_to_patch, form_values, human_ms,
            is_duration, rule_rows,
        },
    },
};

/// Form values of a card, plus one blank rule row to add a rule with.
fn initial_values(card: &Card, settings: &ResilienceSettings) -> BTreeMap<String, String> {
    let doc = serde_json::to_value(settings).unwrap_or_default();
    let fields: Vec<(&str, FieldKind)> = card.fields.iter().map(|f| (f.path, f.kind)).collect();
    let mut values = form_values(&fields, &doc);
    for f in card.fields.iter().filter(|f| f.kind == FieldKind::Rules) {
        let row = rule_rows(f.path, &values);
        for key in super::inputs::RULE_KEYS {
            values.insert(format!("{}.{row}.{key}", f.path), String::new());
        }
    }
    values
}

/// Whether `error` belongs to `field` (itself or an item of it).
fn belongs(error: &FieldError, field: &str) -> bool {
    error.field == field || error.field.strip_prefix(field).is_some_and(|rest| rest.starts_with('.'))
}

#[component]
pub fn SettingsCard(
    card: &'static Card,
    view: ResilienceView,
    save: ServerAction<SaveResilience>,
    /// Show "Reset to defaults" (fills the form; Save applies it).
    #[prop(optional)]
    resettable: bool,
) -> impl IntoView {
    let initial = initial_values(card, &view.settings);
    let builtin = initial_values(card, &ResilienceSettings::default());
    let draft = RwSignal::new(initial.clone());
    let editable = card.editable(&view);
    let (settings, env) = (view.settings.clone(), view.env.clone());
    let client_errors = Memo::new(move |_| {
        draft.with(|values| match form_to_patch(&editable, values) {
            Ok(patch) => apply_patch(&settings, &patch, &env).err().unwrap_or_default(),
            Err(errors) => errors,
        })
    });
    // The server's verdict on the last save of this card, until the next edit.
    let server_errors = RwSignal::new(Vec::<FieldError>::new());
    Effect::new(move |_| {
        if let Some(Ok(saved)) = save.value().get().filter(|r| r.as_ref().is_ok_and(|s| s.card == card.id)) {
            server_errors.set(saved.errors);
        }
    });
    Effect::watch(move || draft.track(), move |_, _, _| server_errors.set(Vec::new()), false);
    let errors_for = move |path: &'static str| {
        Signal::derive(move || {
            let label = |e: FieldError| if e.field == path { e.message } else { format!("{}: {}", e.field, e.message) };
            let mine = |errors: Vec<FieldError>| errors.into_iter().filter(|e| belongs(e, path)).map(label).collect();
            FieldErrors { browser: mine(client_errors.get()), server: mine(server_errors.get()) }
        })
    };
    // Errors no input of this card shows (e.g. a stale form).
    let other_errors = move || {
        server_errors.get().into_iter().filter(|e| !card.fields.iter().any(|f| belongs(e, f.path))).collect::<Vec<_>>()
    };
    let saved = move || save.value().with(|v| matches!(v, Some(Ok(s)) if s.card == card.id && s.errors.is_empty()));
    let details = NodeRef::<html::Details>::new();
    let reset_to = {
        let initial = initial.clone();
        move |values: Option<BTreeMap<String, String>>| {
            draft.set(values.unwrap_or_else(|| initial.clone()));
        }
    };
    let cancel = {
        let reset_to = reset_to.clone();
        move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            reset_to(None);
            if let Some(d) = details.get() {
                d.set_open(false);
            }
        }
    };
    let defaults = move |_| reset_to(Some(initial_values(card, &ResilienceSettings::default())));
    let view = StoredValue::new(view);
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm" data-card=card.id>
            <h2 class="font-semibold">{card.title}</h2>
            <p class="text-sm text-slate-600 mb-3">{card.explain}</p>
            <Summary card initial=initial.clone() />
            {move || saved().then(|| view! { <p role="status" class="text-sm text-green-700">"Saved."</p> })}
            <details node_ref=details class="mt-3">
                <summary class="cursor-pointer text-sm text-indigo-700 font-medium">"Edit"</summary>
                <ActionForm action=save attr:class="mt-3 flex flex-col gap-3" attr:novalidate=true>
                    <input type="hidden" name="card" value=card.id />
                    <div class="grid grid-cols-3 gap-3">
                        {card
                            .fields
                            .iter()
                            .map(|field: &'static Field| {
                                let env = view.with_value(|v| v.env_for(field.path).cloned());
                                let default = builtin.get(field.path).cloned();
                                view! { <FieldInput field draft initial=initial.clone() env errors=errors_for(field.path) default /> }
                            })
                            .collect_view()}
                    </div>
                    {move || {
                        other_errors()
                            .into_iter()
                            .map(|e| view! { <p role="alert" class="text-sm text-red-700">{format!("{}: {}", e.field, e.message)}</p> })
                            .collect_view()
                    }}
                    <div class="flex gap-2">
                        <button
                            type="submit"
                            class="px-3 py-1 rounded-md bg-indigo-600 text-white disabled:opacity-50"
                            disabled=move || !client_errors.with(Vec::is_empty) || save.pending().get()
                        >
                            "Save"
                        </button>
                        <button type="reset" class="px-3 py-1 rounded-md border border-slate-300" on:click=cancel>
                            "Cancel"
                        </button>
                        {resettable
                            .then(|| {
                                view! {
                                    <button type="button" class="px-3 py-1 rounded-md border border-slate-300" on:click=defaults>
                                        "Reset to defaults"
                                    </button>
                                }
                            })}
                    </div>
                </ActionForm>
            </details>
        </section>
    }
}

/// The saved values, read-only.
#[component]
fn Summary(card: &'static Card, initial: BTreeMap<String, String>) -> impl IntoView {
    view! {
        <dl class="grid grid-cols-4 gap-x-4 gap-y-1 text-sm">
            {card
                .fields
                .iter()
                .map(|f| {
                    let shown = match f.kind {
                        FieldKind::Rules => {
                            let n = rule_rows(f.path, &initial).saturating_sub(1);
                            format!("{n} rule(s)")
                        }
                        FieldKind::Bool => {
                            if initial.get(f.path).is_some_and(|v| v == "true") { "on" } else { "off" }.into()
                        }
                        _ => match initial.get(f.path).map(String::as_str) {
                            None | Some("") => "—".into(),
                            Some(v) if is_duration(f.path) => v.parse().map_or_else(|_| v.to_owned(), human_ms),
                            Some(v) => v.to_owned(),
                        },
                    };
                    view! {
                        <dt class="text-slate-600">{f.label}</dt>
                        <dd class="font-mono" data-value=f.path>{shown}</dd>
                    }
                })
                .collect_view()}
        </dl>
    }
}
