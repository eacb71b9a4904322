//! A form's refusal placed at its inputs. The server refuses a form with
//! its field errors in one sentence ("Base URL: must be …; Name: …", see
//! `types::message_for`); each input shows its own part underneath, tied
//! to it by `aria-describedby` and marked `aria-invalid`, and the next
//! success of the form clears them. The page's banner still says it all.

use leptos::prelude::*;

use crate::types::message_for;

#[derive(Clone, Copy)]
pub struct FormErrors {
    /// The text of the form's last refusal (`None` after a success).
    text: RwSignal<Option<String>>,
    /// Prefixes the notes' ids (unique on the page).
    form: &'static str,
}

impl FormErrors {
    /// Follows `action`, the form's one action (in the browser, where
    /// actions finish; without JS the page's banner says it).
    pub fn of<I, O: Clone + Send + Sync + 'static>(form: &'static str, action: ServerAction<I>) -> Self
    where
        I: server_fn::ServerFn<Output = O> + Clone + Send + Sync + 'static,
        I::Error: Clone + Send + Sync + std::fmt::Display + 'static,
    {
        let text = RwSignal::new(None);
        #[cfg(target_arch = "wasm32")]
        Effect::new(move |_| {
            if let Some(result) = action.value().get() {
                text.set(result.err().map(|e| super::readable_error(&e.to_string())));
            }
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = action;
        Self { text, form }
    }

    /// The last refusal's message for `field` (its JSON path).
    pub fn message(self, field: &'static str) -> Option<String> {
        self.text.with(|t| t.as_deref().and_then(|t| message_for(t, field)))
    }

    fn note_id(self, field: &str) -> String {
        format!("{}-{}-error", self.form, field.replace(['.', '[', ']'], "-"))
    }

    /// `aria-invalid` of the field's input.
    pub fn invalid(self, field: &'static str) -> impl Fn() -> &'static str + Copy + Send + Sync + 'static {
        move || if self.message(field).is_some() { "true" } else { "false" }
    }

    /// `aria-describedby` of the field's input: its note, while it has one.
    pub fn described_by(self, field: &'static str) -> impl Fn() -> Option<String> + Copy + Send + Sync + 'static {
        move || self.message(field).map(|_| self.note_id(field))
    }
}

/// The message under a field's input, while the last refusal names it.
#[component]
pub fn FieldNote(errors: FormErrors, field: &'static str) -> impl IntoView {
    move || errors.message(field).map(|m| note(errors, field, m))
}

/// The message under an input that holds several fields (a file's JSON):
/// the first of `fields` the last refusal names.
#[component]
pub fn FieldNotes(errors: FormErrors, fields: &'static [&'static str]) -> impl IntoView {
    move || fields.iter().find_map(|field| Some(note(errors, field, errors.message(field)?)))
}

fn note(errors: FormErrors, field: &'static str, message: String) -> impl IntoView {
    view! { <span id=errors.note_id(field) class="text-xs text-red-700" data-field-error=field>{message}</span> }
}
