//! The CDP commands of the page and its targets, and those more than one
//! part of the worker sends, typed once ([`Command`]: method, parameters
//! and answer bound together). A command only one other module sends is
//! typed in that module (the browser context's in the CDP client, the
//! reader's emulation, consent's binding, the questions after the
//! snapshot).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cdp::{Command, Connection, Done, Reply};
use crate::protocol::{
    Described, Evaluated, FrameOwner, IsolatedWorld, LayoutMetrics, Navigated, PushedNodes, Resolved, ResponseBody,
};

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

/// `Runtime.evaluate` in execution context `context_id`, or without one in
/// the main world of the session's page.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluate<'a> {
    pub expression: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<i64>,
    pub await_promise: bool,
    pub return_by_value: bool,
}

impl Command for Evaluate<'_> {
    const METHOD: &'static str = "Runtime.evaluate";
    type Reply = Evaluated;
}

/// `Inspector.enable`: `Inspector.targetCrashed` reported.
#[derive(Serialize)]
pub struct InspectorEnable {}

impl Command for InspectorEnable {
    const METHOD: &'static str = "Inspector.enable";
    type Reply = Done;
}

/// `Network.enable`, with the response bodies Chromium keeps for
/// `Network.getResponseBody`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkEnable {
    pub max_total_buffer_size: u64,
    pub max_resource_buffer_size: u64,
}

impl Command for NetworkEnable {
    const METHOD: &'static str = "Network.enable";
    type Reply = Done;
}

/// `Target.setAutoAttach`: the frames and workers below the session
/// attached as they appear (flattened), each paused until it is told to run.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetAutoAttach {
    pub auto_attach: bool,
    pub wait_for_debugger_on_start: bool,
    pub flatten: bool,
    /// Which kinds of target (Chromium's `TargetFilter`); none: its
    /// default, every kind below the session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<&'static [TargetFilter]>,
}

/// One entry of a `TargetFilter`: the first entry whose `type` matches (or
/// one without a type) decides whether a target is excluded.
#[derive(Serialize)]
pub struct TargetFilter {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub exclude: bool,
}

/// Shared workers, and nothing else (the browser-level auto-attach:
/// `browser.rs`).
pub const SHARED_WORKERS_ONLY: &[TargetFilter] = &[
    TargetFilter {
        kind: Some("shared_worker"),
        exclude: false,
    },
    TargetFilter {
        kind: None,
        exclude: true,
    },
];

impl Command for SetAutoAttach {
    const METHOD: &'static str = "Target.setAutoAttach";
    type Reply = Done;
}

/// `DOM.describeNode` of a node named by its backend id or by a JavaScript
/// object (one of the two), with its shadow roots (`pierce`, `depth` 1).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeNode<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_node_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<&'a str>,
    pub depth: i64,
    pub pierce: bool,
}

impl Command for DescribeNode<'_> {
    const METHOD: &'static str = "DOM.describeNode";
    type Reply = Described;
}

/// `DOM.resolveNode`: a node as a JavaScript object of `execution_context_id`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveNode {
    pub backend_node_id: i64,
    pub execution_context_id: i64,
}

impl Command for ResolveNode {
    const METHOD: &'static str = "DOM.resolveNode";
    type Reply = Resolved;
}

impl ResolveNode {
    /// The node's object id in the world, sent in `session`; `None` when
    /// the node is gone or Chromium cannot resolve it there.
    pub async fn object_id(&self, cdp: &Connection, session: &str, timeout: Duration) -> Option<String> {
        let resolved = cdp.send(Some(session), self, timeout).await;
        resolved
            .inspect_err(|e| tracing::debug!(error = %e, "a node could not be resolved"))
            .ok()?
            .object
            .object_id
    }
}

/// `DOM.getDocument`: the document's root known to DOM, which
/// `DOM.pushNodesByBackendIdsToFrontend` needs (the root itself unused).
#[derive(Serialize)]
pub struct GetDocument {
    pub depth: i64,
}

impl Command for GetDocument {
    const METHOD: &'static str = "DOM.getDocument";
    type Reply = Done;
}

/// `DOM.pushNodesByBackendIdsToFrontend`: the ids DOM and CSS know nodes
/// by, one per backend node id (`0` for a node gone).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushNodesByBackendIdsToFrontend<'a> {
    pub backend_node_ids: &'a [i64],
}

impl Command for PushNodesByBackendIdsToFrontend<'_> {
    const METHOD: &'static str = "DOM.pushNodesByBackendIdsToFrontend";
    type Reply = PushedNodes;
}

/// `Runtime.callFunctionOn`: `this` is the object, `arguments` objects of
/// the same world.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFunctionOn<'a> {
    pub object_id: &'a str,
    pub function_declaration: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<CallArgument<'a>>,
    pub return_by_value: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallArgument<'a> {
    pub object_id: &'a str,
}

impl Command for CallFunctionOn<'_> {
    const METHOD: &'static str = "Runtime.callFunctionOn";
    type Reply = Evaluated;
}

/// `Runtime.runIfWaitingForDebugger`: a target paused at its start runs.
#[derive(Serialize)]
pub struct RunIfWaitingForDebugger {}

impl Command for RunIfWaitingForDebugger {
    const METHOD: &'static str = "Runtime.runIfWaitingForDebugger";
    type Reply = Done;
}

/// `Page.handleJavaScriptDialog`.
#[derive(Serialize)]
pub struct HandleJavaScriptDialog {
    pub accept: bool,
}

impl Command for HandleJavaScriptDialog {
    const METHOD: &'static str = "Page.handleJavaScriptDialog";
    type Reply = Done;
}

#[derive(Serialize)]
pub struct Navigate<'a> {
    pub url: &'a str,
}

impl Command for Navigate<'_> {
    const METHOD: &'static str = "Page.navigate";
    type Reply = Navigated;
}

#[derive(Serialize)]
pub struct GetLayoutMetrics {}

impl Command for GetLayoutMetrics {
    const METHOD: &'static str = "Page.getLayoutMetrics";
    type Reply = LayoutMetrics;
}

/// `Page.captureScreenshot` as a PNG of `clip`; its answer is read from
/// its text (a tall page's PNG is tens of MiB).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureScreenshot {
    pub format: &'static str,
    pub capture_beyond_viewport: bool,
    pub from_surface: bool,
    pub optimize_for_speed: bool,
    pub clip: Clip,
}

/// A box of the page in CSS px, and the scale it is captured at.
#[derive(Serialize)]
pub struct Clip {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub scale: f64,
}

impl Command for CaptureScreenshot {
    const METHOD: &'static str = "Page.captureScreenshot";
    type Reply = Reply;
}

/// `DOMSnapshot.captureSnapshot`; its answer is read from its text by
/// the snapshot's own types.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureSnapshot<'a> {
    pub computed_styles: &'a [&'a str],
    pub include_paint_order: bool,
    #[serde(rename = "includeDOMRects")]
    pub include_dom_rects: bool,
}

impl Command for CaptureSnapshot<'_> {
    const METHOD: &'static str = "DOMSnapshot.captureSnapshot";
    type Reply = Reply;
}

/// `DOM.getFrameOwner`: the element that holds a frame.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetFrameOwner<'a> {
    pub frame_id: &'a str,
}

impl Command for GetFrameOwner<'_> {
    const METHOD: &'static str = "DOM.getFrameOwner";
    type Reply = FrameOwner;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetResponseBody<'a> {
    pub request_id: &'a str,
}

impl Command for GetResponseBody<'_> {
    const METHOD: &'static str = "Network.getResponseBody";
    type Reply = ResponseBody;
}

#[derive(Serialize)]
pub struct DomEnable {}

impl Command for DomEnable {
    const METHOD: &'static str = "DOM.enable";
    type Reply = Done;
}

#[derive(Serialize)]
pub struct DomDisable {}

impl Command for DomDisable {
    const METHOD: &'static str = "DOM.disable";
    type Reply = Done;
}

#[derive(Serialize)]
pub struct CssEnable {}

impl Command for CssEnable {
    const METHOD: &'static str = "CSS.enable";
    type Reply = Done;
}

#[derive(Serialize)]
pub struct CssDisable {}

impl Command for CssDisable {
    const METHOD: &'static str = "CSS.disable";
    type Reply = Done;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateIsolatedWorld<'a> {
    pub frame_id: &'a str,
    pub world_name: &'a str,
}

impl Command for CreateIsolatedWorld<'_> {
    const METHOD: &'static str = "Page.createIsolatedWorld";
    type Reply = IsolatedWorld;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cdp::testing::{answer, sent};

    #[test]
    fn each_command_sends_the_method_and_parameters_chromium_expects() {
        let cases = [
            (sent(PageEnable {}), ("Page.enable", json!({}))),
            (sent(RuntimeEnable {}), ("Runtime.enable", json!({}))),
            (sent(InspectorEnable {}), ("Inspector.enable", json!({}))),
            (sent(GetLayoutMetrics {}), ("Page.getLayoutMetrics", json!({}))),
            (
                sent(RunIfWaitingForDebugger {}),
                ("Runtime.runIfWaitingForDebugger", json!({})),
            ),
            (
                sent(AddScriptToEvaluateOnNewDocument {
                    source: "1",
                    world_name: None,
                }),
                ("Page.addScriptToEvaluateOnNewDocument", json!({"source": "1"})),
            ),
            (
                sent(AddScriptToEvaluateOnNewDocument {
                    source: "1",
                    world_name: Some("w"),
                }),
                (
                    "Page.addScriptToEvaluateOnNewDocument",
                    json!({"source": "1", "worldName": "w"}),
                ),
            ),
            (
                sent(Evaluate {
                    expression: "1",
                    context_id: None,
                    await_promise: false,
                    return_by_value: true,
                }),
                (
                    "Runtime.evaluate",
                    json!({"expression": "1", "awaitPromise": false, "returnByValue": true}),
                ),
            ),
            (
                sent(Evaluate {
                    expression: "1",
                    context_id: Some(7),
                    await_promise: true,
                    return_by_value: true,
                }),
                (
                    "Runtime.evaluate",
                    json!({"expression": "1", "contextId": 7, "awaitPromise": true, "returnByValue": true}),
                ),
            ),
            (
                sent(NetworkEnable {
                    max_total_buffer_size: 2,
                    max_resource_buffer_size: 1,
                }),
                (
                    "Network.enable",
                    json!({"maxTotalBufferSize": 2, "maxResourceBufferSize": 1}),
                ),
            ),
            (
                sent(SetAutoAttach {
                    auto_attach: true,
                    wait_for_debugger_on_start: true,
                    flatten: true,
                    filter: None,
                }),
                (
                    "Target.setAutoAttach",
                    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
                ),
            ),
            (
                sent(SetAutoAttach {
                    auto_attach: true,
                    wait_for_debugger_on_start: true,
                    flatten: true,
                    filter: Some(SHARED_WORKERS_ONLY),
                }),
                (
                    "Target.setAutoAttach",
                    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
                           "filter": [{"type": "shared_worker", "exclude": false}, {"exclude": true}]}),
                ),
            ),
            (
                sent(HandleJavaScriptDialog { accept: false }),
                ("Page.handleJavaScriptDialog", json!({"accept": false})),
            ),
            (
                sent(Navigate { url: "http://a/" }),
                ("Page.navigate", json!({"url": "http://a/"})),
            ),
            (
                sent(GetFrameOwner { frame_id: "F" }),
                ("DOM.getFrameOwner", json!({"frameId": "F"})),
            ),
            (
                sent(GetResponseBody { request_id: "R" }),
                ("Network.getResponseBody", json!({"requestId": "R"})),
            ),
            (
                sent(CaptureSnapshot {
                    computed_styles: &["display"],
                    include_paint_order: true,
                    include_dom_rects: true,
                }),
                (
                    "DOMSnapshot.captureSnapshot",
                    json!({"computedStyles": ["display"], "includePaintOrder": true, "includeDOMRects": true}),
                ),
            ),
            (
                sent(CaptureScreenshot {
                    format: "png",
                    capture_beyond_viewport: true,
                    from_surface: true,
                    optimize_for_speed: false,
                    clip: Clip {
                        x: 0.0,
                        y: 1.0,
                        width: 2.0,
                        height: 3.0,
                        scale: 0.5,
                    },
                }),
                (
                    "Page.captureScreenshot",
                    json!({"format": "png", "captureBeyondViewport": true, "fromSurface": true, "optimizeForSpeed": false,
                           "clip": {"x": 0.0, "y": 1.0, "width": 2.0, "height": 3.0, "scale": 0.5}}),
                ),
            ),
        ];
        for (sent, expected) in cases {
            assert_eq!(sent, expected);
        }
    }

    #[test]
    fn an_answer_without_a_field_chromium_always_sends_is_an_error() {
        assert_eq!(
            answer::<GetFrameOwner>(json!({"backendNodeId": 5}))
                .unwrap()
                .backend_node_id,
            5
        );
        assert!(answer::<GetFrameOwner>(json!({})).is_err());
        assert!(answer::<GetResponseBody>(json!({"body": "x"})).is_err());
        assert!(answer::<Evaluate>(json!({})).is_err(), "a result is always sent");
        // Page.navigate: the loader id, the error and the download flag may
        // each be absent (the worker does not read the frame id).
        let navigated = answer::<Navigate>(json!({"frameId": "F"})).unwrap();
        assert!(navigated.loader_id.is_none() && navigated.error_text.is_none() && !navigated.is_download);
        // A command that answers nothing reads any object.
        assert!(answer::<PageEnable>(json!({})).is_ok());
        assert!(answer::<HandleJavaScriptDialog>(json!({})).is_ok());
    }
}
