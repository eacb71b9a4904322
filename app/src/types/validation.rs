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

/// The dashboard's label of a field, by its JSON path or the path's
/// first segment.
const LABELS: [(&str, &str); 16] = [
    ("name", "Name"),
    ("provider", "Provider"),
    ("apiKey", "API key"),
    ("baseUrl", "Base URL"),
    ("priority", "Priority"),
    ("maxConcurrent", "Max concurrent"),
    ("modelConcurrency", "Per-model limits"),
    ("rateLimitOverrides", "Limits"),
    ("protection", "Rate-limit protection"),
    ("scopes", "Scopes"),
    ("allowedConnections", "Allowed connections"),
    ("targets", "Targets"),
    ("strategy", "Strategy"),
    ("alias", "Alias"),
    ("model", "Model"),
    ("config", "Settings"),
];

/// How the dashboard names a field in a message: its label ("Base URL"),
/// a nested path after its first segment's label ("Targets
/// (targets[1].model)"), or the path itself when it has no label.
pub fn field_label(field: &str) -> String {
    let label = |key: &str| LABELS.iter().find(|(k, _)| *k == key).map(|(_, l)| *l);
    if let Some(l) = label(field) {
        return l.to_owned();
    }
    match field.split(['.', '[']).next().and_then(label) {
        Some(l) => format!("{l} ({field})"),
        None => field.to_owned(),
    }
}

/// "Label: message".
impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", field_label(&self.field), self.message)
    }
}

/// The message a refusal gives for `field`, if it names it: the text is
/// [`FieldError`]s displayed and joined by "; " (how the server refuses a
/// form), so the form can show each message at its input.
pub fn message_for(text: &str, field: &str) -> Option<String> {
    let prefix = format!("{}: ", field_label(field));
    text.split("; ").find_map(|part| part.strip_prefix(&prefix)).map(str::to_owned)
}

/// Collects field errors while a validator walks its input.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<FieldError>);

impl Errors {
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    /// Checks a required, trimmed, length-bounded text field without
    /// control characters (NUL, newlines, escapes: they break logs,
    /// headers and terminals).
    pub fn text(&mut self, field: &str, value: &str, max: usize) {
        if value.trim().is_empty() {
            self.push(field, "must not be empty");
        } else if value.chars().count() > max {
            self.push(field, format!("must be at most {max} characters"));
        } else if value.contains(char::is_control) {
            self.push(field, "must not contain control characters");
        }
    }

    /// Checks a name clients send as `model` (a combo or an alias): text
    /// without spaces, and without `/`, which only `provider/model` ids
    /// have — so a name can never shadow one.
    pub fn model_name(&mut self, field: &str, value: &str, max: usize) {
        let before = self.0.len();
        self.text(field, value, max);
        if self.0.len() > before {
            return;
        }
        if value.contains(char::is_whitespace) {
            self.push(field, "must not contain spaces");
        } else if value.contains('/') {
            self.push(field, "must not contain '/': provider/model ids are reserved for providers");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_reads_in_labels_and_splits_back_by_field() {
        let errors = [
            FieldError::new("baseUrl", "must be an absolute http:// or https:// URL"),
            FieldError::new("targets[1].model", "unknown provider"),
            FieldError::new("sessionAffinityTtlMs", "must be between 0 and 86400000"),
        ];
        let text = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
        assert_eq!(
            text,
            "Base URL: must be an absolute http:// or https:// URL; Targets (targets[1].model): unknown provider; \
             sessionAffinityTtlMs: must be between 0 and 86400000"
        );
        assert_eq!(message_for(&text, "baseUrl").as_deref(), Some("must be an absolute http:// or https:// URL"));
        assert_eq!(message_for(&text, "targets[1].model").as_deref(), Some("unknown provider"));
        assert_eq!(message_for(&text, "name"), None);
    }

    fn fields(check: impl FnOnce(&mut Errors)) -> Vec<String> {
        let mut e = Errors::default();
        check(&mut e);
        e.0.into_iter().map(|e| e.message).collect()
    }

    #[test]
    fn text_refuses_control_characters() {
        assert!(fields(|e| e.text("name", "team a", 10)).is_empty());
        for bad in ["a\0b", "line\nbreak", "esc\u{1b}[31m", "tab\t"] {
            assert_eq!(fields(|e| e.text("name", bad, 20)), ["must not contain control characters"], "{bad:?}");
        }
    }

    #[test]
    fn model_names_have_no_spaces_or_slashes() {
        assert!(fields(|e| e.model_name("name", "coding-fast", 64)).is_empty());
        assert_eq!(fields(|e| e.model_name("name", "a b", 64)), ["must not contain spaces"]);
        let slash = fields(|e| e.model_name("name", "openai/gpt-4o", 64));
        assert!(slash[0].contains("reserved for providers"), "{slash:?}");
        assert_eq!(fields(|e| e.model_name("name", "x\0", 64)), ["must not contain control characters"]);
    }
}
