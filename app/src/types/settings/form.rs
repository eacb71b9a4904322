//! Dashboard form values ↔ a settings patch. A card's inputs are named by
//! the field's JSON path (`requestQueue.maxWaitMs`), so the browser (live,
//! on every keystroke) and the server (a plain form post without JS) turn
//! the same `path → text` map into the same PATCH body, and field errors
//! land next to the input they name.

use serde_json::Value;
use std::collections::BTreeMap;

use super::layers::{get_path, set_path};
use crate::types::validation::FieldError;

/// The query parameter naming the settings card whose plain form post the
/// server refused: its page shows the card open again, as typed.
pub const REFUSED: &str = "refused";
/// The prefix of the query parameters carrying what was typed in it
/// (`f.<json path>=<text>`).
pub const TYPED: &str = "f.";

/// How a form input's text maps to JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// Whole number, required.
    Int,
    /// Whole number or empty (`null`).
    OptInt,
    /// Checkbox: present with `true`/`on` → true, absent → false.
    Bool,
    /// Status codes separated by commas or spaces.
    Codes,
    /// Ids separated by commas or spaces.
    TextList,
    /// One line of text, trimmed.
    Text,
    /// One of these names (a select).
    Choice(&'static [&'static str]),
    /// The operator rule list: inputs `providerErrorRules.{i}.{field}`.
    Rules,
}

/// Form text → the patch that sets exactly these fields.
pub fn form_to_patch(
    fields: &[(&str, FieldKind)],
    values: &BTreeMap<String, String>,
) -> Result<Value, Vec<FieldError>> {
    let mut patch = Value::Object(Default::default());
    let mut errors = Vec::new();
    for &(path, kind) in fields {
        let parsed = match kind {
            FieldKind::Rules => rules(path, values),
            _ => parse(kind, is_duration(path), values.get(path).map(|s| s.trim()).unwrap_or(""))
                .map_err(|message| vec![FieldError::new(path, message)]),
        };
        match parsed {
            Ok(v) => set_path(&mut patch, path, v),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() { Ok(patch) } else { Err(errors) }
}

/// One input's text as JSON.
fn parse(kind: FieldKind, duration: bool, text: &str) -> Result<Value, String> {
    let number = |text: &str| if duration { duration_ms(text) } else { whole(text) };
    match kind {
        FieldKind::Int => number(text).map(Value::from),
        FieldKind::OptInt if text.is_empty() => Ok(Value::Null),
        FieldKind::OptInt => number(text).map(Value::from),
        FieldKind::Bool => Ok(Value::Bool(matches!(text, "true" | "on"))),
        FieldKind::Codes => {
            tokens(text).map(|t| whole(t).map(Value::from)).collect::<Result<Vec<_>, _>>().map(Value::Array)
        }
        FieldKind::TextList | FieldKind::Rules => Ok(tokens(text).map(|t| Value::String(t.to_owned())).collect()),
        FieldKind::Text => Ok(Value::String(text.to_owned())),
        FieldKind::Choice(names) if names.contains(&text) => Ok(Value::String(text.to_owned())),
        FieldKind::Choice(names) => Err(format!("must be one of {}", names.join(", "))),
    }
}

/// The form text of each field, from the current settings document:
/// durations in their largest exact unit.
pub fn form_values(fields: &[(&str, FieldKind)], doc: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for &(path, kind) in fields {
        let Some(v) = get_path(doc, path) else { continue };
        if kind == FieldKind::Rules {
            for (i, rule) in v.as_array().into_iter().flatten().enumerate() {
                for (key, value) in rule.as_object().into_iter().flatten() {
                    out.insert(format!("{path}.{i}.{key}"), text_of(value));
                }
            }
        } else if let (true, Some(ms)) = (is_duration(path), v.as_u64()) {
            // A duration reads in its largest exact unit ("2 h"), and may be typed in any.
            out.insert(path.to_owned(), human_ms(ms));
        } else {
            out.insert(path.to_owned(), text_of(v));
        }
    }
    out
}

/// How many rule rows the form values hold.
pub fn rule_rows(path: &str, values: &BTreeMap<String, String>) -> usize {
    values
        .keys()
        .filter_map(|k| k.strip_prefix(path)?.strip_prefix('.')?.split('.').next()?.parse::<usize>().ok())
        .map(|i| i + 1)
        .max()
        .unwrap_or(0)
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn whole(text: &str) -> Result<u64, String> {
    match text {
        "" => Err("is required".into()),
        t => t.parse::<u64>().map_err(|_| format!("must be a whole number ≥ 0 (got {t:?})")),
    }
}

/// Whether a setting is a duration in milliseconds (its name ends in `Ms`).
pub fn is_duration(path: &str) -> bool {
    path.ends_with("Ms")
}

/// Units a duration may be typed in, largest first.
const UNITS: [(&str, u64); 5] = [("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000), ("ms", 1)];

/// A duration typed as milliseconds (`30000`) or with a unit (`30 s`,
/// `1.5 s`, `10 min`, `2 h`, `1 d`, `250 ms`), in milliseconds. Read in
/// whole numbers, not floats: float parsing would add its code to every
/// page with a duration field.
pub fn duration_ms(text: &str) -> Result<u64, String> {
    if text.is_empty() {
        return Err("is required".into());
    }
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let per = match unit {
        "" => 1,
        u => UNITS
            .iter()
            .find(|(name, _)| *name == u)
            .map(|(_, ms)| *ms)
            .ok_or_else(|| format!("must be a duration such as 30000, 30 s, 10 min or 2 h (unknown unit {u:?})"))?,
    };
    let unreadable = || format!("must be a duration such as 30000, 30 s, 10 min or 2 h (got {text:?})");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |d: &str| if d.is_empty() { Some(0) } else { d.parse::<u64>().ok() };
    let (Some(whole_n), Some(fraction_n)) = (digits(whole), digits(fraction)) else { return Err(unreadable()) };
    if whole.is_empty() && fraction.is_empty() {
        return Err(unreadable());
    }
    // (whole + fraction / 10^digits) × per, exact only in whole milliseconds.
    let scale = u32::try_from(fraction.len()).ok().and_then(|n| 10u64.checked_pow(n));
    let fraction_ms =
        scale.and_then(|scale| fraction_n.checked_mul(per).filter(|ms| ms % scale == 0).map(|ms| ms / scale));
    let Some(fraction_ms) = fraction_ms else {
        return Err(format!("must be a whole number of milliseconds (got {text:?})"));
    };
    whole_n.checked_mul(per).and_then(|ms| ms.checked_add(fraction_ms)).ok_or_else(unreadable)
}

/// A duration in the largest unit that states it exactly: `30 s`,
/// `10 min`, `1500 ms`, `0`.
pub fn human_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    let (unit, per) = UNITS.iter().find(|(_, per)| ms.is_multiple_of(*per)).copied().unwrap_or(("ms", 1));
    format!("{} {unit}", ms / per)
}

/// The items of a comma- or space-separated list input.
pub fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty())
}

/// Rule rows; a row left entirely blank is skipped (the "add rule" row).
fn rules(path: &str, values: &BTreeMap<String, String>) -> Result<Value, Vec<FieldError>> {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for i in 0..rule_rows(path, values) {
        let get = |key: &str| values.get(&format!("{path}.{i}.{key}")).map(|s| s.trim()).unwrap_or("");
        let keys = ["provider", "status", "match", "scope", "reason", "cooldownMs"];
        if keys.iter().all(|k| get(k).is_empty()) {
            continue;
        }
        let mut rule = serde_json::json!({
            "provider": get("provider"),
            "match": get("match"),
            "scope": get("scope"),
            "reason": if get("reason").is_empty() { Value::Null } else { Value::from(get("reason")) },
        });
        for (key, optional) in [("status", false), ("cooldownMs", true)] {
            match (get(key), optional) {
                ("", true) => set_path(&mut rule, key, Value::Null),
                (text, _) => match whole(text) {
                    Ok(n) => set_path(&mut rule, key, Value::from(n)),
                    Err(message) => errors.push(FieldError::new(format!("{path}.{i}.{key}"), message)),
                },
            }
        }
        rules.push(rule);
    }
    if errors.is_empty() { Ok(Value::Array(rules)) } else { Err(errors) }
}
