//! Client API keys: created in the dashboard, shown once, stored as SHA-256.

use serde::{Deserialize, Serialize};

use super::validation::{Errors, FieldError};

/// What a client key may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// Call the `/v1/*` proxy endpoints.
    #[serde(rename = "inference")]
    Inference,
    /// Call the `/api/*` management endpoints.
    #[serde(rename = "management")]
    Management,
    /// Acquire exclusive session leases (§R2.3).
    #[serde(rename = "lease:exclusive")]
    LeaseExclusive,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Inference, Scope::Management, Scope::LeaseExclusive];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inference => "inference",
            Self::Management => "management",
            Self::LeaseExclusive => "lease:exclusive",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == s)
    }
}

/// `POST /api/keys` body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateApiKey {
    pub name: String,
    /// Defaults to `["inference"]`.
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
    /// Connection ids this key may be served by; absent = any.
    #[serde(default)]
    pub allowed_connections: Option<Vec<String>>,
}

impl CreateApiKey {
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        e.text("name", &self.name, 100);
        if let Some(scopes) = &self.scopes
            && scopes.is_empty()
        {
            e.push("scopes", "must name at least one scope");
        }
        if let Some(ids) = &self.allowed_connections
            && ids.iter().any(|id| id.trim().is_empty())
        {
            e.push("allowedConnections", "ids must not be empty");
        }
        let no_connections = self.allowed_connections.as_ref().is_none_or(Vec::is_empty);
        if self.effective_scopes().contains(&Scope::LeaseExclusive) && no_connections {
            e.push(
                "allowedConnections",
                "a key with the lease:exclusive scope must name the connections its leases may hold",
            );
        }
        e.into_result()
    }

    /// The scopes the key gets: the given ones, else inference only.
    pub fn effective_scopes(&self) -> Vec<Scope> {
        let given = self.scopes.clone().unwrap_or_else(|| vec![Scope::Inference]);
        Scope::ALL.into_iter().filter(|s| given.contains(s)).collect()
    }
}

/// A key as listed — never the key itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    pub id: String,
    pub name: String,
    /// The first characters of the key, enough to recognise it.
    pub key_prefix: String,
    pub scopes: Vec<Scope>,
    pub allowed_connections: Option<Vec<String>>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// `POST /api/keys` answer: the only time the key is shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreatedApiKey {
    pub id: String,
    pub key: String,
}

/// `GET /api/keys` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyList {
    pub keys: Vec<ApiKeyView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_use_spec_names() {
        let k: CreateApiKey = serde_json::from_str(r#"{"name":"a","scopes":["inference","lease:exclusive"]}"#).unwrap();
        assert_eq!(k.effective_scopes(), vec![Scope::Inference, Scope::LeaseExclusive]);
        assert!(serde_json::from_str::<CreateApiKey>(r#"{"name":"a","scopes":["root"]}"#).is_err());
    }

    #[test]
    fn default_scope_is_inference() {
        let k = CreateApiKey { name: "a".into(), ..Default::default() };
        assert_eq!(k.effective_scopes(), vec![Scope::Inference]);
    }

    #[test]
    fn a_lease_key_names_its_connections() {
        let lease = |allowed: Option<Vec<String>>| CreateApiKey {
            name: "a".into(),
            scopes: Some(vec![Scope::Inference, Scope::LeaseExclusive]),
            allowed_connections: allowed,
        };
        for refused in [None, Some(vec![])] {
            let fields: Vec<_> = lease(refused).validate().unwrap_err().into_iter().map(|e| e.field).collect();
            assert_eq!(fields, ["allowedConnections"]);
        }
        assert!(lease(Some(vec!["c1".into()])).validate().is_ok());
    }

    #[test]
    fn empty_name_and_scopes_are_field_errors() {
        let k = CreateApiKey { name: "".into(), scopes: Some(vec![]), allowed_connections: None };
        let fields: Vec<_> = k.validate().unwrap_err().into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["name", "scopes"]);
    }
}
