//! `/get-started`, the landing page until a connection and a key exist:
//! add a provider, test it, create a key (right here), then copy the setup
//! of each agent with this gateway's URL and the new key filled in.

use leptos::prelude::*;

use crate::{
    api::{CreateKey, get_started},
    components::{LastError, Layout, LoadFailed, Loading},
    format,
    pages::keys::stashed_new_key,
    types::{
        CreatedApiKey,
        onboarding::{GetStarted, snippets},
    },
};

use crate::paths::GET_STARTED as PATH;

/// Stands in for the key in the snippets until one is created here.
const KEY_PLACEHOLDER: &str = "<your key>";

const LINK_BUTTON: &str = "inline-block mt-2 px-3 py-1 rounded-md bg-indigo-600 text-white text-sm";

#[component]
pub fn GetStartedPage() -> impl IntoView {
    let create = ServerAction::<CreateKey>::new();
    let facts = Resource::new(move || create.version().get(), |_| get_started());
    let stashed = stashed_new_key();
    view! {
        <Layout title="Get started" summary="From an empty gateway to an agent that talks through it, in four steps.">
            {LastError::default().track(create).view()}
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let stashed = stashed.await;
                    match facts.await {
                        Ok(f) => view! { <Steps f create stashed /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

#[component]
fn Steps(f: GetStarted, create: ServerAction<CreateKey>, stashed: Option<CreatedApiKey>) -> impl IntoView {
    let stashed = StoredValue::new(stashed);
    let new_key = move || create.value().get().and_then(Result::ok).or_else(|| stashed.get_value());
    let connections = match f.connections {
        0 => "No provider connection yet.".to_owned(),
        n => format!("✓ {}.", format::count(n, "connection")),
    };
    let tested = match f.tested {
        0 => "No connection has passed a test yet: press Test on a connection; a passed test lists its models."
            .to_owned(),
        1 => "✓ 1 connection passed its test.".to_owned(),
        n => format!("✓ {n} connections passed their test."),
    };
    let keys = match f.keys {
        0 => "No key yet. Until one exists, only this machine may call /v1 without one.".to_owned(),
        n => format!(
            "{} {}; a key is shown only once, so create one here to fill in the snippets.",
            format::count(n, "key"),
            if n == 1 { "exists" } else { "exist" }
        ),
    };
    let (base_url, model) = (f.base_url.clone(), f.example_model.clone());
    view! {
        <ol class="flex flex-col gap-4">
            <Step n=1 title="Add a provider" done={f.connections > 0} status=connections>
                <a href="/providers" class=LINK_BUTTON>"Add a provider"</a>
            </Step>
            <Step n=2 title="Test it" done={f.tested > 0} status=tested>
                <a href="/providers" class=LINK_BUTTON>"Test on Providers"</a>
            </Step>
            <Step n=3 title="Create a key" done={f.keys > 0} status=keys>
                <ActionForm action=create attr:class="flex flex-wrap gap-2 items-end mt-2" attr:data-testid="create-key">
                    <input type="hidden" name="scopes[inference]" value="on" />
                    <input type="hidden" name="page" value=PATH />
                    <label class="flex flex-col text-sm">
                        "Key name"
                        <input name="name" required maxlength="100" placeholder="laptop" class="border border-slate-300 rounded-md px-2 py-1" />
                    </label>
                    <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white text-sm">"Create key"</button>
                </ActionForm>
                {move || new_key().map(|k| view! {
                    <p class="mt-2 p-3 rounded-md bg-green-50 text-green-900 text-sm" role="status">
                        "Your new key (shown once; the snippets below use it): "
                        <code class="font-mono" data-testid="new-key">{k.key}</code>
                    </p>
                })}
            </Step>
            <Step n=4 title="Point your agent at it" done=false status=format!("Models are addressed as provider/model, e.g. {model}.")>
                <div class="grid gap-3 mt-2 md:grid-cols-2 items-start">
                    {move || {
                        let key = new_key().map_or_else(|| KEY_PLACEHOLDER.to_owned(), |k| k.key);
                        snippets(&base_url, &key, &model)
                            .into_iter()
                            .map(|s| view! { <SnippetCard agent=s.agent place=s.place text=s.text /> })
                            .collect_view()
                    }}
                </div>
            </Step>
        </ol>
    }
}

#[component]
fn Step(n: u8, title: &'static str, done: bool, status: String, children: Children) -> impl IntoView {
    let mark = if done { "bg-green-100 text-green-800" } else { "bg-slate-200 text-slate-700" };
    view! {
        <li class="bg-white p-4 rounded-md shadow-sm" data-step=n data-done=done.to_string()>
            <h2 class="font-semibold flex items-center gap-2">
                <span class=format!("px-2 rounded-md text-sm {mark}")>{if done { "✓".to_owned() } else { n.to_string() }}</span>
                {title}
            </h2>
            <p class="text-sm text-slate-600 mt-1">{status}</p>
            {children()}
        </li>
    }
}

/// One agent's setup with a Copy button (shown once hydrated: without
/// JavaScript the text is there to select).
#[component]
fn SnippetCard(agent: &'static str, place: &'static str, text: String) -> impl IntoView {
    let hydrated = RwSignal::new(false);
    let copied = RwSignal::new(false);
    #[cfg(target_arch = "wasm32")]
    Effect::new(move |_| hydrated.set(true));
    let to_copy = text.clone();
    view! {
        <section class="border border-slate-200 rounded-md p-3 min-w-0" data-snippet=agent>
            <div class="flex items-center justify-between gap-2">
                <h3 class="font-medium">{agent}<span class="text-slate-500 text-xs font-normal">{format!(" · {place}")}</span></h3>
                <Show when=move || hydrated.get()>
                    <button
                        type="button"
                        class="px-2 py-1 rounded-md border border-slate-300 text-xs"
                        aria-label=format!("Copy the {agent} setup")
                        on:click={
                            let to_copy = to_copy.clone();
                            move |_| {
                                copy(&to_copy);
                                copied.set(true);
                            }
                        }
                    >
                        {move || if copied.get() { "Copied" } else { "Copy" }}
                    </button>
                </Show>
            </div>
            <pre class="mt-2 p-2 bg-slate-100 rounded-md text-xs font-mono whitespace-pre-wrap break-all" data-testid="snippet">{text}</pre>
        </section>
    }
}

/// Puts `text` on the clipboard (in the browser).
fn copy(text: &str) {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = window().navigator().clipboard().write_text(text);
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = text;
}
