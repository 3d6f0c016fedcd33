//! One integration-test binary: the real service against a real PostgreSQL
//! and a real AWS-API emulator (see `scripts/test`).

mod helpers;

mod alerts;
mod attempts;
mod auth;
mod browser;
mod capture;
mod coalesce;
mod code2des;
mod consent;
mod consent_corpus;
mod cors;
mod create;
mod dev_stack;
mod device;
mod dispatch;
mod dns_check;
mod erasure;
mod events;
mod fidelity;
mod hostile;
mod idempotency;
mod isolation;
mod landing;
mod list;
mod metrics;
mod ops;
mod outbox;
mod read_delete;
mod reader;
mod reader_settings;
mod resilience;
mod same_reader;
mod schema;
mod set_capture;
mod sets;
mod states;
mod states_corpus;
mod stillness;
mod tenancy;
mod traces;
mod webhooks;
