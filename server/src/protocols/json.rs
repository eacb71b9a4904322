//! Reading loosely typed protocol JSON with field-level errors: every
//! reader names the dotted path of what it did not like (`messages.3.role`),
//! which is what the client sees in the 400.

use serde_json::{Map, Value};

/// A request body that does not fit its protocol: which field, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Invalid>;

pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid { field: field.into(), message: message.into() }
}

/// `base.key` (or `key` at the top level).
pub fn path(base: &str, key: impl std::fmt::Display) -> String {
    if base.is_empty() { key.to_string() } else { format!("{base}.{key}") }
}

pub fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| invalid(at, "must be an object"))
}

/// A present, non-null field.
pub fn field<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.get(key).filter(|v| !v.is_null())
}

pub fn required<'a>(o: &'a Map<String, Value>, key: &str, base: &str) -> Result<&'a Value> {
    field(o, key).ok_or_else(|| invalid(path(base, key), "is required"))
}

pub fn string(o: &Map<String, Value>, key: &str, base: &str) -> Result<Option<String>> {
    field(o, key)
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| invalid(path(base, key), "must be a string")))
        .transpose()
}

pub fn required_string(o: &Map<String, Value>, key: &str, base: &str) -> Result<String> {
    string(o, key, base)?.ok_or_else(|| invalid(path(base, key), "is required"))
}

pub fn array<'a>(o: &'a Map<String, Value>, key: &str, base: &str) -> Result<Option<&'a Vec<Value>>> {
    field(o, key).map(|v| v.as_array().ok_or_else(|| invalid(path(base, key), "must be an array"))).transpose()
}

pub fn u64_field(o: &Map<String, Value>, key: &str, base: &str) -> Result<Option<u64>> {
    field(o, key)
        .map(|v| v.as_u64().ok_or_else(|| invalid(path(base, key), "must be a non-negative integer")))
        .transpose()
}

pub fn f64_field(o: &Map<String, Value>, key: &str, base: &str) -> Result<Option<f64>> {
    field(o, key).map(|v| v.as_f64().ok_or_else(|| invalid(path(base, key), "must be a number"))).transpose()
}

pub fn bool_field(o: &Map<String, Value>, key: &str, base: &str) -> Result<Option<bool>> {
    field(o, key).map(|v| v.as_bool().ok_or_else(|| invalid(path(base, key), "must be true or false"))).transpose()
}

/// `stop`-like fields: one string or a list of strings.
pub fn strings(o: &Map<String, Value>, key: &str, base: &str) -> Result<Vec<String>> {
    match field(o, key) {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(str::to_owned).ok_or_else(|| invalid(path(&path(base, key), i), "must be a string"))
            })
            .collect(),
        Some(_) => Err(invalid(path(base, key), "must be a string or a list of strings")),
    }
}

/// Text of a JSON value that should be text; structured values become
/// their JSON text (tool results sometimes are objects).
pub fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
