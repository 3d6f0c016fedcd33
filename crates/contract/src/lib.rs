//! The contract between the Page Import service and a capture worker
//! (SPEC §7 and §10), written once so both sides build from the same source:
//!
//! - [`job`]: the SQS capture message and the artifact prefix of an attempt;
//! - [`manifest`]: the identity fields `capture.json` must start with;
//! - [`capture`]: the whole of `capture.json` (SPEC §10, §11) and its JSON Schema;
//! - [`styles`]: the computed style properties a capture records;
//! - [`callback`]: the signed webhook's body and its client-safe message rule;
//! - [`webhook`]: Standard Webhooks signing and verification;
//! - [`ip`] and [`source_url`]: which addresses and hosts are public.

pub mod callback;
pub mod capture;
pub mod ip;
pub mod job;
pub mod manifest;
pub mod source_url;
pub mod styles;
pub mod webhook;

/// The route the worker calls back on, below `PUBLIC_BASE_URL`.
pub const CALLBACK_PATH: &str = "/webhooks/page-imports";
