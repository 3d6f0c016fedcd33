//! What the service and the capture worker both run on: AWS SDK clients,
//! configuration from the environment, log set-up. (What they must agree on
//! is in `page-import-contract`.)

pub mod aws;
pub mod config;
pub mod telemetry;
