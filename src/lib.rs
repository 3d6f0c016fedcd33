//! Page Import service: records capture jobs for public web pages, queues them
//! for a capture worker, and accepts the worker's signed callbacks.

pub mod artifacts;
pub mod auth;
pub mod background;
pub mod changes;
pub mod coalesce;
pub mod config;
pub mod db;
pub mod dns;
pub mod domain;
pub mod error;
pub mod http;
pub mod lease;
pub mod metrics;
pub mod objects;
pub mod openapi;
pub mod queue;
pub mod request_span;
pub mod resource;
pub mod router;
pub mod routes;
pub mod server;
pub mod service;
pub mod set_resource;
pub mod state;
pub mod supervisor;
pub mod telemetry;

/// Standard Webhooks signing and verification, from the shared contract.
pub use page_import_contract::webhook;
/// AWS SDK clients, from the shared platform crate.
pub use page_import_platform::aws;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();
