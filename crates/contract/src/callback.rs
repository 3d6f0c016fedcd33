//! The body of the signed callback `POST /webhooks/page-imports` (SPEC §7).

use serde::{Deserialize, Serialize};

pub const MAX_ERROR_MESSAGE_CHARS: usize = 2000;

/// What a worker sends and the service parses. Unknown fields are refused.
/// Its `Debug` leaves the nonce out.
#[derive(Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CallbackBody {
    pub page_import_id: String,
    pub attempt: i64,
    pub nonce: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Only on `failed`: the worker judges the cause transient (a timeout, a
    /// refused connection, a crashed browser), so another attempt may succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    #[default]
    Completed,
    Failed,
}

impl std::fmt::Debug for CallbackBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackBody")
            .field("page_import_id", &self.page_import_id)
            .field("attempt", &self.attempt)
            .field("nonce", &"**redacted**")
            .field("outcome", &self.outcome)
            .field("result_url", &self.result_url)
            .field("capture_hash", &self.capture_hash)
            .field("screenshot_url", &self.screenshot_url)
            .field("error_message", &self.error_message)
            .field("retryable", &self.retryable)
            .finish()
    }
}

/// Control characters stripped, at most 2000 characters, trimmed: what the
/// service stores and shows, so a worker may apply it before sending.
pub fn client_safe_message(raw: &str) -> String {
    raw.chars()
        .filter(|c| !c.is_control())
        .take(MAX_ERROR_MESSAGE_CHARS)
        .collect::<String>()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_made_client_safe() {
        assert_eq!(
            client_safe_message("Timed\u{0} out\n after\t30 s\u{1b}[31m"),
            "Timed out after30 s[31m"
        );
        assert_eq!(client_safe_message(&"é".repeat(3000)).chars().count(), 2000);
    }

    #[test]
    fn a_failed_body_omits_absent_fields_and_debug_hides_the_nonce() {
        let body = CallbackBody {
            page_import_id: "id".into(),
            attempt: 1,
            nonce: "secret-nonce".into(),
            outcome: Outcome::Failed,
            error_message: Some("The page answered HTTP 404".into()),
            retryable: Some(false),
            ..Default::default()
        };
        let json = serde_json::to_string(&body).unwrap();
        assert_eq!(
            json,
            r#"{"pageImportId":"id","attempt":1,"nonce":"secret-nonce","outcome":"failed","errorMessage":"The page answered HTTP 404","retryable":false}"#
        );
        assert!(serde_json::from_str::<CallbackBody>(&json).is_ok());
        assert!(!format!("{body:?}").contains("secret-nonce"));
        assert!(serde_json::from_str::<CallbackBody>(
            r#"{"pageImportId":"id","attempt":1,"nonce":"n","outcome":"failed","x":1}"#
        )
        .is_err());
    }
}
