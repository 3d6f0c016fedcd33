//! The worker's configuration (SPEC §10), declared with clap like the
//! service's: a missing or malformed value is one line naming the variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use page_import_platform::config::parse;
pub use page_import_platform::config::{ConfigError, SharedSettings};

pub const DEFAULT_CHROMIUM: &str = "/usr/lib/chromium/chromium";

#[derive(Clone, Debug, clap::Parser)]
#[command(name = "capture-worker")]
pub struct Config {
    /// PAGE_IMPORT_QUEUE_URL, ARTIFACT_BUCKET, S3_FORCE_PATH_STYLE,
    /// WEBHOOK_SECRET and LOG_FORMAT: declared once for both binaries.
    #[command(flatten)]
    pub shared: SharedSettings,
    #[arg(long, env = "CHROMIUM_PATH", default_value = DEFAULT_CHROMIUM)]
    pub chromium_path: PathBuf,
    /// The unprivileged user a worker running as root starts Chromium as.
    #[arg(long, env = "CHROMIUM_USER", default_value = "nobody", value_parser = BrowserUser::parse)]
    pub chromium_user: BrowserUser,
    /// Captures at once.
    #[arg(long, env = "WORKER_CONCURRENCY", default_value = "2", value_parser = parse::count_to::<usize, 64>)]
    pub concurrency: usize,
    #[arg(long, env = "CAPTURE_NAVIGATION_TIMEOUT_SECS", default_value = "30", value_parser = parse::secs)]
    pub navigation_timeout: Duration,
    #[arg(long, env = "CAPTURE_READY_TIMEOUT_SECS", default_value = "15", value_parser = parse::secs)]
    pub ready_timeout: Duration,
    /// Taller pages are truncated (CSS px).
    #[arg(long, env = "CAPTURE_MAX_HEIGHT_PX", default_value = "16384", value_parser = parse::count_to::<u32, 65_536>)]
    pub max_height_px: u32,
    /// Network response bytes per capture.
    #[arg(long, env = "CAPTURE_MAX_BYTES", default_value = "52428800", value_parser = parse::count::<u64>)]
    pub max_bytes: u64,
    /// Optional `/healthz` and `/metrics` listener.
    #[arg(long, env = "WORKER_HEALTH_ADDR")]
    pub health_addr: Option<SocketAddr>,
    /// The JavaScript heap of any one renderer (MiB): a page that needs
    /// more crashes its renderer and fails `page_crashed`.
    #[arg(long, env = "CAPTURE_MAX_HEAP_MIB", default_value = "1024", value_parser = parse::count_to::<u32, 65_536>)]
    pub max_heap_mib: u32,
    /// The warm browser is relaunched after this many captures (SPEC §10),
    /// between captures: whatever Chromium leaks does not pile up.
    #[arg(long, env = "BROWSER_MAX_CAPTURES", default_value = "200", value_parser = parse::count_to::<u32, 1_000_000>)]
    pub browser_max_captures: u32,
    /// How long one receive waits for a message (SQS `WaitTimeSeconds`,
    /// at most 20). A SIGTERM lets the receive under way run out and hands
    /// back what it brings, so this is also the longest an idle worker
    /// takes to stop.
    #[arg(long, env = "WORKER_RECEIVE_WAIT_SECS", default_value = "20", value_parser = parse::count_to::<u8, 20>)]
    pub receive_wait_secs: u8,
    #[arg(long, env = "WORKER_SHUTDOWN_GRACE_SECS", default_value = "60", value_parser = parse::secs)]
    pub shutdown_grace: Duration,
    /// Development and tests only: exact `ip:port` pairs let through although
    /// not public.
    #[arg(long, env = "EGRESS_ALLOW", default_value = "", value_parser = parse::socket_addrs)]
    pub egress_allow: ::std::vec::Vec<SocketAddr>,
}

/// The user Chromium runs as when the worker is root (SPEC §10 Isolation):
/// it must exist and must not be root, because Chromium cannot sandbox as
/// root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrowserUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl BrowserUser {
    pub fn parse(name: &str) -> Result<Self, String> {
        let user = nix::unistd::User::from_name(name)
            .ok()
            .flatten()
            .ok_or("no such user on this system")?;
        if user.uid.is_root() {
            return Err("Chromium cannot run sandboxed as root: name an unprivileged user".into());
        }
        Ok(Self {
            name: user.name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
        })
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        page_import_platform::config::from_env()
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
        page_import_platform::config::from_lookup::<Config>(|k| env.get(k).cloned()).map_err(|e| e.to_string())
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
        assert_eq!(c.receive_wait_secs, 20);
        assert_eq!(c.chromium_path, PathBuf::from(DEFAULT_CHROMIUM));
        assert!(c.egress_allow.is_empty() && c.health_addr.is_none());
        assert_eq!(c.chromium_user.name, "nobody");
        assert_ne!(c.chromium_user.uid, 0);
    }

    #[test]
    fn chromium_user_must_exist_and_must_not_be_root() {
        assert_eq!(
            config(&[("CHROMIUM_USER", "no-such-user-here")]).err().unwrap(),
            "configuration error: CHROMIUM_USER is malformed: no such user on this system"
        );
        assert_eq!(
            config(&[("CHROMIUM_USER", "root")]).err().unwrap(),
            "configuration error: CHROMIUM_USER is malformed: Chromium cannot run sandboxed as root: name an unprivileged user"
        );
    }

    #[test]
    fn bad_values_are_one_line_naming_the_variable() {
        assert_eq!(
            config(&[("WORKER_CONCURRENCY", "0")]).err().unwrap(),
            "configuration error: WORKER_CONCURRENCY is malformed: expected a whole number from 1 to 64"
        );
        assert!(config(&[("EGRESS_ALLOW", "127.0.0.1")])
            .err()
            .unwrap()
            .starts_with("configuration error: EGRESS_ALLOW"));
        assert_eq!(
            config(&[("ARTIFACT_BUCKET", "")]).err().unwrap(),
            "configuration error: ARTIFACT_BUCKET is required but not set"
        );
        assert_eq!(
            config(&[("WORKER_CONCURRENCY", "65")]).err().unwrap(),
            "configuration error: WORKER_CONCURRENCY is malformed: expected a whole number from 1 to 64"
        );
        assert_eq!(
            config(&[("WORKER_RECEIVE_WAIT_SECS", "21")]).err().unwrap(),
            "configuration error: WORKER_RECEIVE_WAIT_SECS is malformed: expected a whole number from 1 to 20"
        );
        let allowed = config(&[("EGRESS_ALLOW", "127.0.0.5:80, 127.0.0.6:8080")])
            .unwrap()
            .egress_allow;
        assert_eq!(allowed.len(), 2);
    }

    /// The settings shared with the service are validated as the service
    /// validates them (`page_import_platform::config::SharedSettings`).
    #[test]
    fn the_settings_shared_with_the_service_are_validated_alike() {
        assert_eq!(
            config(&[("PAGE_IMPORT_QUEUE_URL", "ftp://127.0.0.1/123/q")])
                .err()
                .unwrap(),
            "configuration error: PAGE_IMPORT_QUEUE_URL is malformed: unsupported scheme 'ftp'"
        );
        assert!(config(&[("WEBHOOK_SECRET", "not-a-secret")])
            .err()
            .unwrap()
            .starts_with("configuration error: WEBHOOK_SECRET is malformed"));
        let c = config(&[
            ("PAGE_IMPORT_QUEUE_URL", "http://127.0.0.1:5000/123/q/"),
            ("S3_FORCE_PATH_STYLE", "yes"),
        ])
        .unwrap();
        assert_eq!(c.shared.page_import_queue_url, "http://127.0.0.1:5000/123/q");
        assert!(c.shared.s3_force_path_style);
    }
}
