//! Plain async functions over `&mut PgConnection`, one module per table.

pub mod attempt_history;
pub mod capture;
pub mod code2des;
pub mod erasure;
pub mod idempotency;
pub mod label;
pub mod outbox;
pub mod page_import;
pub mod pool;
pub mod sets;

/// `sqlx::query!` over a statement given in literal pieces, `[a, b, …]`,
/// joined as sqlx joins literals (`a + b + …`), so still checked at compile
/// time: for a statement that splices in a shared piece
/// (`capture::admitting!`).
macro_rules! query_pieces {
    ([$first:literal $(, $more:literal)*] $($args:tt)*) => {
        sqlx::query!($first $(+ $more)* $($args)*)
    };
}
pub(crate) use query_pieces;

/// Planner settings of the connections whose statements keep one generic
/// plan for their life: the coalesced creates and reads by id. Planning per
/// batch cost 1.6× the reads' throughput at 8 connections and half the
/// creates', so those plans are made once per connection, with the
/// statistics of then: a plan made while `page_import` or `project` was
/// nearly empty kept scanning it whole as it grew (29 ms per read at 100 000
/// rows). So those statements leave the planner no choice that depends on
/// statistics: each row is looked up by its primary key in a lateral
/// subquery parameterized by the request (`offset 0` keeps it from being
/// flattened into a join), and sequential scans are off. What is left is a
/// primary-key lookup per request (`bench/plans.sh`, C2 and C3).
pub const PINNED_PLAN: &[(&str, &str)] = &[("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off")];

/// [`PINNED_PLAN`] for the caller's transaction, in one round trip: a keyed
/// create runs the create statement on an ordinary connection, inside its
/// own transaction.
pub async fn pin_plan(tx: &mut sqlx::PgConnection) -> sqlx::Result<()> {
    let (names, values): (Vec<&str>, Vec<&str>) = PINNED_PLAN.iter().copied().unzip();
    sqlx::query("select set_config(name, value, true) from unnest($1::text[], $2::text[]) as s(name, value)")
        .bind(names)
        .bind(values)
        .execute(tx)
        .await?;
    Ok(())
}

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
