//! `/keys`: client API keys — create one with its scopes and the
//! connections it may use (the key is shown once), see each key's scopes,
//! allowed connections by name, creation and last use, and revoke one
//! after a confirmation. Every action is a plain form post too.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    api::{CreateKey, RevokeKey, get_connections, get_keys, take_new_key},
    components::{
        CONFIRM_BUTTON, Confirm, FieldNote, FormErrors, LastError, Layout, LoadFailed, Loading, TableHead,
        reset_on_success,
    },
    format::timestamp,
    types::{ApiKeyView, ConnectionView, CreatedApiKey, Scope},
};

/// What each scope lets a key do, as the form explains it.
fn scope_help(scope: Scope) -> &'static str {
    match scope {
        Scope::Inference => "call the /v1 endpoints (models, chat, messages, responses)",
        Scope::Management => "call the management API (/api), as the dashboard does",
        Scope::LeaseExclusive => "hold exclusive session leases on its allowed connections",
    }
}

#[component]
pub fn KeysPage() -> impl IntoView {
    let create = ServerAction::<CreateKey>::new();
    let revoke = ServerAction::<RevokeKey>::new();
    let keys = Resource::new(move || (create.version().get(), revoke.version().get()), |_| get_keys());
    let connections = Resource::new(|| (), |_| get_connections());
    let stashed = stashed_new_key();
    let errors = FormErrors::of("create-key", create);
    view! {
        <Layout title="API keys">
            {LastError::default().track(create).track_saying(revoke, "Key revoked.").view()}
            {move || create.value().get().and_then(|r| r.ok()).map(|created| view! { <NewKey created /> })}
            <Transition fallback=|| ()>
                {move || Suspend::new(async move { stashed.await.map(|created| view! { <NewKey created /> }) })}
            </Transition>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let connections = match connections.await {
                        Ok(list) => list.connections,
                        Err(e) => return view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    };
                    let list = match keys.await {
                        Ok(list) => list.keys,
                        Err(e) => return view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    };
                    view! {
                        <CreateForm create errors connections=connections.clone() />
                        <KeyTable keys=list connections revoke />
                    }
                        .into_any()
                })}
            </Transition>
        </Layout>
    }
}

/// The key a plain (no-JS) form post created: the server redirects to
/// `?created=<id>` and hands the key out once.
pub fn stashed_new_key() -> Resource<Option<CreatedApiKey>> {
    let query = use_query_map();
    Resource::new(
        move || query.read().get("created"),
        |id| async move {
            match id {
                Some(id) => take_new_key(id).await.ok().flatten(),
                None => None,
            }
        },
    )
}

#[component]
fn CreateForm(create: ServerAction<CreateKey>, errors: FormErrors, connections: Vec<ConnectionView>) -> impl IntoView {
    let choices = if connections.is_empty() {
        view! { <p class="text-sm text-slate-500">"No connections yet: the key may use every connection added later."</p> }
            .into_any()
    } else {
        connections
            .into_iter()
            .map(|c| {
                view! {
                    <label class="text-sm flex items-center gap-1">
                        <input type="checkbox" name=format!("allowed[conn-{}]", c.id) value="on" />
                        {format!("{} ({})", c.name, c.provider)}
                    </label>
                }
            })
            .collect_view()
            .into_any()
    };
    // A created key leaves the form as it first was: no second admin key by accident.
    let form = NodeRef::<leptos::html::Form>::new();
    reset_on_success(create, form);
    view! {
        <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
            <h2 class="font-semibold mb-2">"Create a key"</h2>
            <ActionForm action=create node_ref=form attr:class="flex flex-col gap-3" attr:data-testid="create-key">
                <label class="flex flex-col text-sm max-w-sm">
                    "Name"
                    <input
                        name="name"
                        required
                        maxlength="100"
                        class="border border-slate-300 rounded-md px-2 py-1"
                        aria-invalid=errors.invalid("name")
                        aria-describedby=errors.described_by("name")
                    />
                    <FieldNote errors field="name" />
                </label>
                <fieldset class="text-sm" aria-describedby=errors.described_by("scopes")>
                    <legend class="font-medium">"Scopes"</legend>
                    {Scope::ALL
                        .into_iter()
                        .map(|s| {
                            view! {
                                <label class="flex items-center gap-1">
                                    <input
                                        type="checkbox"
                                        name=format!("scopes[{}]", s.as_str())
                                        value="on"
                                        checked=s == Scope::Inference
                                    />
                                    <span class="font-mono">{s.as_str()}</span>
                                    <span class="text-slate-500">{format!("— {}", scope_help(s))}</span>
                                </label>
                            }
                        })
                        .collect_view()}
                    <FieldNote errors field="scopes" />
                </fieldset>
                <fieldset class="text-sm" data-testid="allowed-connections" aria-describedby=errors.described_by("allowedConnections")>
                    <legend class="font-medium">"Allowed connections"</legend>
                    <p class="text-slate-500">
                        "Leave all unchecked to let the key use every connection. A lease:exclusive key must name its connections."
                    </p>
                    {choices}
                    <FieldNote errors field="allowedConnections" />
                </fieldset>
                <div>
                    <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white">
                        "Create"
                    </button>
                </div>
            </ActionForm>
        </section>
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

/// The allowed connections of a key, by name.
fn allowed_names(allowed: Option<&[String]>, connections: &[ConnectionView]) -> String {
    let Some(ids) = allowed else { return "every connection".into() };
    let names: Vec<String> = ids
        .iter()
        .map(|id| match connections.iter().find(|c| &c.id == id) {
            Some(c) => c.name.clone(),
            None => "(deleted connection)".into(),
        })
        .collect();
    names.join(", ")
}

#[component]
fn KeyTable(keys: Vec<ApiKeyView>, connections: Vec<ConnectionView>, revoke: ServerAction<RevokeKey>) -> impl IntoView {
    if keys.is_empty() {
        return view! {
            <p class="text-slate-500">"No keys yet: /v1 accepts anonymous local requests until the first key exists."</p>
        }
        .into_any();
    }
    view! {
        <div class="overflow-x-auto">
            <table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="keys">
                <TableHead columns=&["Name", "Key", "Scopes", "Allowed connections", "Created (UTC)", "Last used (UTC)", ""] />
                <tbody>
                    {keys
                        .into_iter()
                        .map(|k| {
                            let scopes: Vec<&str> = k.scopes.iter().map(|s| s.as_str()).collect();
                            let allowed = allowed_names(k.allowed_connections.as_deref(), &connections);
                            let last_used = k.last_used_at.map_or_else(|| "never".into(), timestamp);
                            let row_id = k.id.clone();
                            view! {
                                <tr class="border-b border-slate-100 align-top" data-key=row_id>
                                    <td class="p-2">{k.name.clone()}</td>
                                    <td class="p-2 font-mono">{format!("{}…", k.key_prefix)}</td>
                                    <td class="p-2" data-scopes="">{scopes.join(", ")}</td>
                                    <td class="p-2" data-allowed="">{allowed}</td>
                                    <td class="p-2">{timestamp(k.created_at)}</td>
                                    <td class="p-2" data-last-used="">{last_used}</td>
                                    <td class="p-2">
                                        <RevokeButton id=k.id name=k.name revoke />
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// Revoke, after a confirmation (a disclosure: no JavaScript needed).
#[component]
fn RevokeButton(id: String, name: String, revoke: ServerAction<RevokeKey>) -> impl IntoView {
    let question = format!("Revoke “{name}”? Clients using it are refused from the next request on.");
    view! {
        <Confirm verb="Revoke" subject=name question>
            <ActionForm action=revoke>
                <input type="hidden" name="id" value=id />
                <button type="submit" class=CONFIRM_BUTTON>"Revoke key"</button>
            </ActionForm>
        </Confirm>
    }
}
