//! Destructive actions behind a confirmation step: a disclosure whose
//! summary names the action and its row ("Delete fake-a" to a screen
//! reader), and whose body asks the question above the form that acts.
//!
//! Without JavaScript the disclosure opens in place and its body (a
//! `<dialog open>`, laid out in the page's flow) shows the question and
//! the form. Once hydrated, the summary opens that same dialog as a modal
//! instead: the page behind it is inert, focus moves to its Cancel button
//! (the safe choice), and Escape or Cancel closes it without acting and
//! gives the focus back to the summary. The form is rendered once, so both
//! ways submit the same thing.

use leptos::{ev::MouseEvent, html, prelude::*};

use super::BUTTON;

/// `verb` opens the step; `subject` names what it acts on; `question`
/// says what will happen; `children` is the form whose button acts.
#[component]
pub fn Confirm(verb: &'static str, subject: String, question: String, children: Children) -> impl IntoView {
    let details = NodeRef::<html::Details>::new();
    let summary = NodeRef::<html::Summary>::new();
    let dialog = NodeRef::<html::Dialog>::new();
    let cancel = NodeRef::<html::Button>::new();
    let label = format!("{verb} {subject}");
    view! {
        <details class="confirm" node_ref=details>
            <summary
                node_ref=summary
                class=format!("{BUTTON} text-red-700 cursor-pointer list-none")
                role="button"
                aria-label=label.clone()
                on:click=move |ev| open_modal(ev, details, dialog, cancel)
            >
                {verb}
            </summary>
            <dialog
                open
                node_ref=dialog
                class="confirm-step mt-2 p-2 rounded-md bg-red-50 text-red-900 max-w-xs"
                aria-label=label
                data-testid="confirm"
                on:close=move |_| close_step(details, dialog, summary)
                on:submit=move |_| close_modal(dialog)
            >
                <p>{question}</p>
                {children()}
                <form method="dialog" class="dialog-only">
                    <button type="submit" node_ref=cancel class=format!("{BUTTON} mt-2")>"Cancel"</button>
                </form>
            </dialog>
        </details>
    }
}

/// The summary's click once hydrated: the step as a modal. The disclosure
/// opens underneath (a dialog inside a shut one would not be drawn) and
/// shuts again when the dialog closes.
fn open_modal(
    ev: MouseEvent,
    details: NodeRef<html::Details>,
    dialog: NodeRef<html::Dialog>,
    cancel: NodeRef<html::Button>,
) {
    let (Some(details), Some(dialog)) = (details.get(), dialog.get()) else { return };
    ev.prevent_default();
    details.set_open(true);
    // It is open (not modal) for the disclosure without JS.
    dialog.close();
    let _ = dialog.show_modal();
    if let Some(cancel) = cancel.get() {
        let _ = cancel.focus();
    }
}

/// A submitted step (the action runs; its banner must not hide behind
/// the modal) or a cancelled one closes.
fn close_modal(dialog: NodeRef<html::Dialog>) {
    if let Some(dialog) = dialog.get() {
        dialog.close();
    }
}

/// The dialog's `close` event shuts the disclosure again, unless the
/// dialog is open by then: `close()` in [`open_modal`] queues a `close`
/// event that arrives after `show_modal()`.
fn close_step(details: NodeRef<html::Details>, dialog: NodeRef<html::Dialog>, summary: NodeRef<html::Summary>) {
    let (Some(details), Some(dialog)) = (details.get(), dialog.get()) else { return };
    if !dialog.open() {
        details.set_open(false);
        if let Some(summary) = summary.get() {
            let _ = summary.focus();
        }
    }
}

/// The look of the button that confirms.
pub const CONFIRM_BUTTON: &str = "mt-2 px-2 py-1 rounded-md bg-red-700 text-white text-sm";
