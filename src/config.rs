//! Configuration from environment variables (SPEC §2), declared once here
//! with clap: each field names its variable, default and parser. A missing or
//! malformed value stops start-up with one line naming the variable
//! (`page_import_platform::config`).

use std::net::SocketAddr;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::ArgAction;
use secrecy::SecretString;

use page_import_platform::config::parse;
pub use page_import_platform::config::{ConfigError, LogFormat, SharedSettings};

/// `Debug` prints every setting but the secrets, which are `secrecy` boxes.
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "page-import")]
pub struct Config {
    /// PostgreSQL URL (may hold a password).
    #[arg(long, env = "DATABASE_URL", value_parser = postgres_url)]
    pub database_url: SecretString,
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:8080")]
    pub listen_addr: SocketAddr,
    /// Base URL the worker calls back on; empty means `http://{LISTEN_ADDR}`.
    #[arg(long, env = "PUBLIC_BASE_URL", default_value = "", value_parser = parse::http_url)]
    pub public_base_url: String,
    #[arg(long, env = "CODE2DES_QUEUE_URL", value_parser = parse::http_url)]
    pub code2des_queue_url: String,
    /// PAGE_IMPORT_QUEUE_URL, ARTIFACT_BUCKET, S3_FORCE_PATH_STYLE,
    /// WEBHOOK_SECRET and LOG_FORMAT: declared once for both binaries.
    #[command(flatten)]
    pub shared: SharedSettings,
    /// JWKS of the user pool; `file://` allowed for local use.
    #[arg(long, env = "AUTH_JWKS_URL", value_parser = jwks_url)]
    pub auth_jwks_url: String,
    #[arg(long, env = "AUTH_ISSUER")]
    pub auth_issuer: String,
    #[arg(long, env = "AUTH_AUDIENCE")]
    pub auth_audience: String,
    #[arg(long, env = "CAPTURE_TIMEOUT_SECS", default_value = "900", value_parser = parse::secs)]
    pub capture_timeout: Duration,
    /// Attempts per import before a timeout or a retryable failure is final.
    #[arg(long, env = "CAPTURE_MAX_ATTEMPTS", default_value = "3", value_parser = parse::count::<i32>)]
    pub capture_max_attempts: i32,
    /// Capture attempts in flight in the whole deployment before dispatch
    /// waits (SPEC §12): the worker fleet's total concurrency.
    #[arg(long, env = "CAPTURE_MAX_IN_FLIGHT", default_value = "64", value_parser = parse::count::<i64>)]
    pub capture_max_in_flight: i64,
    /// The same, per organization.
    #[arg(long, env = "CAPTURE_MAX_IN_FLIGHT_PER_ORG", default_value = "16", value_parser = parse::count::<i64>)]
    pub capture_max_in_flight_per_org: i64,
    /// Queued attempts an organization may hold before creates and retries
    /// answer 429.
    #[arg(long, env = "ORG_MAX_QUEUED", default_value = "10000", value_parser = parse::count::<i64>)]
    pub org_max_queued: i64,
    /// How often a dispatch pass runs when nothing wakes it sooner (a slot
    /// freed or an attempt queued on another replica).
    #[arg(long, env = "CAPTURE_DISPATCH_INTERVAL_MS", default_value = "1000", value_parser = parse::millis)]
    pub capture_dispatch_interval: Duration,
    /// How long a soft-deleted import keeps its artifacts before it is
    /// erased (SPEC §13); 0 erases it at the next pass.
    #[arg(long, env = "ERASE_AFTER_DELETE_SECS", default_value = "2592000", value_parser = parse::secs_or_zero)]
    pub erase_after_delete: Duration,
    /// How often erasure passes run (SPEC §13).
    #[arg(long, env = "ERASE_INTERVAL_SECS", default_value = "60", value_parser = parse::secs)]
    pub erase_interval: Duration,
    #[arg(long, env = "SOURCE_URL_DNS_CHECK", default_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub source_url_dns_check: bool,
    /// Comma-separated `ip:port` resolvers for the DNS check; empty means the
    /// system resolver.
    #[arg(long, env = "DNS_NAMESERVERS", default_value = "", value_parser = parse::socket_addrs)]
    pub dns_nameservers: ::std::vec::Vec<SocketAddr>,
    #[arg(long, env = "ALLOW_PRIVATE_SOURCE_URLS", default_value = "false", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub allow_private_source_urls: bool,
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value = "16", value_parser = parse::count::<u32>)]
    pub database_max_connections: u32,
    /// Coalesced statements in flight per kind (creates, reads by id).
    #[arg(long, env = "DATABASE_COALESCE_SLOTS", default_value = "1", value_parser = parse::count_to::<u32, 64>)]
    pub database_coalesce_slots: u32,
    /// Requests waiting for a coalesced statement before 503 `overloaded`.
    #[arg(long, env = "DATABASE_COALESCE_QUEUE", default_value = "1024", value_parser = parse::count::<usize>)]
    pub database_coalesce_queue: usize,
    #[arg(long, env = "REQUEST_TIMEOUT_MS", default_value = "10000", value_parser = parse::millis)]
    pub request_timeout: Duration,
    #[arg(long, env = "OUTBOX_RELAY_INTERVAL_MS", default_value = "1000", value_parser = parse::millis)]
    pub outbox_relay_interval: Duration,
    #[arg(long, env = "OUTBOX_MAX_BACKOFF_MS", default_value = "30000", value_parser = parse::millis)]
    pub outbox_max_backoff: Duration,
    #[arg(long, env = "OUTBOX_LEASE_MS", default_value = "30000", value_parser = parse::millis)]
    pub outbox_lease: Duration,
    #[arg(long, env = "SWEEPER_INTERVAL_MS", default_value = "30000", value_parser = parse::millis)]
    pub sweeper_interval: Duration,
    /// Exact origins allowed to call the user routes from a browser (CORS).
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", default_value = "", value_parser = origins)]
    pub cors_allowed_origins: ::std::vec::Vec<String>,
    /// Open `/events` streams per process before 503.
    #[arg(long, env = "EVENTS_MAX_STREAMS", default_value = "1000", value_parser = parse::count::<usize>)]
    pub events_max_streams: usize,
    /// How often every open stream re-reads its row, for change
    /// notifications that were lost: the bound on a stream's staleness.
    #[arg(long, env = "EVENTS_REREAD_INTERVAL_MS", default_value = "10000", value_parser = parse::millis)]
    pub events_reread_interval: Duration,
    /// When set, `/metrics` is served only on this second listener.
    #[arg(long, env = "METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
}

fn postgres_url(v: &str) -> Result<SecretString, String> {
    if v.starts_with("postgres://") || v.starts_with("postgresql://") {
        Ok(v.into())
    } else {
        // Not echoed: the value may hold a password.
        Err("expected a postgres:// URL".into())
    }
}

fn jwks_url(v: &str) -> Result<String, String> {
    match url::Url::parse(v) {
        Ok(url) if url.scheme() == "file" => Ok(v.to_owned()),
        _ => parse::http_url(v),
    }
}

/// Comma-separated exact origins, `scheme://host[:port]`, as browsers send them.
fn origins(v: &str) -> Result<Vec<String>, String> {
    parse::list(v, |v| {
        let url = url::Url::parse(v).map_err(|e| format!("'{v}': {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(format!("'{v}' is not an http(s) origin"));
        }
        let serialized = url.origin().ascii_serialization();
        if serialized != v {
            return Err(format!("'{v}' is not an exact origin (expected '{serialized}')"));
        }
        Ok(serialized)
    })
}

/// What `page-import migrate` needs: the database and nothing else.
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "page-import migrate")]
pub struct MigrateConfig {
    #[arg(long, env = "DATABASE_URL", value_parser = postgres_url)]
    pub database_url: SecretString,
}

/// What `page-import erase-orphans` needs: the database and the bucket.
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "page-import erase-orphans")]
pub struct EraseConfig {
    #[arg(long, env = "DATABASE_URL", value_parser = postgres_url)]
    pub database_url: SecretString,
    #[arg(long, env = "ARTIFACT_BUCKET")]
    pub artifact_bucket: String,
    #[arg(long, env = "S3_FORCE_PATH_STYLE", default_value = "false", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub s3_force_path_style: bool,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut config: Self = page_import_platform::config::from_lookup(lookup)?;
        if config.public_base_url.is_empty() {
            config.public_base_url = format!("http://{}", config.listen_addr);
        }
        Ok(config)
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
        assert_eq!(config.shared.log_format, LogFormat::Json);
        assert_eq!(config.database_coalesce_slots, 1);
        assert!(config.cors_allowed_origins.is_empty());
        assert_eq!(config.events_max_streams, 1000);
        assert_eq!(config.events_reread_interval, Duration::from_secs(10));
        assert_eq!(config.capture_max_attempts, 3);
        assert_eq!(config.capture_max_in_flight, 64);
        assert_eq!(config.capture_max_in_flight_per_org, 16);
        assert_eq!(config.org_max_queued, 10_000);
        assert_eq!(config.metrics_addr, None);
        assert_eq!(config.erase_after_delete, Duration::from_secs(30 * 24 * 3600));
        assert_eq!(config.erase_interval, Duration::from_secs(60));
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
            ("CAPTURE_MAX_IN_FLIGHT", "0"),
            ("CAPTURE_MAX_IN_FLIGHT", "many"),
            ("CAPTURE_MAX_IN_FLIGHT_PER_ORG", "0"),
            ("ORG_MAX_QUEUED", "-1"),
            ("CAPTURE_DISPATCH_INTERVAL_MS", "soon"),
            ("METRICS_ADDR", "localhost"),
            ("ERASE_AFTER_DELETE_SECS", "-1"),
            ("ERASE_AFTER_DELETE_SECS", "soon"),
            ("ERASE_INTERVAL_SECS", "0"),
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
