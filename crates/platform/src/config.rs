//! Reading configuration from the environment (SPEC §2): a missing or
//! malformed value is one line naming the variable.

use std::fmt;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Pretty,
}

/// One line naming the variable and what is wrong with it.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "configuration error: {} {}", self.variable, self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// Reads variables through a lookup (the process environment, or a map in
/// tests); empty values count as unset.
pub struct Env<F>(F);

impl<F: Fn(&str) -> Option<String>> Env<F> {
    pub fn new(lookup: F) -> Self {
        Self(lookup)
    }

    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    pub fn required(&self, name: &'static str) -> Result<String, ConfigError> {
        self.get(name).ok_or(ConfigError {
            variable: name,
            problem: "is required but not set".into(),
        })
    }

    pub fn parsed<T>(
        &self,
        name: &'static str,
        default: T,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => parse(&raw).map_err(|why| ConfigError {
                variable: name,
                problem: format!("is malformed: {why}"),
            }),
        }
    }

    pub fn bool(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        self.parsed(name, default, |v| match v.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err("expected true or false".into()),
        })
    }

    pub fn millis(&self, name: &'static str, default_ms: u64) -> Result<Duration, ConfigError> {
        self.parsed(name, Duration::from_millis(default_ms), |v| match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Duration::from_millis(n)),
            _ => Err("expected a positive whole number of milliseconds".into()),
        })
    }

    pub fn secs(&self, name: &'static str, default_secs: u64) -> Result<Duration, ConfigError> {
        self.parsed(name, Duration::from_secs(default_secs), |v| match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Duration::from_secs(n)),
            _ => Err("expected a positive whole number of seconds".into()),
        })
    }

    /// A count or limit: a whole number ≥ 1.
    pub fn count(&self, name: &'static str, default: u64) -> Result<u64, ConfigError> {
        self.parsed(name, default, |v| match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err("expected a whole number of at least 1".into()),
        })
    }

    pub fn log_format(&self) -> Result<LogFormat, ConfigError> {
        self.parsed("LOG_FORMAT", LogFormat::Json, |v| match v {
            "json" => Ok(LogFormat::Json),
            "pretty" => Ok(LogFormat::Pretty),
            _ => Err("expected json or pretty".into()),
        })
    }
}
