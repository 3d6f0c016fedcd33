//! The lifecycle rules, one module per job: what a request or a background
//! task may do to the data and in which order. Each service is a struct of
//! what it uses, never the whole state, and its operations are methods;
//! `state.rs` builds every one (`Creator`, `Retrier`, `Callbacks`,
//! `Imports`, `Code2DesJobs` borrowed for a request; `Dispatcher`,
//! `Sweeper`, `Eraser` owned by their background tasks; `DispatchRejected`
//! owned by the publisher, which reports the messages SQS refused to it).

pub mod callbacks;
pub mod code2des;
pub mod create;
pub mod dispatch;
pub mod dispatch_rejected;
pub mod erasure;
pub mod imports;
pub mod next_attempt;
pub mod retry;
pub mod set_dispatch;
pub mod sets;
pub mod sweeper;
