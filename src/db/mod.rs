//! Plain async functions over `&mut PgConnection`, one module per table.

pub mod attempt;
pub mod coalesce;
pub mod code2des;
pub mod idempotency;
pub mod outbox;
pub mod page_import;

/// Whether a database error means "unavailable, try again" (503) rather than a bug (500).
pub fn database_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => is_unavailable_sqlstate(db.code().as_deref()),
        _ => false,
    }
}

/// Connection exceptions, shutdown, and the statement timeout (57014).
fn is_unavailable_sqlstate(code: Option<&str>) -> bool {
    matches!(code, Some(c) if c.starts_with("08") || c == "57P01" || c == "57P02" || c == "57P03" || c == "57014" || c == "53300")
}
