//! A field-level validation failure: the one shape every parser of user
//! input reports, rendered by the HTTP layer as a 422's `errors` entry.

use serde::Serialize;

/// A field-level validation failure (422).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct FieldError {
    /// The JSON path of the field, e.g. `viewport.width`.
    #[schema(value_type = String)]
    pub field: &'static str,
    /// Stable snake_case code, e.g. `non_public_address`.
    #[schema(value_type = String)]
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &'static str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            code,
            message: message.into(),
        }
    }
}
