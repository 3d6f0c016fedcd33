//! Signature verification and callback-body parsing never panic on hostile
//! headers and bytes, and a body signed with the secret always verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use page_import::http::webhooks::{client_safe_message, CallbackBody, MAX_ERROR_MESSAGE_CHARS};
use page_import::webhook::WebhookSecrets;

fuzz_target!(|data: &[u8]| {
    let secrets = WebhookSecrets::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    // Split the input into three header values and a body.
    let mut parts = data.splitn(4, |b| *b == 0);
    let id = parts.next().map(String::from_utf8_lossy).unwrap_or_default();
    let ts = parts.next().map(String::from_utf8_lossy).unwrap_or_default();
    let sig = parts.next().map(String::from_utf8_lossy).unwrap_or_default();
    let body = parts.next().unwrap_or_default();
    let now = 1_700_000_000;
    let _ = secrets.verify(Some(&id), Some(&ts), Some(&sig), body, now);

    if !id.is_empty() && id.len() <= 256 {
        let signature = secrets.primary().sign(&id, now, body);
        assert_eq!(secrets.verify(Some(&id), Some(&now.to_string()), Some(&signature), body, now), Ok(()));
    }

    if let Ok(callback) = serde_json::from_slice::<CallbackBody>(body) {
        if let Some(message) = callback.error_message {
            let safe = client_safe_message(&message);
            assert!(safe.chars().count() <= MAX_ERROR_MESSAGE_CHARS);
            assert!(!safe.chars().any(char::is_control));
        }
    }
});
