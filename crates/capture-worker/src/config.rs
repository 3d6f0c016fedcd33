//! The worker's configuration (SPEC §10), read like the service's: a missing
//! or malformed value is one line naming the variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use page_import_contract::webhook::WebhookSecrets;
use page_import_platform::config::{ConfigError, Env, LogFormat};

pub const DEFAULT_CHROMIUM: &str = "/usr/lib/chromium/chromium";

#[derive(Clone)]
pub struct Config {
    pub page_import_queue_url: String,
    pub artifact_bucket: String,
    pub s3_force_path_style: bool,
    pub webhook_secrets: WebhookSecrets,
    pub chromium_path: PathBuf,
    pub concurrency: usize,
    pub navigation_timeout: Duration,
    pub ready_timeout: Duration,
    pub max_height_px: u32,
    pub max_bytes: u64,
    pub health_addr: Option<SocketAddr>,
    pub shutdown_grace: Duration,
    pub egress_allow: Vec<SocketAddr>,
    pub log_format: LogFormat,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env::new(lookup);
        let page_import_queue_url = env.required("PAGE_IMPORT_QUEUE_URL")?;
        let artifact_bucket = env.required("ARTIFACT_BUCKET")?;
        let webhook_secrets = WebhookSecrets::parse(&env.required("WEBHOOK_SECRET")?).map_err(|why| ConfigError {
            variable: "WEBHOOK_SECRET",
            problem: format!("is malformed: {why}"),
        })?;
        let small = |name: &'static str, default: u64, max: u64| -> Result<u64, ConfigError> {
            let n = env.count(name, default)?;
            if n > max {
                return Err(ConfigError {
                    variable: name,
                    problem: format!("is malformed: at most {max}"),
                });
            }
            Ok(n)
        };
        Ok(Self {
            page_import_queue_url,
            artifact_bucket,
            s3_force_path_style: env.bool("S3_FORCE_PATH_STYLE", false)?,
            webhook_secrets,
            chromium_path: PathBuf::from(env.get("CHROMIUM_PATH").unwrap_or_else(|| DEFAULT_CHROMIUM.into())),
            concurrency: small("WORKER_CONCURRENCY", 2, 64)? as usize,
            navigation_timeout: env.secs("CAPTURE_NAVIGATION_TIMEOUT_SECS", 30)?,
            ready_timeout: env.secs("CAPTURE_READY_TIMEOUT_SECS", 15)?,
            max_height_px: small("CAPTURE_MAX_HEIGHT_PX", 16_384, 65_536)? as u32,
            max_bytes: env.count("CAPTURE_MAX_BYTES", 50 * 1024 * 1024)?,
            health_addr: env.parsed("WORKER_HEALTH_ADDR", None, |v| {
                v.parse().map(Some).map_err(|e| format!("{e}"))
            })?,
            shutdown_grace: env.secs("WORKER_SHUTDOWN_GRACE_SECS", 60)?,
            egress_allow: env.parsed("EGRESS_ALLOW", Vec::new(), |v| {
                v.split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse::<SocketAddr>().map_err(|e| format!("'{s}': {e}")))
                    .collect()
            })?,
            log_format: env.log_format()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let mut env: HashMap<String, String> = HashMap::from([
            ("PAGE_IMPORT_QUEUE_URL".into(), "http://127.0.0.1:5000/123/q".into()),
            ("ARTIFACT_BUCKET".into(), "b".into()),
            ("WEBHOOK_SECRET".into(), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()),
        ]);
        for (k, v) in pairs {
            env.insert((*k).into(), (*v).into());
        }
        Config::from_lookup(|k| env.get(k).cloned()).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_follow_the_spec() {
        let c = config(&[]).unwrap();
        assert_eq!(c.concurrency, 2);
        assert_eq!(c.navigation_timeout, Duration::from_secs(30));
        assert_eq!(c.ready_timeout, Duration::from_secs(15));
        assert_eq!(c.max_height_px, 16_384);
        assert_eq!(c.max_bytes, 50 * 1024 * 1024);
        assert_eq!(c.shutdown_grace, Duration::from_secs(60));
        assert_eq!(c.chromium_path, PathBuf::from(DEFAULT_CHROMIUM));
        assert!(c.egress_allow.is_empty() && c.health_addr.is_none());
    }

    #[test]
    fn bad_values_are_one_line_naming_the_variable() {
        assert_eq!(
            config(&[("WORKER_CONCURRENCY", "0")]).err().unwrap(),
            "configuration error: WORKER_CONCURRENCY is malformed: expected a whole number of at least 1"
        );
        assert!(config(&[("EGRESS_ALLOW", "127.0.0.1")])
            .err()
            .unwrap()
            .starts_with("configuration error: EGRESS_ALLOW"));
        assert_eq!(
            config(&[("ARTIFACT_BUCKET", "")]).err().unwrap(),
            "configuration error: ARTIFACT_BUCKET is required but not set"
        );
        let allowed = config(&[("EGRESS_ALLOW", "127.0.0.5:80, 127.0.0.6:8080")])
            .unwrap()
            .egress_allow;
        assert_eq!(allowed.len(), 2);
    }
}
