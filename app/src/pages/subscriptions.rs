//! The Providers page's subscription forms: sign in with Claude, ChatGPT
//! or Google (start, open the provider's page, paste back the code it
//! shows or the address it ends on) and import the file Claude Code, Codex
//! or the Gemini CLI wrote. Both end in a connection in the table below. Every step works
//! without JS: a started sign-in reloads the page at `?sign_in=<state>`,
//! which shows it again until its code comes.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    api::{FinishSignIn, ImportSubscription, StartSignIn, credentials_on_this_machine, pending_sign_in},
    components::{BUTTON, FieldNote, FieldNotes, FormErrors, reset_on_success},
    types::subscription::{LocalCredentialsFile, WaitingSignIn},
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
    // The CLIs' files on the gateway's machine, offered to a browser on it.
    let local_files = Resource::new(move || import.version().get(), |_| credentials_on_this_machine());
    reset_on_success(import, import_form);
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm" data-testid="subscriptions">
            <h2 class="font-semibold mb-1">"Add a subscription account"</h2>
            <p class="text-sm text-slate-600 mb-3 max-w-prose">
                "A Claude Pro or Max subscription serves requests as provider claude; a ChatGPT Plus, Pro or Team subscription serves the models Codex uses as provider codex; a Google account's Gemini Code Assist (as the Gemini CLI uses it) serves Gemini models as provider gemini-cli. Sign in, or import the file the CLI wrote. The gateway renews the account's token itself; if the provider refuses it, the connection turns expired and you sign in again."
            </p>
            <div class="flex flex-wrap gap-2 mb-3">
                <StartForm start provider="claude" label="Sign in with Claude" />
                <StartForm start provider="codex" label="Sign in with ChatGPT" />
                <StartForm start provider="gemini-cli" label="Sign in with Google (Gemini CLI)" />
            </div>
            {move || started().map(|started| view! { <FinishForm started finish errors=finish_errors /> })}
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let shown = start.value().get().is_some();
                    reloaded.await.filter(|_| !shown).map(|started| view! { <FinishForm started finish errors=finish_errors /> })
                })}
            </Transition>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let found: Vec<LocalCredentialsFile> = local_files.await.map(|l| l.files).unwrap_or_default();
                    let found: Vec<LocalCredentialsFile> = found.into_iter().filter(|f| f.found).collect();
                    (!found.is_empty()).then(|| view! { <LocalFiles files=found import errors=import_errors /> })
                })}
            </Transition>
            <details class="mt-2">
                <summary class="disclosure cursor-pointer text-sm">"Import the credentials file Claude Code, Codex or the Gemini CLI wrote"</summary>
                <ActionForm action=import node_ref=import_form attr:class="flex flex-col gap-2 mt-2 max-w-xl" attr:data-testid="import-subscription">
                    <label class="flex flex-col text-sm">
                        "File"
                        <select name="format" class=INPUT aria-invalid=import_errors.invalid("format") aria-describedby=import_errors.described_by("format")>
                            <option value="claude-code">"Claude Code: ~/.claude/.credentials.json"</option>
                            <option value="codex">"Codex: ~/.codex/auth.json"</option>
                            <option value="gemini-cli">"Gemini CLI: ~/.gemini/oauth_creds.json"</option>
                        </select>
                        <FieldNote errors=import_errors field="format" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "Name"
                        <input name="name" required placeholder="e.g. laptop Max" class=INPUT aria-invalid=import_errors.invalid("name") aria-describedby=import_errors.described_by("name") />
                        <FieldNote errors=import_errors field="name" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "The file's contents"
                        <textarea name="credentials" required rows="4" spellcheck="false" placeholder=r#"{"claudeAiOauth":{…}}, {"tokens":{…}} or {"access_token":…}"# class=format!("{INPUT} font-mono text-xs") aria-invalid=import_errors.invalid("credentials") aria-describedby=import_errors.described_by("credentials")></textarea>
                        <FieldNotes errors=import_errors fields=&FILE_FIELDS />
                    </label>
                    <button type="submit" class=format!("{BUTTON} self-start")>"Import"</button>
                </ActionForm>
            </details>
        </section>
    }
}

/// The CLIs' credentials files found at their default paths on the
/// gateway's machine (this browser runs on it): one click imports each.
#[component]
fn LocalFiles(
    files: Vec<LocalCredentialsFile>,
    import: ServerAction<ImportSubscription>,
    errors: FormErrors,
) -> impl IntoView {
    view! {
        <div class="mb-2 text-sm" data-testid="local-credentials">
            <p class="mb-1">"Found on this machine, where the gateway runs:"</p>
            {files
                .into_iter()
                .map(|f| {
                    let label = format!("Import {}'s {}", f.format.cli(), f.path);
                    view! {
                        <ActionForm action=import attr:class="flex flex-wrap gap-2 items-center mb-1">
                            <input type="hidden" name="format" value=f.format.as_str() />
                            <input type="hidden" name="from_this_machine" value="1" />
                            <input name="name" required aria-label=format!("Name for {}", f.path) placeholder="name, e.g. laptop" class=INPUT />
                            <button type="submit" class=BUTTON>{label}</button>
                        </ActionForm>
                    }
                })
                .collect_view()}
            <FieldNote errors field="fromThisMachine" />
        </div>
    }
}

/// The button that starts a sign-in to `provider`.
#[component]
fn StartForm(start: ServerAction<StartSignIn>, provider: &'static str, label: &'static str) -> impl IntoView {
    view! {
        <ActionForm action=start>
            <input type="hidden" name="provider" value=provider />
            <button type="submit" class=BUTTON>{label}</button>
        </ActionForm>
    }
}

/// The fields of the credentials files a refusal may name.
const FILE_FIELDS: [&str; 8] = [
    "credentials",
    "credentials.access_token",
    "credentials.expiry_date",
    "credentials.claudeAiOauth.accessToken",
    "credentials.claudeAiOauth.expiresAt",
    "credentials.tokens",
    "credentials.tokens.access_token",
    "credentials.tokens.account_id",
];

/// What a sign-in's two steps say: the page to open, what it ends on, and
/// what to paste back.
fn steps(provider: &str) -> (&'static str, &'static str, &'static str, &'static str) {
    match provider {
        "codex" => (
            "Open ChatGPT's sign-in page",
            " and sign in. Your browser then lands on a localhost:1455 page, which may not load: that is expected.",
            "2. Paste that page's whole address from the address bar (it works once, within 10 minutes)",
            "ChatGPT subscription",
        ),
        "gemini-cli" => (
            "Open Google's sign-in page",
            " and sign in; it then shows an authorization code.",
            "2. Paste the code here (it works once, within 10 minutes)",
            "Gemini CLI account",
        ),
        _ => (
            "Open Claude's sign-in page",
            " and sign in; it then shows a code.",
            "2. Paste the code here (it works once, within 10 minutes)",
            "Claude subscription",
        ),
    }
}

/// A started sign-in: the provider's page to open, and where its code goes.
#[component]
fn FinishForm(started: WaitingSignIn, finish: ServerAction<FinishSignIn>, errors: FormErrors) -> impl IntoView {
    let (open, lands_on, paste, name) = steps(&started.provider);
    // The gateway's own listener at the redirect address completes it.
    let lands_on = if started.started.listening {
        " and sign in. The gateway listens at localhost:1455 on this machine: your browser comes back to this dashboard by itself, with the account added. If it lands on a page that does not load instead, paste its address below."
    } else {
        lands_on
    };
    view! {
        <ActionForm action=finish attr:class="flex flex-col gap-2 mb-3 max-w-xl border-l-4 border-indigo-300 pl-3" attr:data-testid="finish-sign-in">
            <p class="text-sm">
                "1. "
                <a href=started.started.authorize_url target="_blank" rel="noopener noreferrer" class="text-indigo-600 underline" data-testid="authorize-url">
                    {open}
                </a>
                {lands_on}
            </p>
            <input type="hidden" name="provider" value=started.provider />
            <input type="hidden" name="state" value=started.started.state />
            <label class="flex flex-col text-sm">
                {paste}
                <input name="code" required autocomplete="off" class=INPUT aria-invalid=errors.invalid("code") aria-describedby=errors.described_by("code") />
                <FieldNote errors field="code" />
                <FieldNote errors field="state" />
            </label>
            <label class="flex flex-col text-sm">
                "Name"
                <input name="name" value=name class=INPUT />
            </label>
            <button type="submit" class=format!("{BUTTON} self-start")>"Add the account"</button>
        </ActionForm>
    }
}
