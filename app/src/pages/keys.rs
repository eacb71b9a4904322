//! `/keys`: client API keys — create (the key is shown once), revoke.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    api::{CreateKey, RevokeKey, get_keys, take_new_key},
    components::{Layout, Loading, action_error},
    format::timestamp,
    types::{ApiKeyView, CreatedApiKey},
};

#[component]
pub fn KeysPage() -> impl IntoView {
    let create = ServerAction::<CreateKey>::new();
    let revoke = ServerAction::<RevokeKey>::new();
    let keys = Resource::new(move || (create.version().get(), revoke.version().get()), |_| get_keys());
    // After a plain form post the server redirects to ?created=<id>.
    let query = use_query_map();
    let stashed = Resource::new(
        move || query.read().get("created"),
        |id| async move {
            match id {
                Some(id) => take_new_key(id).await.ok().flatten(),
                None => None,
            }
        },
    );
    view! {
        <Layout title="API keys">
            {action_error(create)}
            {action_error(revoke)}
            {move || create.value().get().and_then(|r| r.ok()).map(|created| view! { <NewKey created /> })}
            <Transition fallback=|| ()>
                {move || Suspend::new(async move { stashed.await.map(|created| view! { <NewKey created /> }) })}
            </Transition>
            <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
                <h2 class="font-semibold mb-2">"Create a key"</h2>
                <ActionForm action=create attr:class="flex flex-wrap gap-3 items-end" attr:data-testid="create-key">
                    <label class="flex flex-col text-sm">
                        "Name"
                        <input name="name" required class="border border-slate-300 rounded-md px-2 py-1" />
                    </label>
                    <label class="text-sm flex items-center gap-1">
                        <input type="checkbox" name="management" value="on" />
                        "also allow the management API"
                    </label>
                    <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white">
                        "Create"
                    </button>
                </ActionForm>
            </section>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match keys.await {
                        Ok(list) => view! { <KeyTable keys=list.keys revoke /> }.into_any(),
                        Err(e) => view! { <p role="alert">{e.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

#[component]
fn NewKey(created: CreatedApiKey) -> impl IntoView {
    view! {
        <div role="status" class="mb-4 p-3 rounded-md bg-green-50 text-green-900">
            <p>"Copy this key now — it will not be shown again:"</p>
            <code class="block mt-1 p-2 bg-white rounded-md font-mono break-all" data-testid="new-key">
                {created.key}
            </code>
        </div>
    }
}

#[component]
fn KeyTable(keys: Vec<ApiKeyView>, revoke: ServerAction<RevokeKey>) -> impl IntoView {
    if keys.is_empty() {
        return view! {
            <p class="text-slate-500">"No keys yet: /v1 accepts anonymous local requests until the first key exists."</p>
        }
        .into_any();
    }
    view! {
        <table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="keys">
            <thead>
                <tr class="text-left border-b border-slate-200">
                    <th class="p-2">"Name"</th>
                    <th class="p-2">"Key"</th>
                    <th class="p-2">"Scopes"</th>
                    <th class="p-2">"Created (UTC)"</th>
                    <th class="p-2"></th>
                </tr>
            </thead>
            <tbody>
                {keys
                    .into_iter()
                    .map(|k| {
                        let scopes: Vec<&str> = k.scopes.iter().map(|s| s.as_str()).collect();
                        view! {
                            <tr class="border-b border-slate-100">
                                <td class="p-2">{k.name}</td>
                                <td class="p-2 font-mono">{format!("{}…", k.key_prefix)}</td>
                                <td class="p-2">{scopes.join(", ")}</td>
                                <td class="p-2">{timestamp(k.created_at)}</td>
                                <td class="p-2">
                                    <ActionForm action=revoke>
                                        <input type="hidden" name="id" value=k.id />
                                        <button type="submit" class="px-2 py-1 rounded-md border border-slate-300 text-red-700 text-sm">
                                            "Revoke"
                                        </button>
                                    </ActionForm>
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
