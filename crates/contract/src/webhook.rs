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
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Accepted clock skew between the worker and the service.
pub const TOLERANCE_SECS: i64 = 300;
const MAX_HEADER_LEN: usize = 4096;
/// The most signatures of one header that are compared (SPEC §7).
pub const MAX_SIGNATURES: usize = 16;
/// An HMAC-SHA256 tag, and its length in padded base64.
const MAC_LEN: usize = 32;
const MAC_B64_LEN: usize = 44;

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
        #[cfg(test)]
        MACS_COMPUTED.with(|n| n.set(n.get() + 1));
        let mut mac = HmacSha256::new_from_slice(self.0.expose_secret()).expect("HMAC takes any key length");
        mac.update(msg_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }
}

#[cfg(test)]
thread_local! {
    /// How many MACs this thread computed: the cost a caller can make the
    /// service pay is counted in these.
    static MACS_COMPUTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The signatures of a `webhook-signature` header worth comparing: the
/// well-formed `v1,` entries (base64 of exactly one SHA-256 MAC), at most
/// [`MAX_SIGNATURES`] of them. Empty, malformed and other-version entries
/// are skipped and cost nothing.
fn listed_signatures(header: &str) -> impl Iterator<Item = [u8; MAC_LEN]> + '_ {
    header
        .split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter(|b64| b64.len() == MAC_B64_LEN)
        .filter_map(|b64| STANDARD.decode(b64).ok()?.try_into().ok())
        .take(MAX_SIGNATURES)
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
        let listed: Vec<[u8; MAC_LEN]> = listed_signatures(signatures).collect();
        if listed.is_empty() {
            return Err(SignatureError::Mismatch);
        }
        // One MAC per secret, however many signatures are listed (SPEC §7):
        // an unauthenticated caller cannot make the body be hashed more often
        // than an honest one does. Every pair is compared in constant time
        // and none is skipped, so the time taken does not reveal which one
        // matched.
        let mut matched = subtle::Choice::from(0);
        for secret in &self.0 {
            let expected: [u8; MAC_LEN] = secret.mac(msg_id, timestamp, body).finalize().into_bytes().into();
            for signature in &listed {
                matched |= expected.ct_eq(signature);
            }
        }
        if bool::from(matched) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
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

    fn macs_computed_by(f: impl FnOnce()) -> usize {
        let before = MACS_COMPUTED.with(|n| n.get());
        f();
        MACS_COMPUTED.with(|n| n.get()) - before
    }

    #[test]
    fn one_mac_per_secret_however_many_signatures_are_listed() {
        let (secret, id, ts, body, sig) = REFERENCE[0];
        let two = WebhookSecrets::parse(&format!("{},{secret}", REFERENCE[1].0)).unwrap();
        let forged = format!("v1,{}", STANDARD.encode([7u8; 32]));
        let headers = [
            sig.to_owned(),
            "v1, ".repeat(1_000) + sig,
            format!("{forged} ").repeat(80),
            "v1,Zm9v ".repeat(500) + &forged,
        ];
        for header in &headers {
            let macs = macs_computed_by(|| {
                let _ = two.verify(Some(id), Some(&ts.to_string()), Some(header), body.as_bytes(), ts);
            });
            assert_eq!(macs, 2, "two secrets, two MACs, for {} header bytes", header.len());
        }
        // Skipped entries cost nothing and hide nothing: the real signature
        // after a thousand empty ones still verifies.
        assert_eq!(
            two.verify(Some(id), Some(&ts.to_string()), Some(&headers[1]), body.as_bytes(), ts),
            Ok(())
        );
        // A header with nothing well-formed in it costs no MAC at all.
        let empty = "v1,".to_owned() + &" v1,".repeat(1_000);
        let macs = macs_computed_by(|| {
            let result = two.verify(Some(id), Some(&ts.to_string()), Some(&empty), body.as_bytes(), ts);
            assert_eq!(result, Err(SignatureError::Mismatch));
        });
        assert_eq!(macs, 0);
    }

    #[test]
    fn at_most_sixteen_signatures_are_compared() {
        let (secret, id, ts, body, sig) = REFERENCE[0];
        let secrets = WebhookSecrets::parse(secret).unwrap();
        let forged = format!("v1,{} ", STANDARD.encode([7u8; 32]));
        let verify = |header: &str| secrets.verify(Some(id), Some(&ts.to_string()), Some(header), body.as_bytes(), ts);
        assert_eq!(verify(&(forged.repeat(MAX_SIGNATURES - 1) + sig)), Ok(()));
        assert_eq!(
            verify(&(forged.repeat(MAX_SIGNATURES) + sig)),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(listed_signatures(&forged.repeat(1_000)).count(), MAX_SIGNATURES);
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
