//! A field-level validation failure: the one shape every parser of user
//! input reports, rendered by the HTTP layer as a 422's `errors` entry.

use std::borrow::Cow;

use serde::Serialize;

/// A field-level validation failure (422).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct FieldError {
    /// The JSON path of the field, e.g. `viewport.width`, or
    /// `variants[2].viewport.width` in an import set (SPEC §15).
    #[schema(value_type = String)]
    pub field: Cow<'static, str>,
    /// Stable snake_case code, e.g. `non_public_address`.
    #[schema(value_type = String)]
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<Cow<'static, str>>, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            code,
            message: message.into(),
        }
    }
}

impl FieldError {
    /// The same error for a field nested under `prefix` (`variants[2]`).
    pub fn under(self, prefix: &str) -> Self {
        Self {
            field: format!("{prefix}.{}", self.field).into(),
            ..self
        }
    }
}
