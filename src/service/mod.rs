//! The lifecycle rules, one module per job: what a request or a background
//! task may do to the data and in which order. Each service function takes
//! the dependencies it uses (a `…Deps` struct, built by `state.rs`), never
//! the whole state.

pub mod callbacks;
pub mod code2des;
pub mod create;
pub mod dispatch;
pub mod erasure;
pub mod imports;
pub mod next_attempt;
pub mod retry;
pub mod sweeper;
