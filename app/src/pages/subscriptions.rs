//! The Providers page's subscription forms: sign in with Claude (start,
//! open Claude's page, paste back the code it shows) and import the file
//! Claude Code wrote. Both end in a connection in the table below. Every
//! step works without JS: a started sign-in reloads the page at
//! `?sign_in=<state>`, which shows it again until its code comes.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    api::{FinishSignIn, ImportSubscription, StartSignIn, pending_sign_in},
    components::{BUTTON, FieldNote, FormErrors, reset_on_success},
    types::subscription::SignInStarted,
};

const INPUT: &str = "border border-slate-300 rounded-md px-2 py-1";

/// The subscription forms' actions; their successes refresh the page's table.
#[derive(Clone, Copy)]
pub struct SubscriptionActions {
    pub start: ServerAction<StartSignIn>,
    pub finish: ServerAction<FinishSignIn>,
    pub import: ServerAction<ImportSubscription>,
}

impl Default for SubscriptionActions {
    fn default() -> Self {
        Self { start: ServerAction::new(), finish: ServerAction::new(), import: ServerAction::new() }
    }
}

impl SubscriptionActions {
    /// Changes whenever a subscription was added.
    pub fn added(self) -> (usize, usize) {
        (self.finish.version().get(), self.import.version().get())
    }
}

#[component]
pub fn SubscriptionForms(actions: SubscriptionActions) -> impl IntoView {
    let SubscriptionActions { start, finish, import } = actions;
    let query = use_query_map();
    let reloaded = Resource::new(
        move || query.read().get("sign_in"),
        |state| async move {
            match state {
                Some(state) => pending_sign_in(state).await.ok().flatten(),
                None => None,
            }
        },
    );
    // A sign-in started in the browser, until its code was accepted.
    let started =
        move || start.value().get().and_then(Result::ok).filter(|_| !matches!(finish.value().get(), Some(Ok(()))));
    let finish_errors = FormErrors::of("finish-sign-in", finish);
    let import_errors = FormErrors::of("import-subscription", import);
    let import_form = NodeRef::<leptos::html::Form>::new();
    reset_on_success(import, import_form);
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm" data-testid="subscriptions">
            <h2 class="font-semibold mb-1">"Add a subscription account"</h2>
            <p class="text-sm text-slate-600 mb-3 max-w-prose">
                "A Claude Pro or Max subscription serves requests as provider claude. Sign in with Claude, or import the file Claude Code wrote. The gateway renews the account's token itself; if Claude refuses it, the connection turns expired and you sign in again."
            </p>
            <ActionForm action=start attr:class="mb-3" attr:data-testid="start-sign-in">
                <input type="hidden" name="provider" value="claude" />
                <button type="submit" class=BUTTON>"Sign in with Claude"</button>
            </ActionForm>
            {move || started().map(|started| view! { <FinishForm started finish errors=finish_errors /> })}
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let shown = start.value().get().is_some();
                    reloaded.await.filter(|_| !shown).map(|started| view! { <FinishForm started finish errors=finish_errors /> })
                })}
            </Transition>
            <details class="mt-2">
                <summary class="cursor-pointer text-sm">"Import Claude Code's credentials file"</summary>
                <ActionForm action=import node_ref=import_form attr:class="flex flex-col gap-2 mt-2 max-w-xl" attr:data-testid="import-subscription">
                    <label class="flex flex-col text-sm">
                        "Name"
                        <input name="name" required value="Claude subscription" class=INPUT aria-invalid=import_errors.invalid("name") aria-describedby=import_errors.described_by("name") />
                        <FieldNote errors=import_errors field="name" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "The contents of ~/.claude/.credentials.json"
                        <textarea name="credentials" required rows="4" spellcheck="false" placeholder=r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-…","refreshToken":"…","expiresAt":…}}"# class=format!("{INPUT} font-mono text-xs") aria-invalid=import_errors.invalid("credentials") aria-describedby=import_errors.described_by("credentials")></textarea>
                        <FieldNote errors=import_errors field="credentials" />
                        <FieldNote errors=import_errors field="credentials.claudeAiOauth.accessToken" />
                    </label>
                    <button type="submit" class=format!("{BUTTON} self-start")>"Import"</button>
                </ActionForm>
            </details>
        </section>
    }
}

/// A started sign-in: Claude's page to open, and where its code goes.
#[component]
fn FinishForm(started: SignInStarted, finish: ServerAction<FinishSignIn>, errors: FormErrors) -> impl IntoView {
    view! {
        <ActionForm action=finish attr:class="flex flex-col gap-2 mb-3 max-w-xl border-l-4 border-indigo-300 pl-3" attr:data-testid="finish-sign-in">
            <p class="text-sm">
                "1. "
                <a href=started.authorize_url target="_blank" rel="noopener noreferrer" class="text-indigo-600 underline" data-testid="authorize-url">
                    "Open Claude's sign-in page"
                </a>
                " and sign in; it then shows a code."
            </p>
            <input type="hidden" name="provider" value="claude" />
            <input type="hidden" name="state" value=started.state />
            <label class="flex flex-col text-sm">
                "2. Paste the code here (it works once, within 10 minutes)"
                <input name="code" required autocomplete="off" class=INPUT aria-invalid=errors.invalid("code") aria-describedby=errors.described_by("code") />
                <FieldNote errors field="code" />
                <FieldNote errors field="state" />
            </label>
            <label class="flex flex-col text-sm">
                "Name"
                <input name="name" value="Claude subscription" class=INPUT />
            </label>
            <button type="submit" class=format!("{BUTTON} self-start")>"Add the account"</button>
        </ActionForm>
    }
}
