//! Plain async functions over `&mut PgConnection`, one module per table.

pub mod attempt;
pub mod coalesce;
pub mod code2des;
pub mod idempotency;
pub mod outbox;
pub mod page_import;
