//! `Idempotency-Key` records: claimed before the work, completed in the same
//! transaction as the work, released if the work fails.

use sqlx::PgConnection;

/// How long a key is remembered.
pub const KEY_TTL_HOURS: i32 = 24;
/// An in-flight claim older than this is taken to be from a request that died.
pub const ABANDONED_AFTER_SECS: i32 = 60;

#[derive(Debug, PartialEq)]
pub enum Claim {
    /// This request owns the key and must do the work.
    Owned,
    /// The first request finished; answer with what it answered.
    Replay {
        status: i16,
        location: Option<String>,
        body: serde_json::Value,
    },
    /// The key was used with a different request body.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// A caller's key on one route: keys of different callers or routes never meet.
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    pub subject: String,
    /// `POST /page-imports`, or `retry:{id}` for a retry (scoped to the import).
    pub route: std::borrow::Cow<'static, str>,
    pub key: String,
}

pub async fn claim(conn: &mut PgConnection, key: &IdempotencyKey, request_hash: &str) -> sqlx::Result<Claim> {
    // Insert, or take over a key that expired or whose owner died.
    let owned = sqlx::query_scalar!(
        r#"
        insert into idempotency_key (subject, route, key, request_hash)
        values ($1, $2, $3, $4)
        on conflict (subject, route, key) do update
            set request_hash = excluded.request_hash,
                created_at = now(),
                response_status = null,
                response_location = null,
                response_body = null
            where idempotency_key.created_at < now() - make_interval(hours => $5)
               or (idempotency_key.response_status is null
                   and idempotency_key.created_at < now() - make_interval(secs => $6))
        returning true as "owned!"
        "#,
        key.subject,
        key.route.as_ref(),
        key.key,
        request_hash,
        KEY_TTL_HOURS,
        f64::from(ABANDONED_AFTER_SECS),
    )
    .fetch_optional(&mut *conn)
    .await?;
    if owned.is_some() {
        return Ok(Claim::Owned);
    }
    let existing = sqlx::query!(
        r#"
        select request_hash, response_status, response_location, response_body
        from idempotency_key
        where subject = $1 and route = $2 and key = $3
        "#,
        key.subject,
        key.route.as_ref(),
        key.key,
    )
    .fetch_optional(conn)
    .await?;
    Ok(match existing {
        // Released between our two statements: the first request failed; the client may retry.
        None => Claim::InFlight,
        Some(row) if row.request_hash != request_hash => Claim::Mismatch,
        Some(row) => match (row.response_status, row.response_body) {
            (Some(status), Some(body)) => Claim::Replay {
                status,
                location: row.response_location,
                body,
            },
            _ => Claim::InFlight,
        },
    })
}

/// The one status a key records: every keyed route answers an accepted
/// request with 202 and the resource (SPEC §6).
const ACCEPTED: i16 = 202;

/// Records the key's response, a 202 with `location` and `body`, in the
/// caller's transaction: it commits with the work it answers for.
pub async fn record_accepted(
    conn: &mut PgConnection,
    key: &IdempotencyKey,
    location: &str,
    body: &impl serde::Serialize,
) -> sqlx::Result<()> {
    let body = serde_json::to_value(body).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query!(
        r#"
        update idempotency_key
        set response_status = $4, response_location = $5, response_body = $6
        where subject = $1 and route = $2 and key = $3
        "#,
        key.subject,
        key.route.as_ref(),
        key.key,
        ACCEPTED,
        location,
        body,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets an in-flight claim whose work failed, so the client can retry.
pub async fn release(conn: &mut PgConnection, key: &IdempotencyKey) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        delete from idempotency_key
        where subject = $1 and route = $2 and key = $3 and response_status is null
        "#,
        key.subject,
        key.route.as_ref(),
        key.key,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Drops keys past their lifetime; returns how many.
pub async fn delete_expired(conn: &mut PgConnection) -> sqlx::Result<u64> {
    let result = sqlx::query!(
        "delete from idempotency_key where created_at < now() - make_interval(hours => $1)",
        KEY_TTL_HOURS,
    )
    .execute(conn)
    .await?;
    Ok(result.rows_affected())
}
