//! Erasure (SPEC §13): what a capture stored goes with its import, and
//! nothing live is ever removed.
//!
//! PostgreSQL writes the deletion ledger itself (`db::erasure`, migration
//! `…_erasure.sql`). A pass, on any replica, claims due entries with a lease,
//! lists each import's prefix, deletes its attempts' objects in batches
//! outside any transaction, and finishes an entry (row, ledger entry, audit
//! row, in one transaction) only once a listing shows no attempt's object
//! after the late writers' window. `erase_orphans` is the one-off sweep of
//! a bucket that predates the ledger. The task that runs passes is in
//! `background.rs`.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, SystemTime};

use aws_sdk_s3::primitives::DateTime;
use futures::{StreamExt, TryStreamExt};
use sqlx::PgPool;
use uuid::Uuid;

use page_import_contract::job::{import_of, import_prefix, is_import_id, ARTIFACT_ROOT};

use crate::db;
use crate::metrics::Metrics;
use crate::objects::{self, Listing};

/// Entries one pass claims at a time: 200 imports of 20 objects are four
/// `DeleteObjects` calls, found by one walk of their key range.
const CLAIM_BATCH: i64 = 200;
/// Pages of 1 000 keys the walk that finds a batch's objects reads at most
/// before it leaves the rest to listings of their own: a batch whose imports
/// lie far apart, among many live objects.
const FIND_PAGES: usize = 12;
/// The walk that proves a batch's prefixes empty expects to find nothing of
/// them: small pages, so that it does not read a page of other imports'
/// objects to see where the range ends.
const VERIFY_PAGE: i32 = 50;
const VERIFY_PAGES: usize = 4;

/// Which walk of a batch's key range.
#[derive(Clone, Copy)]
enum Walk {
    /// Finds the objects to delete.
    Find,
    /// Proves the prefixes empty after the deletions.
    Verify,
}
/// Prefix listings in flight at once.
const LISTINGS_IN_FLIGHT: usize = 8;
/// How long a claim holds an entry; a pass that dies lets it go after this.
/// A pass that is still working renews it every third of it.
pub const LEASE: Duration = Duration::from_secs(300);
/// The longest wait before an entry whose S3 calls failed is tried again.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// What a pass uses.
#[derive(Clone)]
pub struct Eraser {
    pub pool: PgPool,
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
    /// `ERASE_AFTER_DELETE_SECS`.
    pub erase_after: Duration,
    /// `CAPTURE_TIMEOUT_SECS`: how long after its last dispatch a worker may
    /// still write an import's objects.
    pub capture_timeout: Duration,
    /// `ERASE_INTERVAL_SECS`: the first backoff after a failure.
    pub interval: Duration,
    /// [`LEASE`] (shorter in tests).
    pub lease: Duration,
    pub metrics: Metrics,
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassReport {
    /// Imports whose erasure finished.
    pub erased: usize,
    /// Objects deleted.
    pub objects: u64,
    /// Imports put back to wait: the late writers' window is open, or an
    /// object appeared after the deletions.
    pub waiting: usize,
    /// Imports whose S3 calls failed; tried again after a backoff.
    pub failed: usize,
}

/// One claimed entry as the pass works it.
struct Work {
    entry: db::erasure::Claimed,
    deleted: u64,
    failed: bool,
}

impl Eraser {
    /// Erases every due entry, batch after batch, then updates the pending
    /// gauges. An entry whose S3 calls fail stays in the ledger for a later
    /// pass; only a database error ends the pass early.
    #[tracing::instrument(name = "erasure.pass", level = "debug", skip_all)]
    pub async fn pass_once(&self) -> anyhow::Result<PassReport> {
        let mut report = PassReport::default();
        loop {
            let lease = Uuid::new_v4().to_string();
            let claimed = {
                let mut conn = self.pool.acquire().await?;
                db::erasure::claim(
                    &mut conn,
                    &lease,
                    self.lease,
                    self.erase_after,
                    self.capture_timeout,
                    CLAIM_BATCH,
                )
                .await?
            };
            let full = claimed.len() as i64 == CLAIM_BATCH;
            self.holding(&lease, self.erase_batch(&lease, claimed, &mut report))
                .await?;
            if !full {
                break;
            }
        }
        let mut conn = self.pool.acquire().await?;
        let pending = db::erasure::pending(&mut conn, self.erase_after).await?;
        self.metrics.erasure_pending(pending);
        Ok(report)
    }

    /// Lists every claimed prefix, deletes what the listings found across
    /// the batch (≤ 1 000 keys a call), then finishes each entry whose
    /// late writers' window is over and whose prefix now lists empty.
    #[tracing::instrument(name = "erasure.batch", level = "debug", skip_all, fields(entries = claimed.len()))]
    async fn erase_batch(
        &self,
        lease: &str,
        claimed: Vec<db::erasure::Claimed>,
        report: &mut PassReport,
    ) -> anyhow::Result<()> {
        let mut work = self.still_held(lease, claimed).await?;
        self.delete_found(&mut work).await;
        let deleted: u64 = work.iter().map(|w| w.deleted).sum();
        self.metrics.erasure_objects_deleted(deleted);
        report.objects += deleted;
        let verified = self.verify_empty(&mut work).await;
        self.settle(lease, &work, &verified, report).await
    }

    /// The claimed entries this pass still holds and whose import is not
    /// live again. Nothing is deleted for an import that is live again: the
    /// liveness is read again under the lock `finish` takes, after the
    /// claim committed.
    async fn still_held(&self, lease: &str, claimed: Vec<db::erasure::Claimed>) -> anyhow::Result<Vec<Work>> {
        let held = {
            let ids: Vec<String> = claimed.iter().map(|c| c.page_import_id.clone()).collect();
            let mut conn = self.pool.acquire().await?;
            db::erasure::still_erasable(&mut conn, lease, &ids).await?
        };
        Ok(claimed
            .into_iter()
            .filter(|entry| {
                let keep = held.contains(&entry.page_import_id);
                if !keep {
                    tracing::warn!(page_import_id = %entry.page_import_id, "left alone: live again, or no longer held");
                }
                keep
            })
            .map(|entry| Work {
                entry,
                deleted: 0,
                failed: false,
            })
            .collect())
    }

    /// Lists every entry's prefix and deletes what the listings found
    /// across the batch (≤ 1 000 keys a call), counting each import's
    /// deletions and marking the imports whose listing or deletion failed.
    async fn delete_found(&self, work: &mut [Work]) {
        let listings = self
            .list_all(
                work.iter().map(|w| w.entry.page_import_id.clone()).collect(),
                Walk::Find,
            )
            .await;
        let mut owner = HashMap::new();
        let mut keys = Vec::new();
        for (i, listing) in listings.into_iter().enumerate() {
            match listing {
                Ok(listing) => {
                    for key in listing.attempt_keys {
                        owner.insert(key.clone(), i);
                        keys.push(key);
                    }
                }
                Err(err) => self.failed(&mut work[i], &err),
            }
        }
        for batch in objects::batches(&keys) {
            match objects::delete_batch(&self.s3, &self.bucket, batch).await {
                Ok(()) => batch.iter().for_each(|key| work[owner[key]].deleted += 1),
                Err(err) => {
                    let hit: std::collections::BTreeSet<usize> = batch.iter().map(|key| owner[key]).collect();
                    hit.into_iter().for_each(|i| self.failed(&mut work[i], &err));
                }
            }
        }
    }

    /// A second listing, after the window, is the proof of an empty prefix:
    /// per entry, whether it listed empty (`None`: not listed, its window
    /// is open or it failed).
    async fn verify_empty(&self, work: &mut [Work]) -> Vec<Option<bool>> {
        let verify: Vec<usize> = (0..work.len())
            .filter(|&i| !work[i].failed && work[i].entry.window_left_secs <= 0.0)
            .collect();
        let listings = self
            .list_all(
                verify.iter().map(|&i| work[i].entry.page_import_id.clone()).collect(),
                Walk::Verify,
            )
            .await;
        let mut verified = vec![None; work.len()];
        for (i, listing) in verify.into_iter().zip(listings) {
            match listing {
                Ok(listing) => verified[i] = Some(listing.attempt_keys.is_empty()),
                Err(err) => self.failed(&mut work[i], &err),
            }
        }
        verified
    }

    /// Finishes each entry that listed empty, and releases the others for
    /// their next try: after the backoff when they failed, when the window
    /// closes otherwise.
    async fn settle(
        &self,
        lease: &str,
        work: &[Work],
        verified: &[Option<bool>],
        report: &mut PassReport,
    ) -> anyhow::Result<()> {
        let finishing: Vec<db::erasure::Finish> = work
            .iter()
            .zip(verified)
            .filter(|(w, empty)| !w.failed && **empty == Some(true))
            .map(|(w, _)| db::erasure::Finish {
                page_import_id: w.entry.page_import_id.clone(),
                late_writes: w.entry.late_writes,
                objects_deleted: w.deleted as i64,
            })
            .collect();
        let mut conn = self.pool.acquire().await?;
        let finished: std::collections::HashSet<String> = db::erasure::finish(&mut conn, lease, &finishing)
            .await?
            .into_iter()
            .collect();
        let mut releases = Vec::new();
        for w in work {
            let id = &w.entry.page_import_id;
            if finished.contains(id) {
                tracing::info!(page_import_id = %id, objects = w.deleted, "import erased");
                report.erased += 1;
                continue;
            }
            // Failed; or the window is open, an object appeared after the
            // deletions, or a late writer called back: look again later.
            let retry_in = if w.failed {
                report.failed += 1;
                self.backoff(w.entry.failures)
            } else {
                report.waiting += 1;
                Duration::from_secs_f64(w.entry.window_left_secs.max(0.0))
            };
            releases.push(db::erasure::Release {
                page_import_id: id.clone(),
                retry_in,
                objects_deleted: w.deleted as i64,
                failed: w.failed,
            });
        }
        db::erasure::release(&mut conn, lease, &releases).await?;
        Ok(())
    }

    /// Lists each import's prefix, in the given order: the batch's ids in
    /// one walk of the key range they span (imports deleted together were
    /// mostly created together, and uuid v7 ids sort by time), then any id
    /// the walk did not cover, a few listings at a time.
    async fn list_all(&self, ids: Vec<String>, walk: Walk) -> Vec<anyhow::Result<Listing>> {
        let mut sorted = ids.clone();
        sorted.sort();
        let (page_size, pages) = match walk {
            Walk::Find => (1000, FIND_PAGES),
            Walk::Verify => (VERIFY_PAGE, VERIFY_PAGES),
        };
        let (mut walked, rest) = match objects::list_range(&self.s3, &self.bucket, &sorted, page_size, pages).await {
            Ok(walked) => walked,
            Err(_) => (HashMap::new(), sorted),
        };
        let listed = self.list_each(rest.clone()).await;
        let mut rest: HashMap<String, anyhow::Result<Listing>> = rest.into_iter().zip(listed).collect();
        ids.iter()
            .map(|id| match walked.remove(id) {
                Some(listing) => {
                    Self::warn_others(&listing);
                    Ok(listing)
                }
                None => rest
                    .remove(id)
                    .unwrap_or_else(|| Err(anyhow::anyhow!("import {id} was not listed"))),
            })
            .collect()
    }

    fn warn_others(listing: &Listing) {
        for key in &listing.other_keys {
            tracing::warn!(key = %key, "left alone: not an attempt's object");
        }
    }

    /// Lists each import's prefix on its own, a few at a time, in order.
    async fn list_each(&self, ids: Vec<String>) -> Vec<anyhow::Result<Listing>> {
        let listings = ids.into_iter().map(|id| {
            let prefix = import_prefix(&id);
            async move {
                let listing = objects::list(&self.s3, &self.bucket, &prefix).await?;
                Self::warn_others(&listing);
                Ok(listing)
            }
        });
        futures::stream::iter(listings)
            .buffered(LISTINGS_IN_FLIGHT)
            .collect()
            .await
    }

    /// Runs `work` while renewing `lease` every third of its length
    /// (`lease::renewing`), so that no other pass takes an entry this one
    /// still works (SPEC §13). A renewal that fails is logged; the entries
    /// this pass lost are neither finished nor released by it (both check
    /// the lease).
    async fn holding<T>(&self, lease: &str, work: impl std::future::Future<Output = T>) -> T {
        crate::lease::renewing(self.lease / 3, work, || async {
            let renewed = match self.pool.acquire().await {
                Ok(mut conn) => db::erasure::renew(&mut conn, lease, self.lease).await,
                Err(err) => Err(err),
            };
            match renewed {
                Ok(n) => tracing::debug!(entries = n, "erasure lease renewed"),
                Err(err) => tracing::warn!(error = %err, "could not renew the erasure lease"),
            }
        })
        .await
    }

    fn failed(&self, work: &mut Work, err: &anyhow::Error) {
        if !work.failed {
            work.failed = true;
            self.metrics.erasure_failed();
            tracing::warn!(
                page_import_id = %work.entry.page_import_id,
                error = format!("{err:#}"),
                "erasure failed; it is tried again later"
            );
        }
    }

    /// `ERASE_INTERVAL_SECS` doubled per failure so far, at most an hour.
    fn backoff(&self, failures: i32) -> Duration {
        let factor = 2u32.saturating_pow(failures.clamp(0, 16) as u32);
        self.interval.saturating_mul(factor).min(MAX_BACKOFF)
    }
}

/// What `page-import erase-orphans` found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OrphanReport {
    /// `page-imports/{x}/` prefixes listed.
    pub prefixes: usize,
    /// Orphaned prefixes erased (or, in a dry run, that would be).
    pub orphans: usize,
    /// Their attempts' objects.
    pub objects: u64,
    /// Orphaned prefixes spared: their newest object is too recent.
    pub spared: usize,
    /// Prefixes whose name is not an import id: left alone.
    pub left_alone: usize,
}

/// The sweep for deployments that existed before the ledger (SPEC §13):
/// erases each `page-imports/{uuid}/` prefix with no row and no ledger
/// entry whose newest object is older than `older_than`. Prints one line per
/// orphan to `out` (`would erase` in a dry run, which deletes nothing) and
/// one summary line. A prefix that is not a canonical import id, and every
/// key not of an attempt's shape, is left alone.
#[tracing::instrument(name = "erase_orphans", skip_all, fields(bucket, older_than_s = older_than.as_secs(), dry_run))]
pub async fn erase_orphans(
    pool: &PgPool,
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    older_than: Duration,
    dry_run: bool,
    out: &mut impl Write,
) -> anyhow::Result<OrphanReport> {
    let mut report = OrphanReport::default();
    let cutoff = orphan_cutoff(older_than);
    let mut conn = pool.acquire().await?;
    for prefix in objects::list_prefixes(s3, bucket, ARTIFACT_ROOT).await? {
        report.prefixes += 1;
        let Some(id) = import_of(&prefix).filter(|id| is_import_id(id)) else {
            tracing::warn!(prefix = %prefix, "left alone: not an import's prefix");
            report.left_alone += 1;
            continue;
        };
        if db::erasure::is_known(&mut conn, id).await? {
            continue;
        }
        let listing = objects::list(s3, bucket, &prefix).await?;
        if listing.attempt_keys.is_empty() {
            continue;
        }
        if listing.newest.is_some_and(|newest| newest > cutoff) {
            report.spared += 1;
            continue;
        }
        let n = listing.attempt_keys.len();
        if dry_run {
            writeln!(out, "would erase {prefix} ({n} objects)")?;
        } else {
            futures::stream::iter(objects::batches(&listing.attempt_keys))
                .map(|batch| objects::delete_batch(s3, bucket, batch))
                .buffered(2)
                .try_collect::<Vec<()>>()
                .await?;
            writeln!(out, "erased {prefix} ({n} objects)")?;
        }
        report.orphans += 1;
        report.objects += n as u64;
    }
    write_orphan_summary(out, &report, dry_run, older_than)?;
    Ok(report)
}

/// The time before which an orphan's newest object must have been written.
/// Any `--older-than-secs` is an answer, not a panic: a cutoff before the
/// epoch spares every object.
fn orphan_cutoff(older_than: Duration) -> DateTime {
    DateTime::from(
        SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH)
            .max(SystemTime::UNIX_EPOCH),
    )
}

/// The run's one summary line.
fn write_orphan_summary(
    out: &mut impl Write,
    report: &OrphanReport,
    dry_run: bool,
    older_than: Duration,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} prefixes listed, {} orphaned with {} objects {}, {} spared as newer than {} s, {} left alone",
        if dry_run { "dry run" } else { "done" },
        report.prefixes,
        report.orphans,
        report.objects,
        if dry_run { "to erase" } else { "erased" },
        report.spared,
        older_than.as_secs(),
        report.left_alone,
    )
}
