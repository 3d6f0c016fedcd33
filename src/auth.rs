//! Cognito JWT authentication (SPEC §4): RS256 only, keys from a cached JWKS
//! that is refetched (rate-limited) when a token names an unknown `kid`, and
//! refreshed in the background once it is old: a known key is always served
//! at once, so a slow or unreachable identity provider holds up no token
//! whose key is known.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::{Mutex, RwLock};

use crate::error::ApiError;

/// At most one JWKS refetch per this interval, however many unknown `kid`s arrive.
const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// Keys are refreshed in the background on use once they are this old.
const MAX_KEY_AGE: Duration = Duration::from_secs(3600);
const LEEWAY_SECS: u64 = 60;
/// `created_by`/`updated_by` are varchar(50).
const MAX_SUBJECT_LEN: usize = 50;

/// The authenticated caller: the token's `sub`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub subject: String,
}

pub struct Authenticator {
    jwks_url: String,
    issuer: String,
    audience: String,
    http: reqwest::Client,
    keys: RwLock<KeyCache>,
    /// The last refetch, held by whoever fetches: one fetch at a time.
    refetch: Mutex<Option<Instant>>,
    /// A background refresh is under way.
    refreshing: AtomicBool,
    max_key_age: Duration,
    /// Tokens already verified, so a client's repeated requests do not pay
    /// for an RSA verification each time (the largest CPU cost of a request).
    /// Keyed by the token's SHA-256, so the cache holds no usable token;
    /// bounded, least-recently-used entries evicted first (moka).
    verified: moka::sync::Cache<[u8; 32], Verified>,
}

#[derive(Clone)]
struct Verified {
    actor: Actor,
    ttl: Duration,
}

/// Each verified token expires on its own clock (`Verified::ttl`).
struct VerifiedExpiry;

impl moka::Expiry<[u8; 32], Verified> for VerifiedExpiry {
    fn expire_after_create(&self, _: &[u8; 32], value: &Verified, _: Instant) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// A verified token is trusted from the cache at most this long (and never
/// past its `exp` + leeway), so a key removed from the JWKS stops working soon.
const VERIFIED_TTL_SECS: u64 = 300;
const MAX_VERIFIED: u64 = 10_000;

fn token_key(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, DecodingKey>,
    fetched_at: Option<Instant>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    aud: Option<Audience>,
    client_id: Option<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    Invalid(&'static str),
    KeysUnavailable,
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        match err {
            AuthError::Invalid(detail) => ApiError::Unauthorized { detail },
            AuthError::KeysUnavailable => ApiError::Unavailable("identity provider"),
        }
    }
}

impl Authenticator {
    pub fn new(jwks_url: String, issuer: String, audience: String) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("reqwest client with static settings");
        Self {
            jwks_url,
            issuer,
            audience,
            http,
            keys: RwLock::new(KeyCache::default()),
            refetch: Mutex::new(None),
            refreshing: AtomicBool::new(false),
            max_key_age: MAX_KEY_AGE,
            verified: moka::sync::Cache::builder()
                .max_capacity(MAX_VERIFIED)
                .expire_after(VerifiedExpiry)
                .build(),
        }
    }

    /// Keys older than `age` are refreshed (tests shorten the hour).
    pub fn with_max_key_age(mut self, age: Duration) -> Self {
        self.max_key_age = age;
        self
    }

    pub async fn authenticate(self: &Arc<Self>, token: &str) -> Result<Actor, AuthError> {
        if let Some(actor) = self.cached(token) {
            return Ok(actor);
        }
        let (actor, exp) = self.verify(token).await?;
        self.remember(token, &actor, exp);
        Ok(actor)
    }

    fn cached(&self, token: &str) -> Option<Actor> {
        self.verified.get(&token_key(token)).map(|v| v.actor)
    }

    fn remember(&self, token: &str, actor: &Actor, exp: u64) {
        let ttl = (exp + LEEWAY_SECS)
            .saturating_sub(jsonwebtoken::get_current_timestamp())
            .min(VERIFIED_TTL_SECS);
        if ttl > 0 {
            let verified = Verified {
                actor: actor.clone(),
                ttl: Duration::from_secs(ttl),
            };
            self.verified.insert(token_key(token), verified);
        }
    }

    /// Full verification: header, key, signature, claims. Returns the actor and `exp`.
    async fn verify(self: &Arc<Self>, token: &str) -> Result<(Actor, u64), AuthError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| AuthError::Invalid("The bearer token is malformed."))?;
        if header.alg != Algorithm::RS256 {
            return Err(AuthError::Invalid("Only RS256 tokens are accepted."));
        }
        let kid = header.kid.ok_or(AuthError::Invalid("The token has no key id."))?;
        let key = self.key(&kid).await?;

        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        // Cognito puts the app client id in `aud` (ID token) or `client_id` (access token).
        validation.validate_aud = false;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|_| AuthError::Invalid("The bearer token is invalid or expired."))?
            .claims;

        let audience_ok = claims.client_id.as_deref() == Some(self.audience.as_str())
            || match &claims.aud {
                Some(Audience::One(aud)) => *aud == self.audience,
                Some(Audience::Many(auds)) => auds.contains(&self.audience),
                None => false,
            };
        if !audience_ok {
            return Err(AuthError::Invalid("The token was not issued for this application."));
        }
        if claims.sub.is_empty() || claims.sub.len() > MAX_SUBJECT_LEN || claims.sub.chars().any(char::is_control) {
            return Err(AuthError::Invalid("The token subject is not acceptable."));
        }
        Ok((Actor { subject: claims.sub }, claims.exp))
    }

    /// The key `kid` names. A known key is served at once, and refreshed in
    /// the background when it is old. An unknown one needs a refetch
    /// (rate-limited, one at a time): only such a request waits for one.
    async fn key(self: &Arc<Self>, kid: &str) -> Result<DecodingKey, AuthError> {
        {
            let cache = self.keys.read().await;
            if let Some(key) = cache.keys.get(kid) {
                let key = key.clone();
                let aged = cache.fetched_at.is_none_or(|t| t.elapsed() >= self.max_key_age);
                drop(cache);
                if aged {
                    self.refresh_in_background();
                }
                return Ok(key);
            }
        }
        // One refetch at a time; the others wait and then read what it got.
        let mut last_refetch = self.refetch.lock().await;
        let loaded = {
            let cache = self.keys.read().await;
            if let Some(key) = cache.keys.get(kid) {
                return Ok(key.clone());
            }
            let loaded = cache.fetched_at.is_some();
            // Refetches (unknown kid, failures) are rate-limited.
            let min_interval = if loaded {
                MIN_REFETCH_INTERVAL
            } else {
                Duration::from_secs(1)
            };
            if last_refetch.is_some_and(|t| t.elapsed() < min_interval) {
                return Err(if loaded {
                    AuthError::Invalid("The token's signing key is unknown.")
                } else {
                    AuthError::KeysUnavailable
                });
            }
            loaded
        };
        match self.fetch().await {
            Ok(keys) => {
                // The first load is not a refetch and does not start the rate limit.
                if loaded {
                    *last_refetch = Some(Instant::now());
                }
                let key = keys.get(kid).cloned();
                self.store(keys).await;
                key.ok_or(AuthError::Invalid("The token's signing key is unknown."))
            }
            Err(err) => {
                *last_refetch = Some(Instant::now());
                tracing::warn!(error = %err, "JWKS fetch failed");
                Err(AuthError::KeysUnavailable)
            }
        }
    }

    /// Refetches the key set in a task of its own, unless one is under way or
    /// the last refetch was less than [`MIN_REFETCH_INTERVAL`] ago; a
    /// failure keeps the keys as they are.
    fn refresh_in_background(self: &Arc<Self>) {
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let mut last_refetch = this.refetch.lock().await;
            let due = last_refetch.is_none_or(|t| t.elapsed() >= MIN_REFETCH_INTERVAL);
            let aged = this
                .keys
                .read()
                .await
                .fetched_at
                .is_none_or(|t| t.elapsed() >= this.max_key_age);
            if due && aged {
                *last_refetch = Some(Instant::now());
                match this.fetch().await {
                    Ok(keys) => {
                        this.store(keys).await;
                    }
                    Err(err) => tracing::warn!(error = %err, "JWKS refresh failed; the keys held are kept"),
                }
            }
            drop(last_refetch);
            this.refreshing.store(false, Ordering::Release);
        });
    }

    /// Replaces the cached keys with a fetched set.
    async fn store(&self, keys: HashMap<String, DecodingKey>) {
        let mut cache = self.keys.write().await;
        cache.keys = keys;
        cache.fetched_at = Some(Instant::now());
    }

    async fn fetch(&self) -> anyhow::Result<HashMap<String, DecodingKey>> {
        let body = if let Some(path) = self.jwks_url.strip_prefix("file://") {
            tokio::fs::read(path).await?
        } else {
            self.http
                .get(&self.jwks_url)
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?
                .to_vec()
        };
        let set: JwkSet = serde_json::from_slice(&body)?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            let (Some(kid), Ok(key)) = (&jwk.common.key_id, DecodingKey::from_jwk(jwk)) else {
                continue;
            };
            if matches!(jwk.algorithm, jsonwebtoken::jwk::AlgorithmParameters::RSA(_)) {
                keys.insert(kid.clone(), key);
            }
        }
        tracing::info!(keys = keys.len(), "JWKS loaded");
        Ok(keys)
    }

    /// Loads the key set once at start-up so the first request does not pay for it.
    pub async fn warm_up(self: &Arc<Self>) {
        if let Err(err) = self.key("").await {
            if err == AuthError::KeysUnavailable {
                tracing::warn!("JWKS not reachable at start-up; will retry on demand");
            }
        }
    }
}

/// Any state that can hand out the authenticator (the app's: `state.rs`).
impl<S> FromRequestParts<S> for Actor
where
    S: Send + Sync,
    Arc<Authenticator>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or(ApiError::Unauthorized {
                detail: "An Authorization: Bearer token is required.",
            })?;
        let token = header
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= 16 * 1024)
            .ok_or(ApiError::Unauthorized {
                detail: "The Authorization header must be a Bearer token.",
            })?;
        Ok(Arc::<Authenticator>::from_ref(state).authenticate(token).await?)
    }
}

/// Mints a token for local development with the committed dev key. Only a
/// service whose configured JWKS contains that key will accept it.
pub fn mint_token(
    private_key_pem: &[u8],
    kid: &str,
    subject: &str,
    issuer: &str,
    audience: &str,
    ttl: Duration,
) -> anyhow::Result<String> {
    let now = jsonwebtoken::get_current_timestamp();
    let claims = serde_json::json!({
        "sub": subject,
        "iss": issuer,
        "aud": audience,
        "token_use": "id",
        "iat": now,
        "nbf": now,
        "exp": now + ttl.as_secs(),
    });
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(private_key_pem)?;
    Ok(jsonwebtoken::encode(&header, &claims, &key)?)
}
