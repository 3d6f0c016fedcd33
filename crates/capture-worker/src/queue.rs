//! The SQS loop (SPEC §10 "Loop"): long-poll, up to `WORKER_CONCURRENCY`
//! captures at once, the message kept invisible while its capture runs, and
//! deleted once the callback got a final answer.
//!
//! A message is read by its `schemaVersion`: 1 is one capture, 2 an import
//! set (SPEC §15, `set.rs`), which holds its slot until its last member
//! ended. A message this worker cannot read (a version it does not know,
//! a job it cannot decode, another deployment's bucket) is never deleted:
//! it is left to SQS's redrive, so a newer worker can take it, and after
//! `maxReceiveCount` receives it reaches the dead-letter queue (decision
//! 0048). Only what is no job of any version (not JSON, no
//! `schemaVersion`) is deleted.

use std::sync::Arc;
use std::time::Duration;

use page_import_contract::job::{CaptureJob, SetJob, SCHEMA_VERSION, SET_SCHEMA_VERSION, TRACEPARENT};
use page_import_platform::telemetry::trace_context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::job::{Disposition, Worker};

/// The longest receive SQS allows (`WaitTimeSeconds`).
const LONG_POLL_SECS: i32 = 20;
/// Visibility granted at a time; renewed every third of it while working.
const VISIBILITY_SECS: i32 = 60;
/// When a message this worker cannot read comes back: soon, for a newer
/// worker to take it, but not at once, so that one old worker does not
/// spend the queue's `maxReceiveCount` on it in a burst.
const UNREADABLE_VISIBILITY_SECS: i32 = 10;

/// The shared clients give up on an attempt after 5 s; a long poll takes up to 20.
fn long_poll_timeouts() -> aws_sdk_sqs::config::Builder {
    let limit = Duration::from_secs(LONG_POLL_SECS as u64 + 10);
    aws_sdk_sqs::config::Builder::default().timeout_config(
        aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
            .operation_attempt_timeout(limit)
            .operation_timeout(limit)
            .build(),
    )
}

pub struct Queue {
    pub sqs: aws_sdk_sqs::Client,
    pub url: String,
    /// `ARTIFACT_BUCKET`: a job naming another bucket is not ours to write.
    pub bucket: String,
}

/// Runs until `shutdown` is cancelled, then waits for the captures in flight.
///
/// A receive under way when the worker is told to stop is not dropped: SQS
/// would go on waiting on it and hand the next message that becomes
/// visible to nobody, hidden for [`VISIBILITY_SECS`] (a set's members
/// handed back at a SIGTERM among them). It runs out beside the captures
/// in flight, and what it brings is handed back at once.
pub async fn run(queue: Arc<Queue>, worker: Arc<Worker>, settings: Receiving, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(settings.concurrency));
    let mut in_flight = JoinSet::new();
    let mut cut_short = None;
    loop {
        let permit = tokio::select! {
            _ = shutdown.cancelled() => break,
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let mut receiving = Box::pin(receive(&queue, settings.wait_secs));
        let received = tokio::select! {
            _ = shutdown.cancelled() => {
                cut_short = Some(receiving);
                break;
            }
            received = &mut receiving => received,
        };
        while in_flight.try_join_next().is_some() {}
        let messages = match received {
            Ok(output) => output.messages.unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = ?e, "receiving from SQS failed");
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                }
                continue;
            }
        };
        // One message per receive, so the slot acquired for it is its own.
        if let Some(message) = messages.into_iter().next() {
            let traceparent = message
                .message_attributes
                .as_ref()
                .and_then(|a| a.get(TRACEPARENT))
                .and_then(|v| v.string_value.clone());
            let (Some(body), Some(receipt)) = (message.body, message.receipt_handle) else {
                continue;
            };
            let queue = queue.clone();
            let worker = worker.clone();
            let shutdown = shutdown.clone();
            in_flight.spawn(async move {
                let _slot = permit;
                let received = Received {
                    body: &body,
                    receipt: &receipt,
                    traceparent: traceparent.as_deref(),
                };
                process(&queue, &worker, received, &shutdown).await;
            });
        }
    }
    tracing::info!(
        in_flight = in_flight.len(),
        "stopped receiving; finishing captures in flight"
    );
    tokio::join!(hand_back_late(&queue, cut_short), async {
        while in_flight.join_next().await.is_some() {}
    });
}

/// How the loop receives: `WORKER_CONCURRENCY` slots, each receive waiting
/// up to `WORKER_RECEIVE_WAIT_SECS` for a message.
#[derive(Clone, Copy, Debug)]
pub struct Receiving {
    pub concurrency: usize,
    pub wait_secs: u8,
}

/// One long poll for one message.
fn receive(
    queue: &Queue,
    wait_secs: u8,
) -> impl std::future::Future<
    Output = Result<
        aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput,
        aws_sdk_sqs::error::SdkError<aws_sdk_sqs::operation::receive_message::ReceiveMessageError>,
    >,
> + Send
       + 'static {
    queue
        .sqs
        .receive_message()
        .queue_url(&queue.url)
        .max_number_of_messages(1)
        .message_attribute_names(TRACEPARENT)
        .wait_time_seconds(i32::from(wait_secs))
        .visibility_timeout(VISIBILITY_SECS)
        .customize()
        .config_override(long_poll_timeouts())
        .send()
}

/// Lets the receive cut short by a SIGTERM run out, and hands back at once
/// whatever it brings.
async fn hand_back_late<F, E>(queue: &Queue, cut_short: Option<std::pin::Pin<Box<F>>>)
where
    F: std::future::Future<Output = Result<aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput, E>>,
{
    let Some(receiving) = cut_short else { return };
    let Ok(output) = receiving.await else { return };
    for message in output.messages.unwrap_or_default() {
        if let Some(receipt) = message.receipt_handle {
            tracing::info!("a message received while stopping; handed back at once");
            set_visibility(queue, &receipt, 0).await;
        }
    }
}

/// One message as received.
struct Received<'a> {
    body: &'a str,
    receipt: &'a str,
    traceparent: Option<&'a str>,
}

/// What a message holds, read by its `schemaVersion`.
#[derive(Debug)]
enum Message {
    Capture(Box<CaptureJob<'static>>),
    Set(SetJob<'static>),
    /// Not JSON, or no `schemaVersion`: no job of any version.
    NotAJob,
    /// A job this worker cannot read, and why (no secret in it).
    Unreadable {
        schema_version: u32,
        why: &'static str,
    },
}

fn read(body: &str, bucket: &str) -> Message {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Version {
        schema_version: u32,
    }
    let Ok(Version { schema_version }) = serde_json::from_str::<Version>(body) else {
        return Message::NotAJob;
    };
    let unreadable = |why| Message::Unreadable { schema_version, why };
    let ours = |job: &CaptureJob<'_>| job.schema_version == SCHEMA_VERSION && job.artifacts.bucket == bucket;
    match schema_version {
        SCHEMA_VERSION => match serde_json::from_str::<CaptureJob<'static>>(body) {
            Ok(job) if ours(&job) => Message::Capture(Box::new(job)),
            Ok(_) => unreadable("its artifacts are for another bucket"),
            Err(_) => unreadable("it does not decode as a capture job"),
        },
        SET_SCHEMA_VERSION => match serde_json::from_str::<SetJob<'static>>(body) {
            Ok(set) if !set.jobs.is_empty() && set.jobs.iter().all(ours) => Message::Set(set),
            Ok(set) if set.jobs.is_empty() => unreadable("a set without members"),
            Ok(_) => unreadable("a member is not a capture job for this bucket"),
            Err(_) => unreadable("it does not decode as a set"),
        },
        _ => unreadable("a schemaVersion this worker does not know"),
    }
}

/// Captures the job or set of one message, in the trace the message
/// carries (SPEC §9): the capture's span (a set's, with one span per
/// member in it) continues it, or starts one when there is none.
async fn process(queue: &Queue, worker: &Worker, received: Received<'_>, shutdown: &CancellationToken) {
    let Received {
        body,
        receipt,
        traceparent,
    } = received;
    let (span, disposition) = match read(body, &queue.bucket) {
        Message::Capture(job) => {
            let span = tracing::info_span!(parent: None, "capture", page_import_id = %job.page_import_id, attempt = job.attempt);
            trace_context::continue_from(&span, traceparent);
            let disposition = keeping_invisible(queue, receipt, worker.handle(&job)).instrument(span.clone());
            (span, disposition.await)
        }
        Message::Set(set) => {
            let span = tracing::info_span!(parent: None, "capture_set", set_id = %set.set_id, members = set.jobs.len());
            trace_context::continue_from(&span, traceparent);
            let handled = worker.handle_set(&set, shutdown);
            let disposition = keeping_invisible(queue, receipt, handled).instrument(span.clone());
            (span, disposition.await)
        }
        Message::NotAJob => {
            tracing::warn!(bytes = body.len(), "not a capture job of any version; deleting it");
            delete(queue, receipt).await;
            return;
        }
        Message::Unreadable { schema_version, why } => {
            tracing::warn!(
                bytes = body.len(),
                schema_version,
                why,
                "a message this worker cannot read; left to SQS's redrive, not deleted"
            );
            set_visibility(queue, receipt, UNREADABLE_VISIBILITY_SECS).await;
            return;
        }
    };
    // Every line of the capture carries its trace, the delete's too.
    async {
        match disposition {
            Disposition::Done => delete(queue, receipt).await,
            Disposition::HandBack => set_visibility(queue, receipt, 0).await,
            Disposition::Later => {}
        }
    }
    .instrument(span)
    .await;
}

/// Runs `work`, renewing the message's visibility every third of
/// [`VISIBILITY_SECS`] until it ends: a set's message stays invisible
/// until its last member ended.
async fn keeping_invisible<T>(queue: &Queue, receipt: &str, work: impl std::future::Future<Output = T>) -> T {
    let renew = async {
        loop {
            tokio::time::sleep(Duration::from_secs((VISIBILITY_SECS / 3) as u64)).await;
            set_visibility(queue, receipt, VISIBILITY_SECS).await;
        }
    };
    tokio::select! {
        done = work => done,
        () = renew => unreachable!("the visibility loop never ends"),
    }
}

async fn set_visibility(queue: &Queue, receipt: &str, secs: i32) {
    if let Err(e) = queue
        .sqs
        .change_message_visibility()
        .queue_url(&queue.url)
        .receipt_handle(receipt)
        .visibility_timeout(secs)
        .send()
        .await
    {
        tracing::warn!(error = ?e, secs, "setting the message's visibility failed; it comes back when the last one lapses");
    }
}

async fn delete(queue: &Queue, receipt: &str) {
    if let Err(e) = queue
        .sqs
        .delete_message()
        .queue_url(&queue.url)
        .receipt_handle(receipt)
        .send()
        .await
    {
        tracing::warn!(error = ?e, "deleting the message failed; it will be delivered again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn job(bucket: &str) -> Value {
        json!({
            "schemaVersion": 1, "pageImportId": "p1", "attempt": 1, "nonce": "n",
            "source": {"kind": "public_url", "url": "https://example.com/"},
            "viewport": {"width": 800, "height": 600, "deviceScaleFactor": 1.0},
            "readySelector": null,
            "artifacts": {"bucket": bucket, "prefix": "page-imports/p1/1/"},
            "callbackUrl": "http://service/webhooks/page-imports"
        })
    }

    fn read_json(message: Value) -> Message {
        read(&message.to_string(), "ours")
    }

    #[test]
    fn a_message_is_read_by_its_schema_version() {
        assert!(matches!(read_json(job("ours")), Message::Capture(_)));
        let set = json!({"schemaVersion": 2, "setId": "s1", "jobs": [job("ours"), job("ours")]});
        assert!(matches!(read_json(set), Message::Set(s) if s.jobs.len() == 2 && s.set_id == "s1"));
    }

    #[test]
    fn what_this_worker_cannot_read_is_unreadable_never_not_a_job() {
        let mut newer = job("ours");
        newer["schemaVersion"] = json!(99);
        let mut member_v3 = job("ours");
        member_v3["schemaVersion"] = json!(3);
        for (message, version) in [
            (newer, 99),
            (job("theirs"), 1),
            (json!({"schemaVersion": 1, "hello": "worker"}), 1),
            (json!({"schemaVersion": 2, "hello": "worker"}), 2),
            (json!({"schemaVersion": 2, "setId": "s", "jobs": []}), 2),
            (
                json!({"schemaVersion": 2, "setId": "s", "jobs": [job("ours"), job("theirs")]}),
                2,
            ),
            (json!({"schemaVersion": 2, "setId": "s", "jobs": [member_v3]}), 2),
        ] {
            let read = read_json(message.clone());
            assert!(
                matches!(read, Message::Unreadable { schema_version, .. } if schema_version == version),
                "{message}: {read:?}"
            );
        }
    }

    #[test]
    fn only_what_is_no_job_of_any_version_is_not_a_job() {
        for body in [
            "not json",
            "[]",
            "{}",
            r#"{"schemaVersion": "1"}"#,
            r#"{"hello": "worker"}"#,
        ] {
            assert!(matches!(read(body, "ours"), Message::NotAJob), "{body}");
        }
    }
}
