//! Request coalescing for the hot single-row statements (a create, a read by
//! id): while `concurrency` statements are in flight, the requests that arrive
//! queue here and the next free slot runs all of them (up to `max_batch`) as
//! one statement. Under light load a request runs alone and at once; under
//! load the database sees fewer, larger statements — one round trip, one
//! executor start-up and, for writes, one WAL flush for the whole batch
//! (group commit), instead of one each. Every request still gets its own
//! answer, and a create is answered only after its own row is committed.
//! The engine knows no table: its two uses, the create and the read by id,
//! are in `src/db/page_import/coalesced.rs`.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::db::database_unavailable;

/// Why a coalesced request got no row: answered by the API as 503
/// `overloaded`, 503 `request_timeout`, 503 `dependency_unavailable` or 500
/// (`From<CoalesceError> for CoalesceError`, in `error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum CoalesceError {
    /// The queue in front of the batches is full.
    #[error("the coalescing queue is full")]
    Overloaded,
    /// No batch took the request before its deadline; it never ran.
    #[error("not batched before its deadline")]
    Timeout,
    /// The database is unavailable, or the batch ran past its timeout.
    #[error("the database is unavailable")]
    Unavailable,
    /// Any other failure (a database error, a batch that panicked).
    #[error("{0}")]
    Failed(String),
}

impl From<sqlx::Error> for CoalesceError {
    fn from(err: sqlx::Error) -> Self {
        if database_unavailable(&err) {
            tracing::warn!(error = %err, "database unavailable");
            Self::Unavailable
        } else {
            Self::Failed(err.to_string())
        }
    }
}

/// A queued request is either still waiting, taken into a batch (it will run
/// and its caller waits for the answer), or withdrawn (it never runs). The
/// dispatcher and the caller race for it with one compare-and-swap, so a
/// request its caller gave up on never commits.
const QUEUED: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;

struct Pending<Req, Resp> {
    request: Req,
    reply: oneshot::Sender<Result<Resp, CoalesceError>>,
    state: Arc<AtomicU8>,
    /// Not batched after this: the batch could not finish before its caller's deadline.
    start_by: Instant,
}

/// How long requests may wait and batches may run (`Limits::for_request_timeout`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests waiting for a slot, beyond which a call is refused at once
    /// (503 `overloaded`, `Retry-After: 1`).
    pub queue: usize,
    /// The client-side bound of one batch. The batch connections'
    /// `statement_timeout` is a second shorter, so the database gives up
    /// (and commits nothing) before the client does.
    pub batch_timeout: Duration,
}

impl Limits {
    /// A batch may take up to half the request timeout (at most 6 s): a
    /// request is batched only while its batch can still finish before its
    /// own deadline.
    pub fn for_request_timeout(queue: usize, request_timeout: Duration) -> Self {
        Self {
            queue: queue.max(1),
            batch_timeout: (request_timeout / 2).min(Duration::from_secs(6)),
        }
    }

    /// The batch connections' statement timeout.
    pub fn statement_timeout(&self) -> Duration {
        self.batch_timeout
            .saturating_sub(Duration::from_secs(1))
            .max(self.batch_timeout / 2)
    }
}

/// Cheap to clone; the dispatcher stops when the last clone is dropped.
pub struct Coalescer<Req, Resp> {
    queue: mpsc::Sender<Pending<Req, Resp>>,
    batch_timeout: Duration,
    op: &'static str,
}

impl<Req, Resp> Clone for Coalescer<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            batch_timeout: self.batch_timeout,
            op: self.op,
        }
    }
}

impl<Req, Resp> Coalescer<Req, Resp>
where
    Req: Send + 'static,
    Resp: Send + 'static,
{
    /// `run` executes one batch and answers each request in order: it must
    /// return exactly one result per request.
    pub fn new<F, Fut>(op: &'static str, concurrency: usize, max_batch: usize, limits: Limits, run: F) -> Self
    where
        F: Fn(Vec<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Result<Resp, CoalesceError>>> + Send + 'static,
    {
        let (queue, mut incoming) = mpsc::channel::<Pending<Req, Resp>>(limits.queue);
        let slots = Arc::new(Semaphore::new(concurrency.max(1)));
        let single = concurrency <= 1;
        let run = Arc::new(run);
        let batch_timeout = limits.batch_timeout;
        tokio::spawn(async move {
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let Some(first) = incoming.recv().await else {
                    return;
                };
                let batch = gather(first, &mut incoming, max_batch, op);
                if batch.is_empty() {
                    continue;
                }
                metrics::histogram!("db_batch_size", "op" => op).record(batch.len() as f64);
                let run = run.clone();
                let work = async move {
                    answer(batch, |requests| run(requests), batch_timeout, op).await;
                    drop(slot);
                };
                if single {
                    // One slot: nothing else could run meanwhile, so run the
                    // batch here and save a task and a wake-up per batch (a
                    // panic in it is caught; its callers see their reply dropped).
                    let _ = std::panic::AssertUnwindSafe(work).catch_unwind().await;
                } else {
                    tokio::spawn(work);
                }
            }
        });
        Self {
            queue,
            batch_timeout,
            op,
        }
    }

    /// Queues one request and waits for its own result, which must be known
    /// by `answer_by` (the request's deadline). Refused at once with 503
    /// `overloaded` when the queue is full; withdrawn with 503 when no batch
    /// took it in time, in which case it never runs.
    pub async fn call(&self, request: Req, answer_by: Instant) -> Result<Resp, CoalesceError> {
        let start_by = answer_by.checked_sub(self.batch_timeout).unwrap_or(answer_by);
        if Instant::now() >= start_by {
            return Err(CoalesceError::Timeout);
        }
        let state = Arc::new(AtomicU8::new(QUEUED));
        let (reply, mut answer) = oneshot::channel();
        let pending = Pending {
            request,
            reply,
            state: state.clone(),
            start_by,
        };
        match self.queue.try_send(pending) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                metrics::counter!("db_coalesce_refused_total", "op" => self.op).increment(1);
                return Err(CoalesceError::Overloaded);
            }
            Err(TrySendError::Closed(_)) => return Err(CoalesceError::Unavailable),
        }
        tokio::select! {
            answered = &mut answer => return flatten(answered),
            () = tokio::time::sleep_until(start_by.into()) => {}
        }
        if state
            .compare_exchange(QUEUED, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            metrics::counter!("db_coalesce_withdrawn_total", "op" => self.op).increment(1);
            return Err(CoalesceError::Timeout);
        }
        // Taken into a batch already: its answer comes within the batch timeout.
        flatten(answer.await)
    }
}

/// The next batch: `first` and whatever else is queued, up to `max_batch`,
/// without the requests their callers withdrew.
fn gather<Req, Resp>(
    first: Pending<Req, Resp>,
    incoming: &mut mpsc::Receiver<Pending<Req, Resp>>,
    max_batch: usize,
    op: &'static str,
) -> Vec<Pending<Req, Resp>> {
    let mut batch = Vec::with_capacity(8);
    let mut next = Some(first);
    while let Some(p) = next {
        if take(&p) {
            batch.push(p);
        } else {
            metrics::counter!("db_coalesce_withdrawn_total", "op" => op).increment(1);
        }
        next = if batch.len() < max_batch {
            incoming.try_recv().ok()
        } else {
            None
        };
    }
    batch
}

/// Runs one batch within `batch_timeout` and answers each request with its
/// own result, in order.
async fn answer<Req, Resp, Fut>(
    batch: Vec<Pending<Req, Resp>>,
    run: impl FnOnce(Vec<Req>) -> Fut,
    batch_timeout: Duration,
    op: &'static str,
) where
    Fut: Future<Output = Vec<Result<Resp, CoalesceError>>>,
{
    let (requests, replies): (Vec<Req>, Vec<_>) = batch.into_iter().map(|p| (p.request, p.reply)).unzip();
    let expected = replies.len();
    let results = match tokio::time::timeout(batch_timeout, run(requests)).await {
        Ok(results) => results,
        Err(_) => {
            // The statement timeout is shorter: the database
            // has given up on this batch, or never got it.
            tracing::warn!(op, size = expected, "a coalesced batch timed out");
            (0..expected).map(|_| Err(CoalesceError::Unavailable)).collect()
        }
    };
    let mut results = results.into_iter();
    for reply in replies {
        let result = results.next().unwrap_or_else(|| {
            Err(CoalesceError::Failed(format!(
                "{op}: a batch of {expected} returned fewer results"
            )))
        });
        let _ = reply.send(result);
    }
}

/// Whether the dispatcher may batch this request: its caller is still there,
/// its deadline leaves room for a batch, and the caller has not withdrawn it.
fn take<Req, Resp>(p: &Pending<Req, Resp>) -> bool {
    let wanted = !p.reply.is_closed() && Instant::now() < p.start_by;
    let next = if wanted { TAKEN } else { WITHDRAWN };
    p.state
        .compare_exchange(QUEUED, next, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
        && wanted
}

/// Statements wider than this gain little and hold their connection longer.
pub const MAX_BATCH: usize = 64;

fn flatten<Resp>(
    answered: Result<Result<Resp, CoalesceError>, oneshot::error::RecvError>,
) -> Result<Resp, CoalesceError> {
    answered.map_err(|_| CoalesceError::Failed("a coalesced statement was dropped".into()))?
}

/// One batch-wide database error, answered to each of `n` requests: 503 for
/// an unavailable database, 500 otherwise (the same mapping as a single
/// statement's error).
pub fn fan_out<T>(err: sqlx::Error, n: usize) -> Vec<Result<T, CoalesceError>> {
    let first = CoalesceError::from(err);
    let again = |e: &CoalesceError| match e {
        CoalesceError::Unavailable => CoalesceError::Unavailable,
        other => CoalesceError::Failed(other.to_string()),
    };
    let mut out: Vec<Result<T, CoalesceError>> = (1..n).map(|_| Err(again(&first))).collect();
    out.push(Err(first));
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::sync::Notify;

    use super::*;

    const LIMITS: Limits = Limits {
        queue: 16,
        batch_timeout: Duration::from_secs(5),
    };

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// A coalescer over numbers whose batch `[0]` waits for `gate`; records every batch.
    fn gated(gate: Arc<Notify>, seen: Arc<Mutex<Vec<Vec<u32>>>>, short: bool) -> Coalescer<u32, u32> {
        Coalescer::new("test", 1, 64, LIMITS, move |batch: Vec<u32>| {
            seen.lock().unwrap().push(batch.clone());
            let gate = gate.clone();
            async move {
                if batch == [0] {
                    gate.notified().await;
                }
                let take = if short { batch.len() - 1 } else { batch.len() };
                batch.into_iter().take(take).map(|n| Ok(n * 10)).collect()
            }
        })
    }

    fn spawn_call(c: &Coalescer<u32, u32>, n: u32) -> tokio::task::JoinHandle<Result<u32, CoalesceError>> {
        let c = c.clone();
        tokio::spawn(async move { c.call(n, later()).await })
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn requests_queued_behind_a_busy_slot_run_as_one_batch_each_answered_in_order() {
        let (gate, seen) = (Arc::new(Notify::new()), Arc::new(Mutex::new(Vec::new())));
        let c = gated(gate.clone(), seen.clone(), false);
        let first = spawn_call(&c, 0);
        settle().await;
        let rest: Vec<_> = (1..=5u32).map(|n| spawn_call(&c, n)).collect();
        settle().await;
        assert_eq!(
            *seen.lock().unwrap(),
            vec![vec![0]],
            "the slot is busy, so nothing else has run yet"
        );
        gate.notify_one();
        assert_eq!(first.await.unwrap().unwrap(), 0);
        for (n, handle) in (1..=5u32).zip(rest) {
            assert_eq!(handle.await.unwrap().unwrap(), n * 10);
        }
        assert_eq!(*seen.lock().unwrap(), vec![vec![0], vec![1, 2, 3, 4, 5]]);
    }

    #[tokio::test]
    async fn a_caller_that_has_gone_is_not_run() {
        let (gate, seen) = (Arc::new(Notify::new()), Arc::new(Mutex::new(Vec::new())));
        let c = gated(gate.clone(), seen.clone(), false);
        let first = spawn_call(&c, 0);
        settle().await;
        let gone = spawn_call(&c, 7);
        let kept = spawn_call(&c, 8);
        settle().await;
        gone.abort();
        settle().await;
        gate.notify_one();
        first.await.unwrap().unwrap();
        assert_eq!(kept.await.unwrap().unwrap(), 80);
        assert_eq!(*seen.lock().unwrap(), vec![vec![0], vec![8]]);
    }

    #[tokio::test]
    async fn a_panicking_batch_fails_its_callers_and_the_next_batch_still_runs() {
        let c: Coalescer<u32, u32> = Coalescer::new("test", 1, 64, LIMITS, |batch: Vec<u32>| async move {
            assert!(batch != [9], "boom");
            batch.into_iter().map(|n| Ok(n + 1)).collect()
        });
        let err = c.call(9, later()).await.unwrap_err();
        assert!(matches!(err, CoalesceError::Failed(_)), "{err:?}");
        assert_eq!(c.call(1, later()).await.unwrap(), 2);
    }

    #[tokio::test]
    async fn a_batch_that_answers_short_fails_the_unanswered_instead_of_hanging() {
        let (gate, seen) = (Arc::new(Notify::new()), Arc::new(Mutex::new(Vec::new())));
        let c = gated(gate, seen, true);
        let err = c.call(3, later()).await.unwrap_err();
        assert!(matches!(err, CoalesceError::Failed(_)), "{err:?}");
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once_and_runs_nothing_it_refused() {
        let (gate, seen) = (Arc::new(Notify::new()), Arc::new(Mutex::new(Vec::new())));
        let limits = Limits { queue: 2, ..LIMITS };
        let c = Coalescer::new("test", 1, 64, limits, {
            let (gate, seen) = (gate.clone(), seen.clone());
            move |batch: Vec<u32>| {
                seen.lock().unwrap().push(batch.clone());
                let gate = gate.clone();
                async move {
                    if batch == [0] {
                        gate.notified().await;
                    }
                    batch.into_iter().map(Ok).collect()
                }
            }
        });
        let first = spawn_call(&c, 0);
        settle().await;
        let queued: Vec<_> = (1..=2u32).map(|n| spawn_call(&c, n)).collect();
        settle().await;
        for n in 3..=5u32 {
            let err = c.call(n, later()).await.unwrap_err();
            assert!(matches!(err, CoalesceError::Overloaded), "{err:?}");
        }
        gate.notify_one();
        first.await.unwrap().unwrap();
        for handle in queued {
            handle.await.unwrap().unwrap();
        }
        assert_eq!(*seen.lock().unwrap(), vec![vec![0], vec![1, 2]], "3, 4 and 5 never ran");
    }

    #[tokio::test]
    async fn a_request_not_batched_before_its_deadline_is_withdrawn_and_never_runs() {
        let (gate, seen) = (Arc::new(Notify::new()), Arc::new(Mutex::new(Vec::new())));
        let c = gated(gate.clone(), seen.clone(), false);
        let first = spawn_call(&c, 0);
        settle().await;
        // Its batch could not finish in time once 100 ms have passed.
        let answer_by = Instant::now() + LIMITS.batch_timeout + Duration::from_millis(100);
        let late = {
            let c = c.clone();
            tokio::spawn(async move { c.call(7, answer_by).await })
        };
        let err = late.await.unwrap().unwrap_err();
        assert!(matches!(err, CoalesceError::Timeout), "{err:?}");
        gate.notify_one();
        first.await.unwrap().unwrap();
        assert_eq!(c.call(8, later()).await.unwrap(), 80);
        assert_eq!(*seen.lock().unwrap(), vec![vec![0], vec![8]], "7 never ran");
    }

    #[tokio::test]
    async fn a_request_whose_deadline_leaves_no_room_for_a_batch_is_refused() {
        let (gate, seen) = (Arc::new(Notify::new()), Arc::new(Mutex::new(Vec::new())));
        let c = gated(gate, seen.clone(), false);
        let err = c.call(1, Instant::now() + LIMITS.batch_timeout).await.unwrap_err();
        assert!(matches!(err, CoalesceError::Timeout), "{err:?}");
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_batch_that_hangs_fails_its_callers_at_the_batch_timeout_and_frees_its_slot() {
        let limits = Limits {
            batch_timeout: Duration::from_millis(200),
            ..LIMITS
        };
        let c: Coalescer<u32, u32> = Coalescer::new("test", 1, 64, limits, |batch: Vec<u32>| async move {
            if batch == [1] {
                std::future::pending::<()>().await;
            }
            batch.into_iter().map(Ok).collect()
        });
        let err = c.call(1, later()).await.unwrap_err();
        assert!(matches!(err, CoalesceError::Unavailable), "{err:?}");
        assert_eq!(c.call(2, later()).await.unwrap(), 2);
    }

    #[test]
    fn limits_leave_the_database_a_second_less_than_the_client() {
        let limits = Limits::for_request_timeout(8, Duration::from_secs(10));
        assert_eq!(limits.batch_timeout, Duration::from_secs(5));
        assert_eq!(limits.statement_timeout(), Duration::from_secs(4));
        let long = Limits::for_request_timeout(8, Duration::from_secs(60));
        assert_eq!(long.batch_timeout, Duration::from_secs(6));
        let short = Limits::for_request_timeout(0, Duration::from_secs(1));
        assert_eq!((short.queue, short.batch_timeout), (1, Duration::from_millis(500)));
        assert_eq!(short.statement_timeout(), Duration::from_millis(250));
    }
}
