//! The SQS loop (SPEC §10 "Loop"): long-poll, up to `WORKER_CONCURRENCY`
//! captures at once, the message kept invisible while its capture runs, and
//! deleted once the callback got a final answer.

use std::sync::Arc;
use std::time::Duration;

use page_import_contract::job::{CaptureJob, SCHEMA_VERSION, TRACEPARENT};
use page_import_platform::telemetry::trace_context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::job::{Disposition, Worker};

const LONG_POLL_SECS: i32 = 20;
/// Visibility granted at a time; renewed every third of it while working.
const VISIBILITY_SECS: i32 = 60;

/// The shared clients give up on an attempt after 5 s; a long poll takes 20.
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
pub async fn run(queue: Arc<Queue>, worker: Arc<Worker>, concurrency: usize, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(concurrency));
    let mut in_flight = JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = shutdown.cancelled() => break,
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let received = tokio::select! {
            _ = shutdown.cancelled() => break,
            received = queue
                .sqs
                .receive_message()
                .queue_url(&queue.url)
                .max_number_of_messages(1)
                .message_attribute_names(TRACEPARENT)
                .wait_time_seconds(LONG_POLL_SECS)
                .visibility_timeout(VISIBILITY_SECS)
                .customize()
                .config_override(long_poll_timeouts())
                .send() => received,
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
            in_flight.spawn(async move {
                let _slot = permit;
                process(&queue, &worker, &body, &receipt, traceparent.as_deref()).await;
            });
        }
    }
    tracing::info!(
        in_flight = in_flight.len(),
        "stopped receiving; finishing captures in flight"
    );
    while in_flight.join_next().await.is_some() {}
}

/// Captures the job of one message, in the trace the message carries (SPEC
/// §9): the capture span continues it, or starts one when there is none.
async fn process(queue: &Queue, worker: &Worker, body: &str, receipt: &str, traceparent: Option<&str>) {
    let job = match serde_json::from_str::<CaptureJob<'static>>(body) {
        Ok(job) if job.schema_version == SCHEMA_VERSION && job.artifacts.bucket == queue.bucket => job,
        _ => {
            tracing::warn!(
                bytes = body.len(),
                "not a schemaVersion 1 capture job for this bucket; deleting it"
            );
            delete(queue, receipt).await;
            return;
        }
    };
    let keep_invisible = async {
        loop {
            tokio::time::sleep(Duration::from_secs((VISIBILITY_SECS / 3) as u64)).await;
            let result = queue
                .sqs
                .change_message_visibility()
                .queue_url(&queue.url)
                .receipt_handle(receipt)
                .visibility_timeout(VISIBILITY_SECS)
                .send()
                .await;
            if let Err(e) = result {
                tracing::warn!(error = ?e, "extending the message's visibility failed");
            }
        }
    };
    let span =
        tracing::info_span!(parent: None, "capture", page_import_id = %job.page_import_id, attempt = job.attempt);
    trace_context::continue_from(&span, traceparent);
    // The visibility renewals and the delete too: every line of the capture
    // carries its trace.
    async {
        let disposition = tokio::select! {
            d = worker.handle(&job) => d,
            () = keep_invisible => unreachable!("the visibility loop never ends"),
        };
        if let Disposition::Done(_) = disposition {
            delete(queue, receipt).await;
        }
    }
    .instrument(span)
    .await;
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
