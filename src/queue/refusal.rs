//! What SQS refused as the sender's fault, and who is told. SPEC §12: a
//! message SQS refuses for what it is (an invalid body, an oversized
//! message) is not retried, its attempt ends `dispatch_rejected`; a
//! throttle or an outage is retried, whatever SQS calls it. SQS marks as
//! the sender's fault many refusals that are not about the message (its
//! throttles, the KMS key of an encrypted queue, a missing queue, missing
//! rights): the code decides, for a whole call and for one entry alike.

use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::types::BatchResultErrorEntry;
use futures::future::BoxFuture;

/// A capture message SQS refused as the sender's fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedCapture {
    /// Its outbox row, still leased to the publisher that sent it.
    pub outbox_id: i64,
    /// SQS's error code, as it said it.
    pub code: String,
}

/// Ends the attempts whose capture message SQS refused: a lifecycle rule,
/// written by the service that owns it (`service::dispatch_rejected`), not
/// by the transport. The refused rows leave the outbox with their
/// attempts' end; when that fails they stay, and the relay meets the same
/// refusal again when their lease runs out.
pub trait RefusedCaptures: Send + Sync {
    fn end_attempts<'a>(&'a self, refused: &'a [RefusedCapture]) -> BoxFuture<'a, ()>;
}

/// A refusal as SQS put it: its code, and whether SQS blamed the sender
/// (an entry's `SenderFault`; a whole call's 4xx status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refusal<'a> {
    pub code: &'a str,
    pub sender_fault: bool,
}

impl<'a> Refusal<'a> {
    pub fn of_entry(entry: &'a BatchResultErrorEntry) -> Self {
        Self {
            code: entry.code(),
            sender_fault: entry.sender_fault(),
        }
    }

    /// `None` when SQS gave no answer of its own (a timeout, a connection
    /// refused): an outage.
    pub fn of_call(err: &'a SdkError<SendMessageBatchError>) -> Option<Self> {
        Some(Self {
            code: err.code()?,
            sender_fault: err.raw_response().is_some_and(|r| r.status().is_client_error()),
        })
    }

    /// The one rule: SQS refused what was sent, for good. Only codes about
    /// the message or the batch's size are: an invalid body
    /// (`InvalidMessageContents`), a parameter SQS will never take
    /// (`InvalidParameterValue`: an oversized message), a batch or a
    /// message too long. Anything else SQS blames the sender for (a
    /// throttle, `KmsThrottled`, `KMS.ThrottlingException`, a KMS key
    /// disabled or denied, a queue that does not exist) is retried: it is
    /// about the sender's state or SQS's, and passes.
    pub fn is_senders_fault(&self) -> bool {
        // The JSON protocol names `com.amazonaws.sqs#Code`, the query
        // protocol `AWS.SimpleQueueService.Code`.
        let bare = self.code.rsplit(['#', '.']).next().unwrap_or(self.code);
        self.sender_fault
            && matches!(
                bare,
                "InvalidMessageContents" | "InvalidParameterValue" | "BatchRequestTooLong" | "MessageTooLong"
            )
    }
}

#[cfg(test)]
mod tests {
    use super::Refusal;

    fn senders(code: &str) -> bool {
        Refusal {
            code,
            sender_fault: true,
        }
        .is_senders_fault()
    }

    #[test]
    fn a_refusal_of_what_was_sent_is_the_senders_fault() {
        for code in [
            "InvalidMessageContents",
            "InvalidParameterValue",
            "com.amazonaws.sqs#InvalidMessageContents",
            "AWS.SimpleQueueService.BatchRequestTooLong",
            "MessageTooLong",
        ] {
            assert!(senders(code), "{code}");
        }
    }

    /// The codes the SQS API reference lists for `SendMessageBatch` (and
    /// its common errors) that are sender faults (HTTP 4xx) but not about
    /// the message: throttles, the KMS key of an encrypted queue, the queue,
    /// the credentials. SQS sets `SenderFault` on them; they pass, and are
    /// retried.
    #[test]
    fn sender_faults_that_are_not_about_the_message_are_retried() {
        for code in [
            "RequestThrottled",
            "ThrottlingException",
            "KmsThrottled",
            "KMS.ThrottlingException",
            "com.amazonaws.sqs#KmsThrottled",
            "KmsAccessDenied",
            "KMS.AccessDeniedException",
            "KmsDisabled",
            "KMS.DisabledException",
            "KmsInvalidKeyUsage",
            "KmsInvalidState",
            "KMS.KMSInvalidStateException",
            "KmsNotFound",
            "KMS.NotFoundException",
            "KmsOptInRequired",
            "QueueDoesNotExist",
            "AWS.SimpleQueueService.NonExistentQueue",
            "InvalidAddress",
            "InvalidSecurity",
            "UnsupportedOperation",
            "AccessDenied",
            "AccessDeniedException",
            "InvalidClientTokenId",
            "RequestExpired",
        ] {
            assert!(!senders(code), "{code}");
        }
    }

    #[test]
    fn what_sqs_blames_itself_for_is_never_the_senders_fault() {
        for code in ["InternalFailure", "ServiceUnavailable", "InvalidParameterValue"] {
            let refusal = Refusal {
                code,
                sender_fault: false,
            };
            assert!(!refusal.is_senders_fault(), "{code}");
        }
    }
}
