//! One settings card, folded to its title and a line of its values; open,
//! what it does, the values, and behind Edit a form that the shared rules
//! validate on every keystroke (Save stays disabled and the field says
//! why while the draft is invalid). Save PATCHes exactly this card's
//! fields; the server's field errors, if any, show at the fields.
//! Without JS the form is a plain post and Cancel a plain reset; a post
//! the server refuses comes back with what was typed (`?refused=<card>`
//! and `f.<path>=<text>`), the card open at the fields to correct.

use leptos::{html, prelude::*};
use std::collections::BTreeMap;

use super::{
    cards::{Card, Field},
    inputs::{FieldErrors, FieldInput},
};
use crate::{
    api::SaveResilience,
    format, paths,
    types::{
        FieldError,
        settings::{
            FieldKind, REFUSED, ResilienceSettings, ResilienceView, TYPED, apply_patch, form_to_patch, form_values,
            human_ms, is_duration, rule_rows,
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

/// What was typed in this card's form, when the server refused its plain
/// form post: the form values of the `editable` fields (an unchecked box
/// is absent from a post, so it reads empty: off).
fn refused_draft(
    card: &Card,
    editable: &[(&str, FieldKind)],
    initial: &BTreeMap<String, String>,
) -> Option<BTreeMap<String, String>> {
    use leptos_router::hooks::use_query_map;
    let query = use_query_map().get_untracked();
    (query.get(REFUSED).as_deref() == Some(card.id)).then(|| {
        let mine = |key: &str| editable.iter().any(|(path, _)| key == *path || key.starts_with(&format!("{path}.")));
        let mut draft: BTreeMap<String, String> =
            initial.iter().filter(|(k, _)| !mine(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        for (path, _) in editable {
            draft.insert((*path).to_owned(), String::new());
        }
        for (key, value) in query.latest_values() {
            if let Some(path) = key.strip_prefix(TYPED).filter(|k| mine(k)) {
                draft.insert(path.to_owned(), value.to_owned());
            }
        }
        draft
    })
}

/// Whether `error` belongs to `field` (itself or an item of it).
fn belongs(error: &FieldError, field: &str) -> bool {
    error.field == field || error.field.strip_prefix(field).is_some_and(|rest| rest.starts_with('.'))
}

/// What a card's folded view and its form share.
#[derive(Clone, Copy)]
struct CardState {
    /// The form's values as typed (`path → text`).
    draft: RwSignal<BTreeMap<String, String>>,
    /// The saved values, as form text.
    initial: StoredValue<BTreeMap<String, String>>,
    /// The shared rules' verdict on the draft, as it is typed.
    client_errors: Memo<Vec<FieldError>>,
    /// The server's verdict on the last save of this card, until the next edit.
    server_errors: RwSignal<Vec<FieldError>>,
    /// Whether the form is open.
    editing: RwSignal<bool>,
}

#[component]
pub fn SettingsCard(
    card: &'static Card,
    view: ResilienceView,
    save: ServerAction<SaveResilience>,
    /// Show "Reset to defaults" (fills the form; Save applies it).
    #[prop(optional)]
    resettable: bool,
    /// Start unfolded (the page's only card).
    #[prop(optional)]
    open: bool,
) -> impl IntoView {
    let initial = initial_values(card, &view.settings);
    let editable = card.editable(&view);
    let refused = refused_draft(card, &editable, &initial);
    let was_refused = refused.is_some();
    let asked = paths::edit_param().as_deref() == Some(card.id);
    // A save reloads the cards: the one just saved stays open, saying so.
    let just_saved = save.value().with_untracked(|v| matches!(v, Some(Ok(s)) if s.card == card.id));
    let open = open || was_refused || just_saved || asked;
    let draft = RwSignal::new(refused.unwrap_or_else(|| initial.clone()));
    let (settings, env) = (view.settings.clone(), view.env.clone());
    let client_errors = Memo::new(move |_| {
        draft.with(|values| match form_to_patch(&editable, values) {
            Ok(patch) => apply_patch(&settings, &patch, &env).err().unwrap_or_default(),
            Err(errors) => errors,
        })
    });
    let server_errors = RwSignal::new(Vec::<FieldError>::new());
    Effect::new(move |_| {
        if let Some(Ok(saved)) = save.value().get().filter(|r| r.as_ref().is_ok_and(|s| s.card == card.id)) {
            server_errors.set(saved.errors);
        }
    });
    Effect::watch(move || draft.track(), move |_, _, _| server_errors.set(Vec::new()), false);
    let saved = move || save.value().with(|v| matches!(v, Some(Ok(s)) if s.card == card.id && s.errors.is_empty()));
    // The form exists only while the card is edited (`paths::EDIT`).
    let editing = RwSignal::new(was_refused || asked);
    let form = NodeRef::<html::Form>::new();
    let edit = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        editing.set(true);
        request_animation_frame(move || focus_first_input(form));
    };
    let initial = StoredValue::new(initial);
    let state = CardState { draft, initial, client_errors, server_errors, editing };
    let view = StoredValue::new(view);
    view! {
        <details class="mb-3 bg-white p-4 rounded-md shadow-sm group" data-card=card.id id=card.id open=open>
            <summary class="cursor-pointer">
                <h2 class="font-semibold inline">{card.title}</h2>
                <p class="text-sm text-slate-600 truncate group-open:hidden" data-testid="card-line">
                    {initial.with_value(|values| one_line(card, values))}
                </p>
            </summary>
            <p class="text-sm text-slate-600 my-3">{card.explain}</p>
            <Summary card initial=initial.get_value() />
            {move || saved().then(|| view! { <p role="status" class="text-sm text-green-700">"Saved."</p> })}
            {move || {
                if editing.get() {
                    view! { <CardForm card state view save form resettable was_refused /> }.into_any()
                } else {
                    view! {
                        <a
                            href=paths::edit_link(card.id)
                            class="inline-block mt-3 text-sm text-indigo-700 font-medium"
                            on:click=edit
                        >
                            "Edit"
                        </a>
                    }
                        .into_any()
                }
            }}
        </details>
    }
}

/// A card's form: its fields, checked as they are typed; Save PATCHes
/// them; Cancel puts the saved values back and closes it.
#[component]
fn CardForm(
    card: &'static Card,
    state: CardState,
    view: StoredValue<ResilienceView>,
    save: ServerAction<SaveResilience>,
    form: NodeRef<html::Form>,
    resettable: bool,
    was_refused: bool,
) -> impl IntoView {
    let CardState { draft, initial, client_errors, server_errors, editing } = state;
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
    // Save is held back while the draft is invalid only where the checks
    // run as it is typed: without JS a corrected value must still post.
    let live = RwSignal::new(false);
    Effect::new(move |_| live.set(true));
    let builtin = initial_values(card, &ResilienceSettings::default());
    let reset_to = move |values: Option<BTreeMap<String, String>>| {
        draft.set(values.unwrap_or_else(|| initial.get_value()));
    };
    let cancel = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        reset_to(None);
        editing.set(false);
    };
    let defaults = move |_| reset_to(Some(initial_values(card, &ResilienceSettings::default())));
    let fields = card
        .fields
        .iter()
        .map(|field: &'static Field| {
            let env = view.with_value(|v| v.env_for(field.path).cloned());
            let default = builtin.get(field.path).cloned();
            view! { <FieldInput field draft initial=initial.get_value() env errors=errors_for(field.path) default /> }
        })
        .collect_view();
    view! {
        <ActionForm action=save node_ref=form attr:class="mt-3 flex flex-col gap-3" attr:novalidate=true>
            <input type="hidden" name="card" value=card.id />
            {was_refused
                .then(|| {
                    view! {
                        <p role="alert" class="text-sm p-2 rounded-md bg-red-100 text-red-800">
                            "Not saved: correct the marked fields and save again."
                        </p>
                    }
                })}
            <div class="grid grid-cols-3 gap-3">{fields}</div>
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
                    disabled=move || live.get() && (!client_errors.with(Vec::is_empty) || save.pending().get())
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
    }
}

/// Moves focus to the first field of a form just opened.
fn focus_first_input(form: NodeRef<html::Form>) {
    use leptos::wasm_bindgen::JsCast;
    let first = form.get_untracked().and_then(|f| {
        f.query_selector("input:not([type=hidden]):not([disabled]), select:not([disabled])").ok().flatten()
    });
    if let Some(input) = first.and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok()) {
        let _ = input.focus();
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
                    view! {
                        <dt class="text-slate-600">{f.label}</dt>
                        <dd class="font-mono" data-value=f.path>{shown(f, &initial)}</dd>
                    }
                })
                .collect_view()}
        </dl>
    }
}

/// A saved value as the card shows it.
fn shown(f: &Field, initial: &BTreeMap<String, String>) -> String {
    match f.kind {
        FieldKind::Rules => {
            let n = rule_rows(f.path, initial).saturating_sub(1);
            format::count(n, "rule")
        }
        FieldKind::Bool => if initial.get(f.path).is_some_and(|v| v == "true") { "on" } else { "off" }.into(),
        _ => match initial.get(f.path).map(String::as_str) {
            None | Some("") => "—".into(),
            Some(v) if is_duration(f.path) => v.parse().map_or_else(|_| v.to_owned(), human_ms),
            Some(v) => v.to_owned(),
        },
    }
}

/// The folded card's line: each value after its label.
fn one_line(card: &Card, initial: &BTreeMap<String, String>) -> String {
    card.fields.iter().map(|f| format!("{} {}", f.label, shown(f, initial))).collect::<Vec<_>>().join(" · ")
}
