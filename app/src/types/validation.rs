//! Field-level validation errors, the shape every 400 from the management
//! API uses: `{error:{message:"Invalid request", details:[{field, message}]}}`.

use serde::{Deserialize, Serialize};

/// One problem with one input field. `field` is the camelCase JSON path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

/// Collects field errors while a validator walks its input.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<FieldError>);

impl Errors {
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    /// Checks a required, trimmed, length-bounded text field.
    pub fn text(&mut self, field: &str, value: &str, max: usize) {
        if value.trim().is_empty() {
            self.push(field, "must not be empty");
        } else if value.chars().count() > max {
            self.push(field, format!("must be at most {max} characters"));
        }
    }

    /// Checks an optional base URL: absolute http(s), no spaces.
    pub fn base_url(&mut self, field: &str, value: &str) {
        let rest = value.strip_prefix("http://").or_else(|| value.strip_prefix("https://"));
        match rest {
            Some(host) if !host.is_empty() && !value.contains(char::is_whitespace) => {}
            _ => self.push(field, "must be an absolute http:// or https:// URL"),
        }
    }

    /// Checks an integer lies in `min..=max`.
    pub fn range(&mut self, field: &str, value: i64, min: i64, max: i64) {
        if value < min || value > max {
            self.push(field, format!("must be between {min} and {max}"));
        }
    }

    pub fn into_result(self) -> Result<(), Vec<FieldError>> {
        if self.0.is_empty() { Ok(()) } else { Err(self.0) }
    }
}
