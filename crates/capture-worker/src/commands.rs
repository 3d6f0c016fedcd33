//! The CDP commands more than one part of the worker sends, typed once
//! ([`Command`]: method, parameters and answer bound together). A command
//! only one module sends is typed in that module.

use serde::{Deserialize, Serialize};

use crate::cdp::{Command, Done};
use crate::protocol::Evaluated;

/// `Page.enable`: page events, and the named worlds of
/// `Page.addScriptToEvaluateOnNewDocument`.
#[derive(Serialize)]
pub struct PageEnable {}

impl Command for PageEnable {
    const METHOD: &'static str = "Page.enable";
    type Reply = Done;
}

/// `Runtime.enable`: execution contexts and bindings reported.
#[derive(Serialize)]
pub struct RuntimeEnable {}

impl Command for RuntimeEnable {
    const METHOD: &'static str = "Runtime.enable";
    type Reply = Done;
}

/// A script for every new document of the session, in the page's main
/// world or, named, in a world of the worker's own.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddScriptToEvaluateOnNewDocument<'a> {
    pub source: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_name: Option<&'a str>,
}

/// Its answer: the script's identifier (unused).
#[derive(Deserialize)]
pub struct ScriptAdded {}

impl Command for AddScriptToEvaluateOnNewDocument<'_> {
    const METHOD: &'static str = "Page.addScriptToEvaluateOnNewDocument";
    type Reply = ScriptAdded;
}

/// `Runtime.evaluate` in execution context `context_id`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluate<'a> {
    pub expression: &'a str,
    pub context_id: i64,
    pub await_promise: bool,
    pub return_by_value: bool,
}

impl Command for Evaluate<'_> {
    const METHOD: &'static str = "Runtime.evaluate";
    type Reply = Evaluated;
}
