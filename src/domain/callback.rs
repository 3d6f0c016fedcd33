//! The capture worker's callback body, parsed (SPEC §7): which outcome, and
//! the fields that outcome must and must not carry.

use page_import_contract::callback::{client_safe_message, CallbackBody, Outcome};
use page_import_contract::manifest::CaptureHash;

use super::FieldError;
use super::JobStatus;

/// A callback whose shape passed its rules, with the job it names. Not
/// `Debug`: it holds the nonce.
pub struct ParsedCallback {
    pub id: String,
    pub attempt: i32,
    pub nonce: String,
    pub callback: Callback,
}

/// The outcome a callback reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Callback {
    Completed {
        result_url: String,
        capture_hash: CaptureHash,
        screenshot_url: String,
    },
    Failed {
        error_message: String,
        result_url: Option<String>,
        retryable: bool,
    },
}

impl Callback {
    pub fn status(&self) -> JobStatus {
        match self {
            Self::Completed { .. } => JobStatus::Completed,
            Self::Failed { .. } => JobStatus::Failed,
        }
    }
}

impl ParsedCallback {
    /// The body's rules (SPEC §7): every broken one is a field error.
    pub fn parse(body: CallbackBody) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let attempt = identity_errors(&body, &mut errors);
        let capture_hash = body.capture_hash.as_deref().and_then(CaptureHash::parse);
        outcome_errors(&body, capture_hash.is_some(), &mut errors);
        let safe_message = body.error_message.as_deref().map(client_safe_message);
        if safe_message.as_deref() == Some("") {
            errors.push(FieldError::new(
                "errorMessage",
                "empty",
                "errorMessage has no printable characters",
            ));
        }
        let callback = match (body.outcome, body.result_url, capture_hash, body.screenshot_url) {
            _ if !errors.is_empty() => return Err(errors),
            (Outcome::Completed, Some(result_url), Some(capture_hash), Some(screenshot_url)) => Callback::Completed {
                result_url,
                capture_hash,
                screenshot_url,
            },
            (Outcome::Failed, result_url, ..) => Callback::Failed {
                error_message: safe_message.unwrap_or_default(),
                result_url,
                retryable: body.retryable == Some(true),
            },
            // A completed callback lacking a field, or with a malformed hash,
            // added its field error above.
            (Outcome::Completed, ..) => return Err(errors),
        };
        Ok(Self {
            id: body.page_import_id,
            // No error: the attempt parsed.
            attempt: attempt.unwrap_or(1),
            nonce: body.nonce,
            callback,
        })
    }
}

/// The identity's rules: the id, the attempt (returned when it is valid)
/// and the nonce.
fn identity_errors(body: &CallbackBody, errors: &mut Vec<FieldError>) -> Option<i32> {
    if !super::is_resource_id(&body.page_import_id) {
        errors.push(FieldError::new(
            "pageImportId",
            "invalid_id",
            "pageImportId must be 1 to 255 ASCII letters, digits or '-'",
        ));
    }
    let attempt = i32::try_from(body.attempt).ok().filter(|a| *a >= 1);
    if attempt.is_none() {
        errors.push(FieldError::new(
            "attempt",
            "out_of_range",
            "attempt must be a positive 32-bit integer",
        ));
    }
    if body.nonce.is_empty() || body.nonce.len() > 255 || !body.nonce.bytes().all(|b| b.is_ascii_graphic()) {
        errors.push(FieldError::new(
            "nonce",
            "invalid_nonce",
            "nonce must be 1 to 255 visible ASCII characters",
        ));
    }
    attempt
}

/// Which fields each outcome requires and forbids, and the capture hash's
/// form (`hash_parsed`: it parsed, when given).
fn outcome_errors(body: &CallbackBody, hash_parsed: bool, errors: &mut Vec<FieldError>) {
    let mut required = |field: &'static str, given: bool| {
        if !given {
            errors.push(FieldError::new(
                field,
                "required",
                format!("{field} is required for this outcome"),
            ));
        }
    };
    match body.outcome {
        Outcome::Completed => {
            required("resultUrl", body.result_url.is_some());
            required("captureHash", body.capture_hash.is_some());
            required("screenshotUrl", body.screenshot_url.is_some());
        }
        Outcome::Failed => required("errorMessage", body.error_message.is_some()),
    }
    let mut forbidden = |field: &'static str, given: bool| {
        if given {
            errors.push(FieldError::new(
                field,
                "not_allowed",
                format!("{field} is not allowed for this outcome"),
            ));
        }
    };
    match body.outcome {
        Outcome::Completed => {
            forbidden("errorMessage", body.error_message.is_some());
            forbidden("retryable", body.retryable.is_some());
        }
        Outcome::Failed => {
            forbidden("captureHash", body.capture_hash.is_some());
            forbidden("screenshotUrl", body.screenshot_url.is_some());
        }
    }
    if body.outcome == Outcome::Completed && body.capture_hash.is_some() && !hash_parsed {
        errors.push(FieldError::new(
            "captureHash",
            "invalid_capture_hash",
            "captureHash must be sha256: followed by 64 lowercase hex digits",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(outcome: Outcome) -> CallbackBody {
        CallbackBody {
            page_import_id: "01936f3e-5a1b-7c2d-9e4f-0a1b2c3d4e5f".into(),
            attempt: 1,
            nonce: "n0nce".into(),
            outcome,
            ..Default::default()
        }
    }

    fn fields(errors: Vec<FieldError>) -> Vec<(String, String)> {
        let json = serde_json::to_value(&errors).unwrap();
        json.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["field"].as_str().unwrap().to_owned(),
                    e["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn each_outcome_has_its_required_and_forbidden_fields() {
        let mut completed = body(Outcome::Completed);
        completed.error_message = Some("x".into());
        completed.retryable = Some(true);
        let errors = fields(ParsedCallback::parse(completed).err().unwrap());
        for expected in [
            ("resultUrl", "required"),
            ("captureHash", "required"),
            ("screenshotUrl", "required"),
            ("errorMessage", "not_allowed"),
            ("retryable", "not_allowed"),
        ] {
            assert!(errors.contains(&(expected.0.into(), expected.1.into())), "{errors:?}");
        }
        let mut failed = body(Outcome::Failed);
        failed.capture_hash = Some(format!("sha256:{}", "0".repeat(64)));
        let errors = fields(ParsedCallback::parse(failed).err().unwrap());
        assert!(
            errors.contains(&("errorMessage".into(), "required".into())),
            "{errors:?}"
        );
        assert!(
            errors.contains(&("captureHash".into(), "not_allowed".into())),
            "{errors:?}"
        );
    }

    #[test]
    fn a_failure_keeps_a_client_safe_message_and_its_retryable_flag() {
        let mut failed = body(Outcome::Failed);
        failed.error_message = Some("net::ERR_TIMED_OUT\u{7}".into());
        failed.retryable = Some(true);
        let parsed = ParsedCallback::parse(failed).ok().unwrap();
        assert_eq!(
            parsed.callback,
            Callback::Failed {
                error_message: "net::ERR_TIMED_OUT".into(),
                result_url: None,
                retryable: true,
            }
        );
        let mut bad = body(Outcome::Failed);
        bad.error_message = Some("\u{1}\u{2}".into());
        bad.attempt = 0;
        let errors = fields(ParsedCallback::parse(bad).err().unwrap());
        assert!(errors.contains(&("errorMessage".into(), "empty".into())), "{errors:?}");
        assert!(
            errors.contains(&("attempt".into(), "out_of_range".into())),
            "{errors:?}"
        );
    }
}
