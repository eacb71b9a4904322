//! The wire of the change feed between instances on one Postgres: one
//! `NOTIFY` channel, and a message naming the instance that made a change
//! and what changed. Postgres delivers a notification only once the
//! transaction that sent it commits, so a listener that reads the rows
//! named sees the change. SQLite has one instance: nothing is sent.

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement};

use crate::resilience::provider_cooldown::Window;

/// The channel every instance listens on.
pub const CHANNEL: &str = "omniroute_changes";

/// Postgres refuses a payload of 8000 bytes or more; ids are batched under this.
const MAX_PAYLOAD: usize = 7000;

/// What changed: a part rebuilt whole (the configuration, the leases),
/// live state rows, read by id, or sign-in attempts, counted as they come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Connections,
    Combos,
    Aliases,
    Keys,
    Settings,
    /// Session leases (written through; rebuilt whole from the active rows).
    Leases,
    /// Connection health rows (cooldowns, terminal states), by connection id.
    Health(Vec<String>),
    /// Circuit breaker rows, by provider.
    Breakers(Vec<String>),
    /// Session affinity pins, as `<session hash hex>:<provider>`.
    Pins(Vec<String>),
    /// Model lockouts, by connection id (each connection's locks whole).
    Lockouts(Vec<String>),
    /// Tool counts a provider's model refused ([`tool_limit`]).
    ToolLimits(Vec<String>),
    /// Entries of the §R1.1 window gate as they now are ([`window`]).
    Windows(Vec<String>),
    /// Concurrency gates whose shared slot was given back ([`gate`]).
    SlotsFreed(Vec<String>),
    /// Sign-in attempts admitted (counted as failures until they succeed), by client address.
    SignInAdmitted(Vec<String>),
    /// Sign-ins that succeeded (their address is cleared), by client address.
    SignInSucceeded(Vec<String>),
}

impl Change {
    /// Every part rebuilt whole: what a catch-up read rebuilds.
    pub const WHOLE: [Change; 6] =
        [Change::Connections, Change::Combos, Change::Aliases, Change::Keys, Change::Settings, Change::Leases];

    fn word(&self) -> &'static str {
        match self {
            Change::Connections => "connections",
            Change::Combos => "combos",
            Change::Aliases => "aliases",
            Change::Keys => "keys",
            Change::Settings => "settings",
            Change::Leases => "leases",
            Change::Health(_) => "health",
            Change::Breakers(_) => "breakers",
            Change::Pins(_) => "pins",
            Change::Lockouts(_) => "lockouts",
            Change::ToolLimits(_) => "tool-limits",
            Change::Windows(_) => "windows",
            Change::SlotsFreed(_) => "slots-freed",
            Change::SignInAdmitted(_) => "sign-in-admitted",
            Change::SignInSucceeded(_) => "sign-in-succeeded",
        }
    }

    /// The ids a live-state change names (none for the configuration).
    pub fn ids(&self) -> &[String] {
        match self {
            Change::Health(ids)
            | Change::Breakers(ids)
            | Change::Pins(ids)
            | Change::Lockouts(ids)
            | Change::ToolLimits(ids)
            | Change::Windows(ids)
            | Change::SlotsFreed(ids)
            | Change::SignInAdmitted(ids)
            | Change::SignInSucceeded(ids) => ids,
            _ => &[],
        }
    }
}

/// One notification: `<instance> <what>[ <id>,<id>…]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub instance: String,
    pub change: Change,
}

impl Message {
    /// The payloads that carry `change` (several when its ids are many).
    pub fn payloads(instance: &str, change: &Change) -> Vec<String> {
        let head = format!("{instance} {}", change.word());
        if change.ids().is_empty() {
            return vec![head];
        }
        let mut payloads = Vec::new();
        let mut current = String::new();
        for id in change.ids() {
            if !current.is_empty() && head.len() + current.len() + id.len() + 2 > MAX_PAYLOAD {
                payloads.push(format!("{head} {current}"));
                current.clear();
            }
            if !current.is_empty() {
                current.push(',');
            }
            current.push_str(id);
        }
        payloads.push(format!("{head} {current}"));
        payloads
    }

    /// Reads a payload; `None` for one this version does not know.
    pub fn parse(payload: &str) -> Option<Message> {
        let mut parts = payload.splitn(3, ' ');
        let (instance, word, rest) = (parts.next()?, parts.next()?, parts.next());
        let ids = || rest.map(|s| s.split(',').map(str::to_owned).collect()).unwrap_or_default();
        let change = match word {
            "connections" => Change::Connections,
            "combos" => Change::Combos,
            "aliases" => Change::Aliases,
            "keys" => Change::Keys,
            "settings" => Change::Settings,
            "leases" => Change::Leases,
            "health" => Change::Health(ids()),
            "breakers" => Change::Breakers(ids()),
            "pins" => Change::Pins(ids()),
            "lockouts" => Change::Lockouts(ids()),
            "tool-limits" => Change::ToolLimits(ids()),
            "windows" => Change::Windows(ids()),
            "slots-freed" => Change::SlotsFreed(ids()),
            "sign-in-admitted" => Change::SignInAdmitted(ids()),
            "sign-in-succeeded" => Change::SignInSucceeded(ids()),
            _ => return None,
        };
        Some(Message { instance: instance.to_owned(), change })
    }
}

/// [`notify`], for a change already written and in force: a failure is
/// logged (the others catch up when their listener reconnects).
pub async fn announce(db: &DatabaseConnection, instance: &str, change: &Change) {
    if let Err(e) = notify(db, instance, change).await {
        tracing::error!(error = %e, "telling the other instances about a change failed");
    }
}

/// A learnt tool limit as the feed names it: `<count>:<provider>:<model
/// in hex>` (a model name may hold any character).
pub fn tool_limit(provider: &str, model: &str, refused_from: usize) -> String {
    format!("{refused_from}:{provider}:{}", hex::encode(model))
}

/// Reads [`tool_limit`]: (provider, model, count).
pub fn read_tool_limit(named: &str) -> Option<(&str, String, usize)> {
    let mut parts = named.splitn(3, ':');
    let count = parts.next()?.parse().ok()?;
    let provider = parts.next()?;
    let model = String::from_utf8(hex::decode(parts.next()?).ok()?).ok()?;
    Some((provider, model, count))
}

/// An entry of the window gate as the feed carries it:
/// `p:<provider>:<failure times, dot-separated>` or
/// `c:<provider>:<connection id>:<failures>:<last failure>` (provider and
/// connection ids hold no `:` or `,`).
pub fn window(w: &Window) -> String {
    match w {
        Window::Provider { provider, failures } => {
            let times: Vec<String> = failures.iter().map(i64::to_string).collect();
            format!("p:{provider}:{}", times.join("."))
        }
        Window::Connection { provider, connection_id, failures, last } => {
            format!("c:{provider}:{connection_id}:{failures}:{last}")
        }
    }
}

/// Reads [`window`].
pub fn read_window(named: &str) -> Option<Window> {
    let mut parts = named.split(':');
    let (kind, provider) = (parts.next()?, parts.next()?.to_owned());
    let window = match kind {
        "p" => {
            let times = parts.next()?.split('.').filter(|t| !t.is_empty());
            Window::Provider { provider, failures: times.map(str::parse).collect::<Result<_, _>>().ok()? }
        }
        "c" => Window::Connection {
            provider,
            connection_id: parts.next()?.to_owned(),
            failures: parts.next()?.parse().ok()?,
            last: parts.next()?.parse().ok()?,
        },
        _ => return None,
    };
    parts.next().is_none().then_some(window)
}

/// A concurrency gate as the feed names it: its name in hex (a model in
/// a gate's name may hold any character).
pub fn gate(name: &str) -> String {
    hex::encode(name)
}

/// Reads [`gate`].
pub fn read_gate(named: &str) -> Option<String> {
    String::from_utf8(hex::decode(named).ok()?).ok()
}

/// Whether other instances may share this database (Postgres).
pub fn shared(db: &DatabaseConnection) -> bool {
    db.get_database_backend() == DbBackend::Postgres
}

/// Tells the other instances on this database what `instance` changed
/// (nothing on SQLite).
pub async fn notify(db: &DatabaseConnection, instance: &str, change: &Change) -> Result<(), DbErr> {
    if !shared(db) {
        return Ok(());
    }
    for payload in Message::payloads(instance, change) {
        let sql = "SELECT pg_notify($1, $2)";
        db.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, [CHANNEL.into(), payload.into()]))
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]
    use super::*;

    #[test]
    fn a_message_reads_back_as_sent() {
        for change in Change::WHOLE
            .into_iter()
            .chain([Change::Health(vec!["c1".into(), "c2".into()]), Change::Breakers(vec!["openai".into()])])
        {
            let payloads = Message::payloads("abc", &change);
            assert_eq!(payloads.len(), 1);
            assert_eq!(Message::parse(&payloads[0]), Some(Message { instance: "abc".into(), change }));
        }
        assert_eq!(Message::parse("abc window"), None);
        assert_eq!(Message::parse(""), None);
    }

    #[test]
    fn a_tool_limit_reads_back_whatever_the_model_name_holds() {
        let named = tool_limit("openai", "ft:gpt 4o, custom", 129);
        assert_eq!(read_tool_limit(&named), Some(("openai", "ft:gpt 4o, custom".to_owned(), 129)));
        assert_eq!(read_tool_limit("x:openai:zz"), None);
    }

    #[test]
    fn a_window_entry_reads_back_as_sent() {
        let entries = [
            Window::Provider { provider: "openai".into(), failures: vec![1, 2, 1_767_225_600_000] },
            Window::Provider { provider: "openai".into(), failures: vec![] },
            Window::Connection { provider: "openai".into(), connection_id: "c-1".into(), failures: 3, last: 9 },
        ];
        for w in entries {
            assert_eq!(read_window(&window(&w)), Some(w));
        }
        for bad in ["p:openai:1.x", "c:openai:c1:3", "c:openai:c1:3:9:0", "x:openai:"] {
            assert_eq!(read_window(bad), None, "{bad}");
        }
    }

    #[test]
    fn many_ids_are_split_under_postgres_payload_limit() {
        let ids: Vec<String> = (0..600).map(|i| format!("{i:036}")).collect();
        let payloads = Message::payloads("instance", &Change::Health(ids.clone()));
        assert!(payloads.len() > 1);
        assert!(payloads.iter().all(|p| p.len() < 8000), "{:?}", payloads.iter().map(String::len).collect::<Vec<_>>());
        let read: Vec<String> = payloads
            .iter()
            .flat_map(|p| match Message::parse(p).unwrap().change {
                Change::Health(ids) => ids,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(read, ids);
    }
}
