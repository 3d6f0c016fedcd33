//! The lifecycle rules, one module per job: what a request may do to the
//! data and in which order. Handlers (`http/`) extract, call one function
//! here, and map its result to a response.

pub mod callbacks;
pub mod code2des;
pub mod imports;
