//! Reusable widgets: the app shell with navigation, banners, badges.

mod chart;
mod confirm;
mod edit_panel;
mod error_detail;
mod form_errors;
mod shell;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

pub use chart::{ChartLegend, ChartTable, Frame, TrafficChart, describe, token_count};
pub use confirm::{CONFIRM_BUTTON, Confirm};
pub use edit_panel::{EditPanel, edited};
pub use error_detail::ErrorDetail;
pub use form_errors::{FieldNote, FieldNotes, FormErrors};
pub use shell::{Layout, Logo, NAV, page_title};

use crate::types::ConnectionStatus;

/// Shows `?error=` (set after a failed plain form post).
#[component]
pub fn ErrorBanner() -> impl IntoView {
    let query = use_query_map();
    move || {
        query.read().get("error").map(|e| {
            view! {
                <p role="alert" class="mb-4 p-3 rounded-md bg-red-100 text-red-800">
                    {e}
                </p>
            }
        })
    }
}

/// The outcome of the last action to finish on a page: its error, or what
/// it did ("Connection deleted."). A later success clears an earlier
/// failure's banner, whichever action it was (one banner per page, never a
/// stale one). The success line sits in a live region that is always
/// there, so screen readers announce each one.
#[derive(Clone, Copy)]
pub struct LastError(RwSignal<Option<Result<&'static str, String>>>);

impl Default for LastError {
    fn default() -> Self {
        Self(RwSignal::new(None))
    }
}

impl LastError {
    /// Follows `action`: when it finishes, its outcome becomes the banner's
    /// (a success says nothing).
    pub fn track<I, O: Clone + Send + Sync + 'static>(self, action: ServerAction<I>) -> Self
    where
        I: server_fn::ServerFn<Output = O> + Clone + Send + Sync + 'static,
        I::Error: Clone + Send + Sync + std::fmt::Display + 'static,
    {
        self.track_saying(action, "")
    }

    /// Follows `action`, saying `done` when it succeeds.
    pub fn track_saying<I, O: Clone + Send + Sync + 'static>(self, action: ServerAction<I>, done: &'static str) -> Self
    where
        I: server_fn::ServerFn<Output = O> + Clone + Send + Sync + 'static,
        I::Error: Clone + Send + Sync + std::fmt::Display + 'static,
    {
        // Only in the browser, where actions finish: an effect in server
        // rendering would need a local task set it does not always have.
        #[cfg(target_arch = "wasm32")]
        Effect::new(move |_| {
            if let Some(result) = action.value().get() {
                let outcome = result.map(|_| done).map_err(|e| readable_error(&e.to_string()));
                if let Err(e) = &outcome {
                    crate::session::follow_if_signed_out(e);
                }
                self.0.set(Some(outcome));
            }
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (action, done);
        self
    }

    pub fn view(self) -> impl IntoView {
        let done = move || match self.0.get() {
            Some(Ok(said)) => said,
            _ => "",
        };
        view! {
            {move || {
                self.0.get().and_then(Result::err).map(|e| {
                    view! {
                        <p role="alert" class="mb-4 p-3 rounded-md bg-red-100 text-red-800">
                            {e}
                        </p>
                    }
                })
            }}
            <p role="status" data-testid="action-done" class=move || if done().is_empty() { "sr-only" } else { "mb-4 p-3 rounded-md bg-green-100 text-green-800" }>
                {done}
            </p>
        }
    }
}

/// Empties `form` after each successful run of `action` (in the browser;
/// without JS the page reloads empty anyway), so an added connection's API
/// key or a created key's name does not linger in the form.
pub fn reset_on_success<I, O: Clone + Send + Sync + 'static>(action: ServerAction<I>, form: NodeRef<leptos::html::Form>)
where
    I: server_fn::ServerFn<Output = O> + Clone + Send + Sync + 'static,
    I::Error: Clone + Send + Sync + 'static,
{
    #[cfg(target_arch = "wasm32")]
    Effect::new(move |_| {
        if let (Some(Ok(_)), Some(form)) = (action.value().get(), form.get_untracked()) {
            form.reset();
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (action, form);
}

/// The error of the last run of the page's one action, if it failed.
pub fn action_error<I, O: Clone + Send + Sync + 'static>(action: ServerAction<I>) -> impl IntoView
where
    I: server_fn::ServerFn<Output = O> + Clone + Send + Sync + 'static,
    I::Error: Clone + Send + Sync + std::fmt::Display + 'static,
{
    LastError::default().track(action).view()
}

/// One link of a choice on a page (a window, a grouping): the current one
/// is marked, for the eye and for screen readers.
#[component]
pub fn ChoiceLink(
    href: impl Fn() -> String + Send + Sync + 'static,
    current: impl Fn() -> bool + Send + Sync + Copy + 'static,
    label: &'static str,
) -> impl IntoView {
    let class = move || if current() { "font-semibold underline" } else { "text-indigo-700" };
    view! {
        <a href=href aria-current=move || current().then_some("page") class=class>
            {label}
        </a>
    }
}

/// A connection's status word in its colour, with the time it lasts
/// counting down on `tick` ("cooling down · 1m 52s").
#[component]
pub fn StatusBadge(status: ConnectionStatus, remaining_ms: Option<u64>, tick: RwSignal<u64>) -> impl IntoView {
    let class = match status {
        ConnectionStatus::Active => "bg-green-100 text-green-800",
        ConnectionStatus::Disabled => "bg-slate-200 text-slate-700",
        ConnectionStatus::CoolingDown | ConnectionStatus::ModelLocked => "bg-amber-100 text-amber-800",
        ConnectionStatus::BreakerOpen | ConnectionStatus::Terminal => "bg-red-100 text-red-800",
    };
    let countdown = remaining_ms.filter(|ms| *ms > 0).map(|ms| view! { " · " <Countdown ms tick /> });
    view! {
        <span class=format!("px-2 py-0.5 rounded-md text-xs font-medium whitespace-nowrap {class}") data-status=status.label()>
            <span data-status-word="">{status.label()}</span>
            {countdown}
        </span>
    }
}

/// A counter that goes up every `period` once the page is hydrated (it
/// stays 0 during server rendering, so both sides render the same).
pub fn use_ticker(period: std::time::Duration) -> RwSignal<u64> {
    let tick = RwSignal::new(0u64);
    // Only in the browser, where time passes for the page: an effect in
    // server rendering would need a local task set it does not always have.
    #[cfg(target_arch = "wasm32")]
    Effect::new(move |_| {
        let handle = set_interval_with_handle(move || tick.update(|t| *t += 1), period);
        on_cleanup(move || {
            if let Ok(h) = handle {
                h.clear();
            }
        });
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = period;
    tick
}

/// Seconds ticked by a one-second [`use_ticker`]; pages refresh their
/// data every [`REFRESH_TICKS`] of them.
pub const REFRESH_TICKS: u64 = 5;

/// A remaining time counting down with a one-second `tick`.
#[component]
pub fn Countdown(ms: u64, tick: RwSignal<u64>) -> impl IntoView {
    let start = tick.get_untracked();
    view! {
        <span class="font-mono" data-countdown=ms>
            {move || crate::format::duration(ms.saturating_sub(tick.get().saturating_sub(start) * 1000))}
        </span>
    }
}

/// The look of a small secondary button.
pub const BUTTON: &str = "px-2 py-1 rounded-md border border-slate-300 bg-white hover:bg-slate-100 text-sm";

/// A table header row with these column titles.
#[component]
pub fn TableHead(columns: &'static [&'static str]) -> impl IntoView {
    view! {
        <thead>
            <tr class="text-left border-b border-slate-200">
                {columns.iter().map(|c| view! { <th class="p-2">{*c}</th> }).collect_view()}
            </tr>
        </thead>
    }
}

/// A server function's error as a sentence for people: the server's own
/// message without the framework's "error running server function: "
/// prefix, and what to do when the gateway could not be reached.
pub fn readable_error(text: &str) -> String {
    if let Some(message) = text.strip_prefix("error running server function: ") {
        return message.to_owned();
    }
    if text.starts_with("error reaching server to call server function") {
        return "The gateway did not answer. Check that it is running, then try again.".to_owned();
    }
    text.to_owned()
}

/// A page's data that did not load: the reason, or (session ended) the
/// way to the login page.
#[component]
pub fn LoadFailed(error: String) -> impl IntoView {
    let error = readable_error(&error);
    #[cfg(target_arch = "wasm32")]
    {
        let error = error.clone();
        Effect::new(move |_| crate::session::follow_if_signed_out(&error));
    }
    view! { <p role="alert" class="mb-4 p-3 rounded-md bg-red-100 text-red-800">{error}</p> }
}

/// Fallback while a page's data loads.
#[component]
pub fn Loading() -> impl IntoView {
    view! { <p class="text-slate-500">"Loading…"</p> }
}

#[cfg(test)]
mod tests {
    use super::readable_error;

    #[test]
    fn errors_read_as_the_servers_sentence() {
        assert_eq!(readable_error("error running server function: name: is required"), "name: is required");
        assert!(
            readable_error("error reaching server to call server function: TypeError")
                .starts_with("The gateway did not answer")
        );
        assert_eq!(readable_error("Wrong password"), "Wrong password");
    }
}
