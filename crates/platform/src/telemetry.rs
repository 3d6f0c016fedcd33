//! `tracing` set-up: JSON (default) or pretty, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).try_init(),
        LogFormat::Pretty => builder.try_init(),
    };
    // Tests may initialise more than once; the first one wins.
    let _ = result;
}
