//! The vocabulary of an import's lifecycle (SPEC §7 "Attempts"): who moves an
//! import besides its users, why an attempt started and how it ended. The
//! code that makes a transition passes these values; the history records
//! them as passed.

/// The backend actor of the sweeper's transitions (`updated_by`, `started_by`).
pub const SWEEPER: &str = "system:sweeper";
/// The backend actor of the capture worker's transitions.
pub const CAPTURE_WORKER: &str = "system:capture-worker";
/// The backend actor that ends an attempt whose message SQS refused.
pub const DISPATCHER: &str = "system:dispatcher";

/// Why an attempt started: `page_import_attempt.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptReason {
    /// The import was created.
    Create,
    /// The previous attempt timed out.
    Sweeper,
    /// The worker reported a transient failure.
    Retryable,
    /// A user retried a failed import.
    Manual,
}

impl AttemptReason {
    /// The reasons an attempt after the first starts for.
    pub const NEXT: [Self; 3] = [Self::Sweeper, Self::Retryable, Self::Manual];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Sweeper => "sweeper",
            Self::Retryable => "retryable",
            Self::Manual => "manual",
        }
    }
}

/// How an attempt ended: `page_import_attempt.outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    Completed,
    Failed,
    TimedOut,
    RetryableFailure,
    /// SQS refused the attempt's message as the sender's fault (SPEC §12).
    DispatchRejected,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::RetryableFailure => "retryable_failure",
            Self::DispatchRejected => "dispatch_rejected",
        }
    }
}
