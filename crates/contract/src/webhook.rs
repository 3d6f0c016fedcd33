//! Standard Webhooks signing and verification, shared by the service, its
//! tests and any worker written in Rust.
//!
//! `webhook-signature` holds one or more space-separated `v1,<base64>` entries;
//! each is `HMAC-SHA256(secret, "{webhook-id}.{webhook-timestamp}.{raw body}")`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretSlice};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Accepted clock skew between the worker and the service.
pub const TOLERANCE_SECS: i64 = 300;
const MAX_HEADER_LEN: usize = 4096;

/// One signing secret: the decoded bytes after `whsec_`.
/// The key bytes live in a `secrecy` box: redacted in `Debug`, zeroed on drop.
#[derive(Clone, Debug)]
pub struct WebhookSecret(std::sync::Arc<SecretSlice<u8>>);

/// Every secret currently accepted (more than one during rotation).
#[derive(Clone, Debug)]
pub struct WebhookSecrets(Vec<WebhookSecret>);

impl WebhookSecret {
    pub fn parse(s: &str) -> Result<Self, String> {
        let encoded = s
            .trim()
            .strip_prefix("whsec_")
            .ok_or_else(|| "each secret must start with whsec_".to_owned())?;
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| "the part after whsec_ is not base64".to_owned())?;
        if bytes.len() < 16 {
            return Err("a secret must decode to at least 16 bytes".into());
        }
        Ok(Self(std::sync::Arc::new(bytes.into())))
    }

    /// `v1,<base64 signature>` for the given message.
    pub fn sign(&self, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
        let mac = self.mac(msg_id, timestamp, body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    fn mac(&self, msg_id: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(self.0.expose_secret()).expect("HMAC takes any key length");
        mac.update(msg_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// Constant-time check of one decoded signature.
    fn verifies(&self, msg_id: &str, timestamp: i64, body: &[u8], signature: &[u8]) -> bool {
        self.mac(msg_id, timestamp, body).verify_slice(signature).is_ok()
    }
}

impl WebhookSecrets {
    pub fn parse(s: &str) -> Result<Self, String> {
        let secrets = s
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(WebhookSecret::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if secrets.is_empty() {
            return Err("no secret given".into());
        }
        Ok(Self(secrets))
    }

    /// The secret new signatures are made with (the first one).
    pub fn primary(&self) -> &WebhookSecret {
        &self.0[0]
    }

    /// Verifies the three headers against the raw body; `now` is unix seconds.
    pub fn verify(
        &self,
        msg_id: Option<&str>,
        timestamp: Option<&str>,
        signatures: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        let (Some(msg_id), Some(timestamp), Some(signatures)) = (msg_id, timestamp, signatures) else {
            return Err(SignatureError::MissingHeaders);
        };
        if msg_id.is_empty() || msg_id.len() > 256 || signatures.len() > MAX_HEADER_LEN {
            return Err(SignatureError::Malformed);
        }
        let timestamp: i64 = timestamp.parse().map_err(|_| SignatureError::Malformed)?;
        if now.abs_diff(timestamp) > TOLERANCE_SECS as u64 {
            return Err(SignatureError::Stale);
        }
        let candidates = signatures
            .split(' ')
            .filter_map(|entry| entry.strip_prefix("v1,"))
            .filter_map(|b64| STANDARD.decode(b64).ok());
        for signature in candidates {
            // Try every secret so the time taken does not reveal which one matched.
            let mut matched = false;
            for secret in &self.0 {
                matched |= secret.verifies(msg_id, timestamp, body, &signature);
            }
            if matched {
                return Ok(());
            }
        }
        Err(SignatureError::Mismatch)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("webhook-id, webhook-timestamp and webhook-signature headers are required")]
    MissingHeaders,
    #[error("webhook headers are malformed")]
    Malformed,
    #[error("webhook-timestamp is outside the accepted window")]
    Stale,
    #[error("no webhook signature matches")]
    Mismatch,
}

impl SignatureError {
    pub fn reason(self) -> &'static str {
        match self {
            Self::MissingHeaders => "missing_headers",
            Self::Malformed => "malformed_headers",
            Self::Stale => "stale_timestamp",
            Self::Mismatch => "bad_signature",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REFERENCE: [(&str, &str, i64, &str, &str); 2] = [
        (
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ),
        (
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            r#"{"email":"test@example.com","username":"test_user"}"#,
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
        ),
    ];

    #[test]
    fn signs_the_reference_vectors() {
        for (secret, id, ts, body, expected) in REFERENCE {
            let secret = WebhookSecret::parse(secret).unwrap();
            assert_eq!(secret.sign(id, ts, body.as_bytes()), expected);
        }
    }

    #[test]
    fn verifies_the_reference_vectors_within_tolerance() {
        for (secret, id, ts, body, sig) in REFERENCE {
            let secrets = WebhookSecrets::parse(secret).unwrap();
            let verify =
                |sig: &str, now| secrets.verify(Some(id), Some(&ts.to_string()), Some(sig), body.as_bytes(), now);
            assert_eq!(verify(sig, ts), Ok(()));
            assert_eq!(verify(sig, ts + 300), Ok(()));
            assert_eq!(verify(sig, ts - 300), Ok(()));
            assert_eq!(verify(sig, ts + 301), Err(SignatureError::Stale));
            assert_eq!(verify(&format!("v2,abc {sig}"), ts), Ok(()));
            assert_eq!(verify("v1,Zm9v", ts), Err(SignatureError::Mismatch));
            let tampered = format!("{body} ");
            let result = secrets.verify(Some(id), Some(&ts.to_string()), Some(sig), tampered.as_bytes(), ts);
            assert_eq!(result, Err(SignatureError::Mismatch));
        }
    }

    #[test]
    fn any_configured_secret_verifies_during_rotation() {
        let (old, id, ts, body, sig) = REFERENCE[0];
        let secrets = WebhookSecrets::parse(&format!("{},{old}", REFERENCE[1].0)).unwrap();
        assert_eq!(
            secrets.verify(Some(id), Some(&ts.to_string()), Some(sig), body.as_bytes(), ts),
            Ok(())
        );
    }

    #[test]
    fn missing_and_malformed_headers_are_refused() {
        let secrets = WebhookSecrets::parse(REFERENCE[0].0).unwrap();
        assert_eq!(
            secrets.verify(None, Some("1"), Some("v1,x"), b"", 1),
            Err(SignatureError::MissingHeaders)
        );
        assert_eq!(
            secrets.verify(Some("id"), Some("soon"), Some("v1,x"), b"", 1),
            Err(SignatureError::Malformed)
        );
        assert!(WebhookSecrets::parse("whsec_").is_err());
        assert!(WebhookSecrets::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
        assert!(!format!("{secrets:?}").contains("MfKQ"));
    }

    proptest! {
        #[test]
        fn verify_never_panics(id in "\\PC{0,20}", ts in "\\PC{0,12}", sig in "\\PC{0,120}", body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let secrets = WebhookSecrets::parse(REFERENCE[0].0).unwrap();
            let _ = secrets.verify(Some(&id), Some(&ts), Some(&sig), &body, 1_700_000_000);
        }

        #[test]
        fn any_timestamp_and_clock_are_judged_without_overflow(ts in any::<i64>(), now in any::<i64>()) {
            let secrets = WebhookSecrets::parse(REFERENCE[0].0).unwrap();
            let sig = secrets.primary().sign("msg", ts, b"{}");
            let result = secrets.verify(Some("msg"), Some(&ts.to_string()), Some(&sig), b"{}", now);
            if now.abs_diff(ts) > TOLERANCE_SECS as u64 {
                prop_assert_eq!(result, Err(SignatureError::Stale));
            } else {
                prop_assert_eq!(result, Ok(()));
            }
        }

        #[test]
        fn extreme_timestamps_are_stale(edge in prop_oneof![Just(i64::MIN), Just(i64::MAX)], now in any::<i64>()) {
            prop_assume!(now.abs_diff(edge) > TOLERANCE_SECS as u64);
            let secrets = WebhookSecrets::parse(REFERENCE[0].0).unwrap();
            let sig = secrets.primary().sign("msg", edge, b"{}");
            prop_assert_eq!(
                secrets.verify(Some("msg"), Some(&edge.to_string()), Some(&sig), b"{}", now),
                Err(SignatureError::Stale)
            );
        }

        #[test]
        fn signed_messages_verify(id in "[a-z0-9_]{1,30}", body in proptest::collection::vec(any::<u8>(), 0..256), ts in 0i64..4_000_000_000) {
            let secrets = WebhookSecrets::parse(REFERENCE[1].0).unwrap();
            let sig = secrets.primary().sign(&id, ts, &body);
            prop_assert_eq!(secrets.verify(Some(&id), Some(&ts.to_string()), Some(&sig), &body, ts), Ok(()));
        }
    }
}
