//! Configuration from environment variables (SPEC §2). A missing or malformed
//! value stops start-up with one line naming the variable.

use std::net::SocketAddr;
use std::time::Duration;

use secrecy::SecretString;

use crate::webhook::WebhookSecrets;
pub use page_import_platform::config::{ConfigError, Env, LogFormat};

/// `Debug` prints every setting but the secrets, which are `secrecy` boxes.
#[derive(Clone, Debug)]
pub struct Config {
    /// May hold a password.
    pub database_url: SecretString,
    pub listen_addr: SocketAddr,
    pub public_base_url: String,
    pub page_import_queue_url: String,
    pub code2des_queue_url: String,
    pub artifact_bucket: String,
    pub s3_force_path_style: bool,
    pub webhook_secrets: WebhookSecrets,
    pub auth_jwks_url: String,
    pub auth_issuer: String,
    pub auth_audience: String,
    pub capture_timeout: Duration,
    /// Attempts per import before a timeout or a retryable failure is final.
    pub capture_max_attempts: i32,
    pub source_url_dns_check: bool,
    pub dns_nameservers: Vec<SocketAddr>,
    pub allow_private_source_urls: bool,
    pub log_format: LogFormat,
    /// Tuning knobs with sensible defaults; documented in the README.
    pub database_max_connections: u32,
    /// Coalesced statements in flight per kind (creates, reads by id).
    pub database_coalesce_slots: u32,
    /// Requests waiting for a coalesced statement before 503 `overloaded`.
    pub database_coalesce_queue: usize,
    pub request_timeout: Duration,
    pub outbox_relay_interval: Duration,
    pub outbox_max_backoff: Duration,
    pub outbox_lease: Duration,
    pub sweeper_interval: Duration,
    /// Exact origins allowed to call the user routes from a browser (CORS).
    pub cors_allowed_origins: Vec<String>,
    /// Open `/events` streams per process before 503.
    pub events_max_streams: usize,
    /// When set, `/metrics` is served only on this second listener.
    pub metrics_addr: Option<SocketAddr>,
}

fn http_url(v: &str, allow_file: bool) -> Result<String, String> {
    let url = url::Url::parse(v).map_err(|e| e.to_string())?;
    match url.scheme() {
        "http" | "https" => Ok(v.trim_end_matches('/').to_owned()),
        "file" if allow_file => Ok(v.to_owned()),
        other => Err(format!("unsupported scheme '{other}'")),
    }
}

/// An exact origin, `scheme://host[:port]`, as browsers send it.
fn origin(v: &str) -> Result<String, String> {
    let url = url::Url::parse(v).map_err(|e| format!("'{v}': {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("'{v}' is not an http(s) origin"));
    }
    let serialized = url.origin().ascii_serialization();
    if serialized != v {
        return Err(format!("'{v}' is not an exact origin (expected '{serialized}')"));
    }
    Ok(serialized)
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env::new(lookup);
        let database_url = env.required("DATABASE_URL")?;
        if !database_url.starts_with("postgres://") && !database_url.starts_with("postgresql://") {
            return Err(ConfigError {
                variable: "DATABASE_URL",
                problem: "is malformed: expected a postgres:// URL".into(),
            });
        }
        let listen_addr = env.parsed("LISTEN_ADDR", SocketAddr::from(([127, 0, 0, 1], 8080)), |v| {
            v.parse().map_err(|e| format!("{e}"))
        })?;
        let public_base_url = env.parsed("PUBLIC_BASE_URL", format!("http://{listen_addr}"), |v| {
            http_url(v, false)
        })?;
        let page_import_queue_url = env.parsed("PAGE_IMPORT_QUEUE_URL", String::new(), |v| http_url(v, false))?;
        if page_import_queue_url.is_empty() {
            env.required("PAGE_IMPORT_QUEUE_URL")?;
        }
        let code2des_queue_url = env.parsed("CODE2DES_QUEUE_URL", String::new(), |v| http_url(v, false))?;
        if code2des_queue_url.is_empty() {
            env.required("CODE2DES_QUEUE_URL")?;
        }
        let artifact_bucket = env.required("ARTIFACT_BUCKET")?;
        let s3_force_path_style = env.bool("S3_FORCE_PATH_STYLE", false)?;
        let webhook_secrets = WebhookSecrets::parse(&env.required("WEBHOOK_SECRET")?).map_err(|why| ConfigError {
            variable: "WEBHOOK_SECRET",
            problem: format!("is malformed: {why}"),
        })?;
        let auth_jwks_url = env.parsed("AUTH_JWKS_URL", String::new(), |v| http_url(v, true))?;
        if auth_jwks_url.is_empty() {
            env.required("AUTH_JWKS_URL")?;
        }
        let auth_issuer = env.required("AUTH_ISSUER")?;
        let auth_audience = env.required("AUTH_AUDIENCE")?;
        let capture_timeout = env.secs("CAPTURE_TIMEOUT_SECS", 900)?;
        let source_url_dns_check = env.bool("SOURCE_URL_DNS_CHECK", true)?;
        let dns_nameservers = env.parsed("DNS_NAMESERVERS", Vec::new(), |v| {
            v.split(',')
                .map(|s| s.trim().parse::<SocketAddr>().map_err(|e| format!("'{s}': {e}")))
                .collect()
        })?;
        let allow_private_source_urls = env.bool("ALLOW_PRIVATE_SOURCE_URLS", false)?;
        let log_format = env.log_format()?;
        let database_max_connections = u32::try_from(env.count("DATABASE_MAX_CONNECTIONS", 16)?).unwrap_or(u32::MAX);
        let database_coalesce_slots = env.parsed("DATABASE_COALESCE_SLOTS", 1, |v| match v.parse::<u32>() {
            Ok(n) if (1..=64).contains(&n) => Ok(n),
            _ => Err("expected a whole number from 1 to 64".into()),
        })?;
        Ok(Self {
            database_url: database_url.into(),
            listen_addr,
            public_base_url,
            page_import_queue_url,
            code2des_queue_url,
            artifact_bucket,
            s3_force_path_style,
            webhook_secrets,
            auth_jwks_url,
            auth_issuer,
            auth_audience,
            capture_timeout,
            capture_max_attempts: i32::try_from(env.count("CAPTURE_MAX_ATTEMPTS", 3)?).unwrap_or(i32::MAX),
            source_url_dns_check,
            dns_nameservers,
            allow_private_source_urls,
            log_format,
            database_max_connections,
            database_coalesce_slots,
            database_coalesce_queue: usize::try_from(env.count("DATABASE_COALESCE_QUEUE", 1024)?).unwrap_or(usize::MAX),
            request_timeout: env.millis("REQUEST_TIMEOUT_MS", 10_000)?,
            outbox_relay_interval: env.millis("OUTBOX_RELAY_INTERVAL_MS", 1_000)?,
            outbox_max_backoff: env.millis("OUTBOX_MAX_BACKOFF_MS", 30_000)?,
            outbox_lease: env.millis("OUTBOX_LEASE_MS", 30_000)?,
            sweeper_interval: env.millis("SWEEPER_INTERVAL_MS", 30_000)?,
            cors_allowed_origins: env.parsed("CORS_ALLOWED_ORIGINS", Vec::new(), |v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(origin)
                    .collect()
            })?,
            events_max_streams: usize::try_from(env.count("EVENTS_MAX_STREAMS", 1000)?).unwrap_or(usize::MAX),
            metrics_addr: env.parsed("METRICS_ADDR", None, |v| {
                v.parse().map(Some).map_err(|e| format!("{e}"))
            })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn base() -> HashMap<&'static str, &'static str> {
        HashMap::from([
            ("DATABASE_URL", "postgres://localhost/db"),
            (
                "PAGE_IMPORT_QUEUE_URL",
                "http://127.0.0.1:4566/000000000000/page-import",
            ),
            ("CODE2DES_QUEUE_URL", "http://127.0.0.1:4566/000000000000/code2des"),
            ("ARTIFACT_BUCKET", "artifacts"),
            ("WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            ("AUTH_JWKS_URL", "file:///tmp/jwks.json"),
            ("AUTH_ISSUER", "https://issuer.example.com"),
            ("AUTH_AUDIENCE", "client"),
        ])
    }

    fn load(env: &HashMap<&'static str, &'static str>) -> Result<Config, ConfigError> {
        Config::from_lookup(|k| env.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn debug_prints_settings_but_no_secret() {
        let mut env = base();
        env.insert("DATABASE_URL", "postgres://app:pa55word@db.internal/page_import");
        let printed = format!("{:?}", load(&env).unwrap());
        assert!(printed.contains("artifacts"), "{printed}");
        for secret in ["pa55word", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_"] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
    }

    #[test]
    fn defaults_apply() {
        let config = load(&base()).unwrap();
        assert_eq!(config.listen_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(config.public_base_url, "http://127.0.0.1:8080");
        assert_eq!(config.capture_timeout, Duration::from_secs(900));
        assert!(config.source_url_dns_check);
        assert!(!config.allow_private_source_urls);
        assert_eq!(config.log_format, LogFormat::Json);
        assert_eq!(config.database_coalesce_slots, 1);
        assert!(config.cors_allowed_origins.is_empty());
        assert_eq!(config.events_max_streams, 1000);
        assert_eq!(config.capture_max_attempts, 3);
        assert_eq!(config.metrics_addr, None);
    }

    #[test]
    fn cors_origins_must_be_exact_origins() {
        let mut env = base();
        env.insert("CORS_ALLOWED_ORIGINS", "https://app.example.com, http://127.0.0.1:5173");
        assert_eq!(
            load(&env).unwrap().cors_allowed_origins,
            ["https://app.example.com", "http://127.0.0.1:5173"]
        );
        for bad in [
            "https://app.example.com/",
            "app.example.com",
            "https://app.example.com/path",
            "*",
        ] {
            env.insert("CORS_ALLOWED_ORIGINS", bad);
            assert_eq!(load(&env).unwrap_err().variable, "CORS_ALLOWED_ORIGINS", "{bad}");
        }
    }

    #[test]
    fn every_required_variable_is_named_when_missing() {
        for var in [
            "DATABASE_URL",
            "PAGE_IMPORT_QUEUE_URL",
            "CODE2DES_QUEUE_URL",
            "ARTIFACT_BUCKET",
            "WEBHOOK_SECRET",
            "AUTH_JWKS_URL",
            "AUTH_ISSUER",
            "AUTH_AUDIENCE",
        ] {
            let mut env = base();
            env.remove(var);
            let err = load(&env).unwrap_err();
            assert_eq!(err.variable, var);
            let line = err.to_string();
            assert!(line.contains(var) && !line.contains('\n'), "{line}");
        }
    }

    #[test]
    fn malformed_values_are_named() {
        for (var, value) in [
            ("LISTEN_ADDR", "nope"),
            ("DATABASE_URL", "mysql://x"),
            ("WEBHOOK_SECRET", "not-a-secret"),
            ("CAPTURE_TIMEOUT_SECS", "-5"),
            ("SOURCE_URL_DNS_CHECK", "maybe"),
            ("DNS_NAMESERVERS", "1.1.1.1"),
            ("AUTH_JWKS_URL", "ftp://x/jwks"),
            ("LOG_FORMAT", "xml"),
            ("S3_FORCE_PATH_STYLE", "2"),
            ("DATABASE_MAX_CONNECTIONS", "0"),
            ("DATABASE_COALESCE_SLOTS", "0"),
            ("DATABASE_COALESCE_SLOTS", "65"),
            ("EVENTS_MAX_STREAMS", "0"),
            ("CAPTURE_MAX_ATTEMPTS", "0"),
            ("METRICS_ADDR", "localhost"),
        ] {
            let mut env = base();
            env.insert(var, value);
            let err = load(&env).unwrap_err();
            assert_eq!(err.variable, var, "{err}");
            if var == "WEBHOOK_SECRET" {
                assert!(!err.to_string().contains(value), "secret echoed: {err}");
            }
        }
    }
}
