//! `/providers`: the catalog and every connection — add, edit, test,
//! enable/disable, delete. Credentials are write-only and shown masked.

use leptos::prelude::*;

use super::{
    quota_bars::LiveQuota,
    subscriptions::{SubscriptionActions, SubscriptionForms},
};
use crate::{
    api::{
        AddConnection, DeleteConnection, EditConnection, SetConnectionActive, TestConnection, get_catalog,
        get_connections, get_health, get_quotas, get_rate_limits,
    },
    components::{
        BUTTON, CONFIRM_BUTTON, Confirm, EditPanel, ErrorDetail, FieldNote, FormErrors, LastError, Layout, LoadFailed,
        Loading, REFRESH_TICKS, StatusBadge, edited, reset_on_success, use_ticker,
    },
    format,
    types::{
        AuthType, CatalogEntry, ConnectionList, ConnectionView, RateLimitOverrides, format_model_concurrency,
        monitoring::QueueInfo,
        parse_model_concurrency,
        rate_limits::{RateLimitStatus, protection_mode},
        subscription::QuotaList,
    },
};
use std::{collections::BTreeMap, sync::Arc};

/// What the rows show live: the health report's queues and each
/// connection's rate-limit protection, shared by every row.
#[derive(Clone, Default)]
struct Live {
    queues: Arc<BTreeMap<String, QueueInfo>>,
    protection: Arc<BTreeMap<String, RateLimitStatus>>,
}

/// The status badges, re-read every [`REFRESH_TICKS`] seconds: only the
/// badges follow the refresh, so an open edit form keeps what is typed.
#[derive(Clone, Copy)]
struct Badges {
    statuses: Resource<Result<ConnectionList, ServerFnError>>,
    /// Subscriptions' plan windows, refreshed with the badges.
    quotas: Resource<Result<(QuotaList, i64), ServerFnError>>,
    tick: RwSignal<u64>,
}

/// A connection's badge, live: breaker open, cooling (counting down),
/// model locked, terminal, disabled or active.
#[component]
fn LiveStatus(c: ConnectionView, badges: Badges) -> impl IntoView {
    move || {
        let latest = badges.statuses.get().and_then(Result::ok);
        let now = latest.as_ref().and_then(|l| l.connections.iter().find(|v| v.id == c.id)).unwrap_or(&c);
        view! { <StatusBadge status=now.status remaining_ms=now.status_remaining_ms tick=badges.tick /> }
    }
}

/// A connection's concurrency: its limit, and what runs and waits there.
fn load_text(c: &ConnectionView, live: &Live) -> String {
    let Some(max) = c.max_concurrent else {
        return "unlimited".to_owned();
    };
    match live.queues.get(&format!("qsconn:{}", c.id)) {
        Some(q) if q.queued > 0 => format!("{} of {max} in flight · {} waiting", q.running, q.queued),
        Some(q) => format!("{} of {max} in flight", q.running),
        None => format!("0 of {max} in flight"),
    }
}

/// A connection's rate-limit protection (SPEC §R5): on or off, why, and
/// what its request queue holds.
fn protection_text(c: &ConnectionView, live: &Live) -> String {
    let Some(p) = live.protection.get(&c.id) else {
        return "unknown".to_owned();
    };
    let why = if p.rate_limit_protection.is_none() { " (automatic)" } else { "" };
    if !p.enabled {
        return format!("off{why}");
    }
    let pace = p.pacing.as_ref().map(|pace| format!(" · {}", pace.describe())).unwrap_or_default();
    format!("on{why}{pace} · {} waiting · {} started", p.queued, p.running)
}

/// The protection choice of the edit form: automatic, on or off.
#[component]
fn ProtectionSelect(stored: Option<bool>) -> impl IntoView {
    let current = protection_mode(stored);
    let options = [
        ("auto", "Automatic (API-key connections, as Settings → Request queue says)"),
        ("on", "On: pace and queue this connection's requests"),
        ("off", "Off: never queue this connection"),
    ];
    view! {
        <label class="flex flex-col text-xs">
            "Rate-limit protection"
            <select name="protection" class=INPUT>
                {options
                    .into_iter()
                    .map(|(value, label)| view! { <option value=value selected=value == current>{label}</option> })
                    .collect_view()}
            </select>
        </label>
    }
}

/// A Claude subscription's usage-wall opt-ins (SPEC §R2.1), both off
/// until checked. The hidden field says the form carries them, so an
/// unchecked box turns its option off.
#[component]
fn UsageWallInputs(c: ConnectionView) -> impl IntoView {
    let on = |key: &str| {
        c.provider_specific_data.as_ref().and_then(|d| d.get(key)).and_then(|v| v.as_bool()).unwrap_or(false)
    };
    view! {
        <fieldset class="flex flex-col gap-1 text-xs border rounded p-2">
            <legend>"When the 5-hour limit is reached"</legend>
            <input type="hidden" name="usage_wall" value="1" />
            <label class="flex gap-2 items-start">
                <input type="checkbox" name="auto_limit_reset" checked=on("autoLimitReset") />
                "Claim the account's free weekly limit reset, if offered, and go on at full speed"
            </label>
            <label class="flex gap-2 items-start">
                <input type="checkbox" name="low_priority_mode" checked=on("lowPriorityMode") />
                "Accept the low-priority lane: slower answers on this account until the window renews, instead of a cooldown"
            </label>
        </fieldset>
    }
}

/// The edit form's limit fields; the per-model text is checked as it is
/// typed, with the same rules the server applies on save.
#[component]
fn LimitInputs(max: Option<u32>, overrides: Option<RateLimitOverrides>) -> impl IntoView {
    let caps = overrides.map(|o| format_model_concurrency(&o.model_concurrency)).unwrap_or_default();
    let problem = RwSignal::new(None::<String>);
    view! {
        <label class="flex flex-col text-xs">
            "Max concurrent (empty = unlimited)"
            <input name="max_concurrent" type="number" min="1" value=max.map(|m| m.to_string()) class=INPUT />
        </label>
        <label class="flex flex-col text-xs">
            "Per-model limits (one model=limit per line)"
            <textarea
                name="model_concurrency"
                rows="2"
                placeholder="glm-5=1"
                class=INPUT
                aria-invalid=move || problem.get().is_some().to_string()
                on:input=move |ev| problem.set(parse_model_concurrency(&event_target_value(&ev)).err().map(|e| e.message))
            >
                {caps}
            </textarea>
        </label>
        {move || problem.get().map(|m| view! { <p class="text-xs text-red-700" data-field-error="modelConcurrency">{m}</p> })}
    }
}

const INPUT: &str = "border border-slate-300 rounded-md px-2 py-1";

#[component]
pub fn ProvidersPage() -> impl IntoView {
    let add = ServerAction::<AddConnection>::new();
    let edit = ServerAction::<EditConnection>::new();
    let toggle = ServerAction::<SetConnectionActive>::new();
    let delete = ServerAction::<DeleteConnection>::new();
    let test = ServerAction::<TestConnection>::new();
    let catalog = Resource::new(|| (), |_| get_catalog());
    let subscriptions = SubscriptionActions::default();
    let changes = move || {
        (
            add.version().get(),
            edit.version().get(),
            toggle.version().get(),
            delete.version().get(),
            test.version().get(),
            subscriptions.added(),
        )
    };
    let connections = Resource::new(changes, |_| get_connections());
    let tick = use_ticker(std::time::Duration::from_secs(1));
    let statuses = Resource::new(move || (tick.get() / REFRESH_TICKS, changes()), |_| get_connections());
    let quotas = Resource::new(move || (tick.get() / REFRESH_TICKS, changes()), |_| get_quotas());
    let badges = Badges { statuses, quotas, tick };
    // In flight and waiting at each connection's limits, as of the last change.
    let health = Resource::new(changes, |_| get_health());
    let protection = Resource::new(changes, |_| get_rate_limits());
    let actions = RowActions { edit, toggle, delete, test, editing: edited() };
    let add_form = NodeRef::<leptos::html::Form>::new();
    reset_on_success(add, add_form);
    let errors = FormErrors::of("add", add);
    view! {
        <Layout title="Providers">
            {LastError::default()
                .track_saying(add, "Connection added.")
                .track_saying(edit, "Connection saved.")
                .track_saying(toggle, "Connection switched.")
                .track_saying(delete, "Connection deleted.")
                .track(test)
                .track(subscriptions.start)
                .track(subscriptions.finish)
                .track(subscriptions.import)
                .view()}
            <TestResult test />
            <section class="mb-6 bg-white p-4 rounded-md shadow-sm">
                <h2 class="font-semibold mb-2">"Add a connection"</h2>
                <ActionForm action=add node_ref=add_form attr:class="flex flex-wrap gap-2 items-end" attr:data-testid="add-connection">
                    <label class="flex flex-col text-sm">
                        "Provider"
                        <Transition fallback=Loading>
                            {move || Suspend::new(async move {
                                let entries = catalog.await.unwrap_or_default();
                                view! { <ProviderSelect entries /> }
                            })}
                        </Transition>
                    </label>
                    <label class="flex flex-col text-sm">
                        "Name"
                        <input name="name" required class=INPUT aria-invalid=errors.invalid("name") aria-describedby=errors.described_by("name") />
                        <FieldNote errors field="name" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "API key or access token"
                        <input name="api_key" type="password" autocomplete="off" class=INPUT aria-invalid=errors.invalid("apiKey") aria-describedby=errors.described_by("apiKey") />
                        <FieldNote errors field="apiKey" />
                    </label>
                    <label class="flex flex-col text-sm" title="Claude subscription accounts: with it, the gateway renews the access token when the provider refuses it">
                        "Refresh token (subscriptions)"
                        <input name="refresh_token" type="password" autocomplete="off" placeholder="optional" class=INPUT aria-invalid=errors.invalid("refreshToken") aria-describedby=errors.described_by("refreshToken") />
                        <FieldNote errors field="refreshToken" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "Base URL"
                        <input name="base_url" placeholder="empty: the provider's own address" class=INPUT aria-invalid=errors.invalid("baseUrl") aria-describedby=errors.described_by("baseUrl") />
                        <span class="text-xs text-slate-500">"Required for a provider without an address of its own (marked \"set per connection\" in the catalog below); otherwise only to reach it through a proxy."</span>
                        <FieldNote errors field="baseUrl" />
                    </label>
                    <label class="flex flex-col text-sm">
                        "Priority"
                        <input name="priority" type="number" min="0" value="0" class=format!("{INPUT} w-20") aria-invalid=errors.invalid("priority") aria-describedby=errors.described_by("priority") />
                        <FieldNote errors field="priority" />
                    </label>
                    <button type="submit" class="px-3 py-1 rounded-md bg-indigo-600 text-white">
                        "Add"
                    </button>
                </ActionForm>
            </section>
            <SubscriptionForms actions=subscriptions />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let entries = catalog.await.unwrap_or_default();
                    view! { <CatalogTable entries /> }
                })}
            </Transition>
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let protection = protection.await.map(|l| l.connections).unwrap_or_default();
                    let live = Live {
                        queues: Arc::new(health.await.map(|h| h.queues).unwrap_or_default()),
                        protection: Arc::new(protection.into_iter().map(|p| (p.connection_id.clone(), p)).collect()),
                    };
                    match connections.await {
                        Ok(list) => view! { <ConnectionTable rows=list.connections actions live badges /> }.into_any(),
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
            </Transition>
        </Layout>
    }
}

#[component]
fn ProviderSelect(entries: Vec<CatalogEntry>) -> impl IntoView {
    view! {
        <select name="provider" class=INPUT required>
            {entries
                .into_iter()
                .map(|p| {
                    let label = format!("{} ({})", p.name, p.category.as_str());
                    view! { <option value=p.id>{label}</option> }
                })
                .collect_view()}
        </select>
    }
}

/// Every provider the gateway knows, folded away by default.
#[component]
fn CatalogTable(entries: Vec<CatalogEntry>) -> impl IntoView {
    view! {
        <details class="mb-6 bg-white p-4 rounded-md shadow-sm" data-testid="catalog">
            <summary class="disclosure cursor-pointer font-semibold">{format!("Provider catalog ({})", entries.len())}</summary>
            <div class="overflow-x-auto"><table class="w-full text-sm mt-2">
                <thead>
                    <tr class="text-left border-b border-slate-200">
                        <th class="p-2">"Id"</th>
                        <th class="p-2">"Protocol"</th>
                        <th class="p-2">"Category"</th>
                        <th class="p-2">"Default base URL"</th>
                        <th class="p-2">"Known models"</th>
                    </tr>
                </thead>
                <tbody>
                    {entries
                        .into_iter()
                        .map(|p| {
                            view! {
                                <tr class="border-b border-slate-100">
                                    <td class="p-2 font-mono">{p.id}</td>
                                    <td class="p-2">{p.protocol.as_str()}</td>
                                    <td class="p-2">{p.category.as_str()}</td>
                                    <td class="p-2 font-mono text-xs">
                                        {if p.default_base_url.is_empty() { "set per connection".to_owned() } else { p.default_base_url }}
                                    </td>
                                    <td class="p-2 text-xs">{p.models.join(", ")}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table></div>
        </details>
    }
}

/// The result of the last live test run from this page (with JS).
#[component]
fn TestResult(test: ServerAction<TestConnection>) -> impl IntoView {
    move || {
        test.value().get().and_then(|r| r.ok()).map(|r| {
            if r.ok {
                let text = format!(
                    "Test of {} passed: HTTP {} in {} ms, {}.",
                    r.name,
                    r.status,
                    r.latency_ms,
                    format::count(r.models.len(), "model")
                );
                return view! {
                    <p role="status" data-testid="test-result" data-ok="true" class="mb-4 p-3 rounded-md bg-green-100 text-green-800">
                        {text}
                    </p>
                }
                .into_any();
            }
            let why = r.error.unwrap_or_else(|| format!("HTTP {}", r.status));
            view! {
                <div role="alert" data-testid="test-result" data-ok="false" class="mb-4 p-3 rounded-md bg-red-100 text-red-800">
                    {format!("Test of {} failed: ", r.name)} <ErrorDetail text=why />
                </div>
            }
            .into_any()
        })
    }
}

#[derive(Clone, Copy)]
struct RowActions {
    edit: ServerAction<EditConnection>,
    toggle: ServerAction<SetConnectionActive>,
    delete: ServerAction<DeleteConnection>,
    test: ServerAction<TestConnection>,
    /// The row whose Edit panel is open.
    editing: RwSignal<Option<String>>,
}

#[component]
fn ConnectionTable(rows: Vec<ConnectionView>, actions: RowActions, live: Live, badges: Badges) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="text-slate-500">"No connections yet. Add one above."</p> }.into_any();
    }
    view! {
        <div class="overflow-x-auto">
        <table class="w-full bg-white rounded-md shadow-sm text-sm" data-testid="connections">
            <thead>
                <tr class="text-left border-b border-slate-200">
                    <th class="p-2">"Provider"</th>
                    <th class="p-2">"Name"</th>
                    <th class="p-2">"Key"</th>
                    <th class="p-2">"Priority"</th>
                    <th class="p-2">"Status"</th>
                    <th class="p-2">"Concurrency"</th>
                    <th class="p-2">"Rate-limit protection"</th>
                    <th class="p-2">"Last test"</th>
                    <th class="p-2">"Actions"</th>
                </tr>
            </thead>
            <tbody>
                {rows.into_iter().map(|c| view! { <ConnectionRow c actions live=live.clone() badges /> }).collect_view()}
            </tbody>
        </table>
        </div>
    }
    .into_any()
}

#[component]
fn ConnectionRow(c: ConnectionView, actions: RowActions, live: Live, badges: Badges) -> impl IntoView {
    let load = load_text(&c, &live);
    let protection = protection_text(&c, &live);
    let last_test = match (c.test_status.as_deref(), c.last_error.clone()) {
        (Some("ok"), _) => view! { <span class="text-green-800">"passed"</span> }.into_any(),
        (Some(_), error) => view! {
            <span class="text-red-800 font-medium" data-failed="">"failed"</span>
            {error.map(|text| view! { <div class="text-red-800"><ErrorDetail text /></div> })}
        }
        .into_any(),
        (None, Some(text)) => view! { "never · last error: " <ErrorDetail text /> }.into_any(),
        (None, None) => "never".into_any(),
    };
    let active = c.is_active;
    let edited = Signal::derive(move || matches!(actions.edit.value().get(), Some(Ok(_))));
    // Each form's children own their copy of the id.
    let [id_test, id_toggle, id_delete] = std::array::from_fn(|_| c.id.clone());
    let to_edit = c.clone();
    // Row buttons are named by their row ("Test main") for screen readers.
    let test_label = format!("Test {}", c.name);
    let toggle_label = format!("{} {}", if active { "Disable" } else { "Enable" }, c.name);
    let edit_label = format!("Edit {}", c.name);
    view! {
        <tr id=format!("connection-{}", c.id) class="border-b border-slate-100 align-top target:bg-amber-50" data-connection-id=c.id.clone()>
            <td class="p-2 whitespace-nowrap">{c.provider.clone()}</td>
            <td class="p-2 whitespace-nowrap" data-testid="name">{c.name.clone()}</td>
            <td class="p-2 font-mono whitespace-nowrap">{c.api_key_masked.clone().unwrap_or_else(|| "—".into())}</td>
            <td class="p-2">{c.priority}</td>
            <td class="p-2">
                <LiveStatus c=c.clone() badges />
                <LiveQuota id=c.id.clone() quotas=badges.quotas />
            </td>
            <td class="p-2 text-xs" data-testid="load">{load}</td>
            <td class="p-2 text-xs" data-testid="protection">{protection}</td>
            <td class="p-2 text-xs" data-testid="last-test">{last_test}</td>
            <td class="p-2 flex flex-wrap gap-1">
                <ActionForm action=actions.test>
                    <input type="hidden" name="id" value=id_test />
                    <button type="submit" class=BUTTON aria-label=test_label>"Test"</button>
                </ActionForm>
                <ActionForm action=actions.toggle>
                    <input type="hidden" name="id" value=id_toggle />
                    <input type="hidden" name="active" value=(!active).to_string() />
                    <button type="submit" class=BUTTON aria-label=toggle_label>
                        {if active { "Disable" } else { "Enable" }}
                    </button>
                </ActionForm>
                <Confirm
                    verb="Delete"
                    subject=c.name.clone()
                    question=format!("Delete the connection “{}”? Its key is forgotten; requests stop using it at once.", c.name)
                >
                    <ActionForm action=actions.delete>
                        <input type="hidden" name="id" value=id_delete />
                        <button type="submit" class=CONFIRM_BUTTON>"Delete connection"</button>
                    </ActionForm>
                </Confirm>
                <EditPanel
                    label=edit_label
                    title=format!("Edit the connection “{}”", c.name)
                    key=format!("connection-{}", c.id)
                    editing=actions.editing
                    saved=edited
                >
                    <EditConnectionForm c=to_edit.clone() action=actions.edit editing=actions.editing />
                </EditPanel>
            </td>
        </tr>
    }
    .into_any()
}

/// A connection's Edit form: its name, a new key or tokens, base URL,
/// priority, limits and protection. Cancel shuts the panel (without JS the
/// link reloads the page, which shuts it).
#[component]
fn EditConnectionForm(
    c: ConnectionView,
    action: ServerAction<EditConnection>,
    editing: RwSignal<Option<String>>,
) -> impl IntoView {
    let usage_wall = (c.provider == "claude" && c.auth_type == AuthType::Oauth).then(|| c.clone());
    view! {
        <ActionForm action attr:class="flex flex-col gap-1 mt-1">
            <input type="hidden" name="id" value=c.id.clone() />
            <label class="flex flex-col text-xs">
                "Name"
                <input name="name" value=c.name.clone() class=INPUT />
            </label>
            {if c.auth_type == AuthType::Oauth {
                // A subscription's new tokens replace its whole token set: both go together.
                view! {
                    <label class="flex flex-col text-xs">
                        "New access token"
                        <input name="api_key" type="password" autocomplete="off" placeholder="keep the current tokens" class=INPUT />
                    </label>
                    <label class="flex flex-col text-xs">
                        "Its refresh token"
                        <input name="refresh_token" type="password" autocomplete="off" placeholder="renews the access token" class=INPUT />
                    </label>
                }
                    .into_any()
            } else {
                view! {
                    <label class="flex flex-col text-xs">
                        "New API key"
                        <input name="api_key" type="password" autocomplete="off" placeholder="keep the current one" class=INPUT />
                    </label>
                }
                    .into_any()
            }}
            <label class="flex flex-col text-xs">
                "Base URL"
                <input name="base_url" value=c.base_url.clone().unwrap_or_default() placeholder="the provider's default" class=INPUT />
            </label>
            <label class="flex flex-col text-xs">
                "Priority"
                <input name="priority" type="number" min="0" value=c.priority.to_string() class=INPUT />
            </label>
            {usage_wall.map(|c| view! { <UsageWallInputs c /> })}
            <LimitInputs max=c.max_concurrent overrides=c.rate_limit_overrides.clone() />
            <ProtectionSelect stored=c.rate_limit_protection />
            <div class="flex gap-2 items-center">
                <button type="submit" class=BUTTON>"Save"</button>
                // Without JS the link reloads the page, which folds the form.
                <a
                    href="/providers"
                    class="text-sm text-indigo-700"
                    on:click=move |ev| {
                        ev.prevent_default();
                        editing.set(None);
                    }
                >
                    "Cancel"
                </a>
            </div>
        </ActionForm>
    }
}
