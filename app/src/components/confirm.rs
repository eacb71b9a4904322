//! Destructive actions behind a confirmation step: a disclosure whose
//! summary names the action and its row ("Delete fake-a" to a screen
//! reader), and whose body asks the question above the form that acts. A
//! disclosure opens without JavaScript, so the step is the same with and
//! without it.

use leptos::prelude::*;

use super::BUTTON;

/// `verb` opens the step; `subject` names what it acts on; `question`
/// says what will happen; `children` is the form whose button acts.
#[component]
pub fn Confirm(verb: &'static str, subject: String, question: String, children: Children) -> impl IntoView {
    view! {
        <details class="confirm">
            <summary
                class=format!("{BUTTON} text-red-700 cursor-pointer list-none")
                role="button"
                aria-label=format!("{verb} {subject}")
            >
                {verb}
            </summary>
            <div class="mt-2 p-2 rounded-md bg-red-50 text-red-900 max-w-xs" data-testid="confirm">
                <p>{question}</p>
                {children()}
            </div>
        </details>
    }
}

/// The look of the button that confirms.
pub const CONFIRM_BUTTON: &str = "mt-2 px-2 py-1 rounded-md bg-red-700 text-white text-sm";
