//! Configuration from the environment (SPEC §2), declared with clap: each
//! setting is one `#[arg(long, env = "NAME")]` field with its default and its
//! parser. [`from_env`] reads the declaration and renders a missing or
//! malformed value as one line naming the variable (clap's own errors span
//! lines and name flags).

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::ArgAction;
use page_import_contract::webhook::WebhookSecrets;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Json,
    Pretty,
}

/// The settings the service and its capture worker share (SPEC §2, §10),
/// declared once: both binaries `#[command(flatten)]` this into their
/// `Config`, so they read and validate each variable alike.
#[derive(Clone, Debug, clap::Args)]
pub struct SharedSettings {
    #[arg(long, env = "PAGE_IMPORT_QUEUE_URL", value_parser = parse::http_url)]
    pub page_import_queue_url: String,
    #[arg(long, env = "ARTIFACT_BUCKET")]
    pub artifact_bucket: String,
    #[arg(long, env = "S3_FORCE_PATH_STYLE", default_value = "false", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub s3_force_path_style: bool,
    /// One or more comma-separated `whsec_…` secrets; the first signs.
    #[arg(long, env = "WEBHOOK_SECRET", value_parser = WebhookSecrets::parse)]
    pub webhook_secrets: WebhookSecrets,
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "json")]
    pub log_format: LogFormat,
}

/// One line naming the variable and what is wrong with it. It never holds the
/// offending value, so a malformed secret is not echoed.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: String,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "configuration error: {} {}", self.variable, self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// Reads `T` from the process environment.
pub fn from_env<T: clap::Parser>() -> Result<T, ConfigError> {
    from_lookup(|name| std::env::var(name).ok())
}

/// Reads `T` through a lookup (the process environment, or a map in tests).
/// Values are trimmed, and an empty value counts as unset. Every variable is
/// looked up through `lookup` alone: clap's own reading of the process
/// environment is switched off, so a test's map is the whole configuration.
pub fn from_lookup<T: clap::Parser>(lookup: impl Fn(&str) -> Option<String>) -> Result<T, ConfigError> {
    let mut declared = T::command();
    // Built, so that its arguments render as they do in clap's errors.
    declared.build();
    let mut argv = vec![OsString::from(declared.get_name())];
    for arg in declared.get_arguments() {
        let (Some(name), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let value = lookup(&name.to_string_lossy()).map(|v| v.trim().to_owned());
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            // `--name=value` keeps a value that starts with '-' a value.
            argv.push(format!("--{long}={value}").into());
        }
    }
    let command = declared.clone().mut_args(|arg| arg.env(None));
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|err| one_line(&declared, &err))?;
    T::from_arg_matches(&matches).map_err(|err| one_line(&declared, &err))
}

/// The variable a clap error is about, and the problem in our words.
fn one_line(declared: &clap::Command, err: &clap::Error) -> ConfigError {
    let rendered_arg = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => Some(arg.as_str()),
        Some(ContextValue::Strings(args)) => args.first().map(String::as_str),
        _ => None,
    };
    let variable = rendered_arg
        .and_then(|rendered| declared.get_arguments().find(|arg| arg.to_string() == rendered))
        .and_then(|arg| arg.get_env())
        .map_or_else(
            || "configuration".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
    let problem = match err.kind() {
        ErrorKind::MissingRequiredArgument => "is required but not set".to_owned(),
        ErrorKind::ValueValidation => match std::error::Error::source(err) {
            Some(why) => format!("is malformed: {why}"),
            None => "is malformed".to_owned(),
        },
        ErrorKind::InvalidValue => match err.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => format!("is malformed: expected one of {}", valid.join(", ")),
            _ => "is malformed".to_owned(),
        },
        // Anything else is a flaw in a declaration, not in the environment.
        _ => format!("cannot be read: {}", err.kind()),
    };
    ConfigError { variable, problem }
}

/// Value parsers shared by the service's and the worker's declarations.
pub mod parse {
    use super::*;

    /// A positive whole number of milliseconds.
    pub fn millis(v: &str) -> Result<Duration, String> {
        positive(v)
            .map(Duration::from_millis)
            .map_err(|_| "expected a positive whole number of milliseconds".into())
    }

    /// A positive whole number of seconds.
    pub fn secs(v: &str) -> Result<Duration, String> {
        positive(v)
            .map(Duration::from_secs)
            .map_err(|_| "expected a positive whole number of seconds".into())
    }

    /// A whole number of seconds, 0 included (0 = at once).
    pub fn secs_or_zero(v: &str) -> Result<Duration, String> {
        v.parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| "expected a whole number of seconds".into())
    }

    /// A count or limit: a whole number ≥ 1 that fits `T`.
    pub fn count<T: TryFrom<u64>>(v: &str) -> Result<T, String> {
        positive(v)
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| "expected a whole number of at least 1".into())
    }

    /// A count from 1 to `MAX`.
    pub fn count_to<T: TryFrom<u64>, const MAX: u64>(v: &str) -> Result<T, String> {
        match positive(v) {
            Ok(n) if n <= MAX => T::try_from(n).map_err(|_| format!("expected a whole number from 1 to {MAX}")),
            _ => Err(format!("expected a whole number from 1 to {MAX}")),
        }
    }

    fn positive(v: &str) -> Result<u64, ()> {
        match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(()),
        }
    }

    /// An `http` or `https` URL, without a trailing `/`; an empty default
    /// stays empty.
    pub fn http_url(v: &str) -> Result<String, String> {
        if v.is_empty() {
            return Ok(String::new());
        }
        let url = url::Url::parse(v).map_err(|e| e.to_string())?;
        match url.scheme() {
            "http" | "https" => Ok(v.trim_end_matches('/').to_owned()),
            other => Err(format!("unsupported scheme '{other}'")),
        }
    }

    /// Comma-separated `ip:port` pairs; blank items are skipped.
    pub fn socket_addrs(v: &str) -> Result<Vec<SocketAddr>, String> {
        list(v, |item| {
            item.parse::<SocketAddr>().map_err(|e| format!("'{item}': {e}"))
        })
    }

    /// Comma-separated items, trimmed, blank ones skipped.
    pub fn list<T>(v: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(item)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Debug, clap::Parser)]
    struct Sample {
        #[arg(long, env = "SAMPLE_REQUIRED")]
        required: String,
        #[arg(long, env = "SAMPLE_MILLIS", default_value = "250", value_parser = parse::millis)]
        millis: Duration,
        #[arg(long, env = "SAMPLE_COUNT", default_value = "3", value_parser = parse::count::<u32>)]
        count: u32,
        #[arg(long, env = "SAMPLE_FLAG", default_value = "false", action = clap::ArgAction::Set,
              value_parser = clap::builder::BoolishValueParser::new())]
        flag: bool,
        #[arg(long, env = "SAMPLE_FORMAT", value_enum, default_value = "json")]
        format: LogFormat,
        #[arg(long, env = "SAMPLE_ADDRS", default_value = "", value_parser = parse::socket_addrs)]
        addrs: ::std::vec::Vec<SocketAddr>,
    }

    fn read(pairs: &[(&str, &str)]) -> Result<Sample, ConfigError> {
        let env: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        from_lookup(|k| env.get(k).cloned())
    }

    #[test]
    fn defaults_and_values_come_through() {
        let s = read(&[("SAMPLE_REQUIRED", " x ")]).unwrap();
        assert_eq!(s.required, "x");
        assert_eq!(
            (s.millis, s.count, s.flag, s.format),
            (Duration::from_millis(250), 3, false, LogFormat::Json)
        );
        assert!(s.addrs.is_empty());
        let s = read(&[
            ("SAMPLE_REQUIRED", "x"),
            ("SAMPLE_FLAG", "yes"),
            ("SAMPLE_FORMAT", "pretty"),
            ("SAMPLE_ADDRS", "127.0.0.1:1, ,[::1]:2"),
        ])
        .unwrap();
        assert!(s.flag);
        assert_eq!(s.format, LogFormat::Pretty);
        assert_eq!(s.addrs.len(), 2);
    }

    #[test]
    fn errors_are_one_line_naming_the_variable() {
        for (pairs, expected) in [
            (vec![], "configuration error: SAMPLE_REQUIRED is required but not set"),
            (
                vec![("SAMPLE_REQUIRED", "  ")],
                "configuration error: SAMPLE_REQUIRED is required but not set",
            ),
            (
                vec![("SAMPLE_REQUIRED", "x"), ("SAMPLE_MILLIS", "-5")],
                "configuration error: SAMPLE_MILLIS is malformed: expected a positive whole number of milliseconds",
            ),
            (
                vec![("SAMPLE_REQUIRED", "x"), ("SAMPLE_COUNT", "0")],
                "configuration error: SAMPLE_COUNT is malformed: expected a whole number of at least 1",
            ),
            (
                vec![("SAMPLE_REQUIRED", "x"), ("SAMPLE_FORMAT", "xml")],
                "configuration error: SAMPLE_FORMAT is malformed: expected one of json, pretty",
            ),
            (
                vec![("SAMPLE_REQUIRED", "x"), ("SAMPLE_ADDRS", "1.1.1.1")],
                "configuration error: SAMPLE_ADDRS is malformed: '1.1.1.1': invalid socket address syntax",
            ),
        ] {
            assert_eq!(read(&pairs).unwrap_err().to_string(), expected);
        }
        let flag = read(&[("SAMPLE_REQUIRED", "x"), ("SAMPLE_FLAG", "maybe")]).unwrap_err();
        assert_eq!(flag.variable, "SAMPLE_FLAG");
        assert!(!flag.to_string().contains('\n'), "{flag}");
    }

    #[test]
    fn only_the_lookup_is_read() {
        // PATH is set in every test process; a declaration naming it must
        // still see the lookup's answer (nothing), not the process's.
        #[derive(Debug, clap::Parser)]
        struct ReadsPath {
            #[arg(long, env = "PATH")]
            path: Option<String>,
        }
        let parsed: ReadsPath = from_lookup(|_| None).unwrap();
        assert_eq!(parsed.path, None);
    }
}
