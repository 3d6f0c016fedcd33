//! Holding a request inside its transaction: a test locks a table the
//! request writes to, sees the request's statement wait for the lock, and
//! releases it when it has made its point.

use std::time::Duration;

use sqlx::{Postgres, Transaction};

use super::{eventually, TestApp};

/// A transaction of the test's own holding a table in `SHARE ROW EXCLUSIVE`
/// mode: reads of the table go through, inserts, updates and deletes wait
/// until [`release`](Self::release). Dropped instead, it is rolled back when
/// its connection goes back to the pool.
pub struct TableLock {
    tx: Transaction<'static, Postgres>,
}

impl TableLock {
    pub async fn release(self) {
        self.tx.rollback().await.unwrap();
    }
}

impl TestApp {
    /// Locks `table` against writes until the returned guard is released.
    pub async fn lock_table(&self, table: &str) -> TableLock {
        let mut tx = self.pool.begin().await.unwrap();
        sqlx::query(&format!("lock table {table} in share row exclusive mode"))
            .execute(&mut *tx)
            .await
            .unwrap();
        TableLock { tx }
    }

    /// Whether, within 5 s, a statement containing `statement` (a fragment
    /// of its SQL) is seen waiting for a lock in the test's database.
    pub async fn waits_for_lock(&self, statement: &str) -> bool {
        eventually(Duration::from_secs(5), || async {
            let waiting: i64 = sqlx::query_scalar(
                "select count(*) from pg_stat_activity
                 where datname = current_database() and wait_event_type = 'Lock'
                   and query ilike '%' || $1 || '%'",
            )
            .bind(statement)
            .fetch_one(&self.pool)
            .await
            .unwrap();
            waiting > 0
        })
        .await
    }
}
