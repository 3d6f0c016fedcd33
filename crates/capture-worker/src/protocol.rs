//! The CDP events the worker reads, and the answers to its commands, typed. A
//! field Chromium always sends is required here, so an event or answer that
//! lacks it is an error someone sees (an event is logged and not applied),
//! not a silent `""` or `0`. Fields the protocol marks optional are
//! `Option`s. (What the page's own scripts answer stays `Value`: a page
//! may break it.)

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

/// One event: its method and parameters.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
}

#[cfg(test)]
impl Event {
    /// An event as Chromium would send it (unit tests).
    pub fn new(method: &str, params: Value) -> Self {
        Self {
            method: method.into(),
            params,
        }
    }
}

/// One event the worker reads, by method.
#[derive(Debug)]
pub enum PageEvent {
    RequestWillBeSent(RequestWillBeSent),
    ResponseReceived(ResponseReceived),
    LoadingFinished(RequestEnded),
    LoadingFailed(LoadingFailed),
    AttachedToTarget(AttachedToTarget),
    DetachedFromTarget(DetachedFromTarget),
    WebSocketCreated(WebSocketCreated),
    FontsUpdated(FontsUpdated),
    StyleSheetAdded(StyleSheetAdded),
    DialogOpening(DialogOpening),
    WindowOpen,
    LoadEventFired,
    TargetCrashed,
    BindingCalled(BindingCalled),
    ExecutionContextCreated(ExecutionContextCreated),
    ExecutionContextDestroyed(ExecutionContextDestroyed),
    ExecutionContextsCleared,
}

impl PageEvent {
    /// The event, typed; `None` for a method the worker does not read, and
    /// for one it reads whose fields are missing, which is logged.
    pub fn read(event: &Event) -> Option<Self> {
        Self::parse(event).unwrap_or_else(|error| {
            tracing::warn!(method = %event.method, %error, "a browser event without a field it always has");
            None
        })
    }

    /// `Ok(None)` for a method the worker does not read.
    pub fn parse(event: &Event) -> Result<Option<Self>, serde_json::Error> {
        fn typed<'a, T: Deserialize<'a>>(params: &'a Value) -> Result<T, serde_json::Error> {
            T::deserialize(params)
        }
        let p = &event.params;
        Ok(Some(match event.method.as_str() {
            "Network.requestWillBeSent" => Self::RequestWillBeSent(typed(p)?),
            "Network.responseReceived" => Self::ResponseReceived(typed(p)?),
            "Network.loadingFinished" => Self::LoadingFinished(typed(p)?),
            "Network.loadingFailed" => Self::LoadingFailed(typed(p)?),
            "Target.attachedToTarget" => Self::AttachedToTarget(typed(p)?),
            "Target.detachedFromTarget" => Self::DetachedFromTarget(typed(p)?),
            "Network.webSocketCreated" => Self::WebSocketCreated(typed(p)?),
            "CSS.fontsUpdated" => Self::FontsUpdated(typed(p)?),
            "CSS.styleSheetAdded" => Self::StyleSheetAdded(typed(p)?),
            "Page.javascriptDialogOpening" => Self::DialogOpening(typed(p)?),
            "Page.windowOpen" => Self::WindowOpen,
            "Page.loadEventFired" => Self::LoadEventFired,
            "Inspector.targetCrashed" => Self::TargetCrashed,
            "Runtime.bindingCalled" => Self::BindingCalled(typed(p)?),
            "Runtime.executionContextCreated" => Self::ExecutionContextCreated(typed(p)?),
            "Runtime.executionContextDestroyed" => Self::ExecutionContextDestroyed(typed(p)?),
            "Runtime.executionContextsCleared" => Self::ExecutionContextsCleared,
            _ => return Ok(None),
        }))
    }
}

/// `Runtime.bindingCalled`: a world of the worker's called its binding.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingCalled {
    pub name: String,
    pub payload: String,
    pub execution_context_id: i64,
}

/// `Runtime.executionContextDestroyed`: a world is gone (its document
/// navigated away, its frame removed).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionContextDestroyed {
    pub execution_context_id: i64,
}

/// `Runtime.executionContextCreated`.
#[derive(Debug, Deserialize)]
pub struct ExecutionContextCreated {
    pub context: ExecutionContext,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionContext {
    pub id: i64,
    /// The world's name: empty for a frame's main world.
    pub name: String,
    pub aux_data: Option<ContextAuxData>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAuxData {
    pub frame_id: Option<String>,
    pub is_default: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestWillBeSent {
    pub request_id: String,
    pub request: Request,
    /// The resource type (`Document`, `Image`, `Media` …).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub frame_id: Option<String>,
    #[serde(default)]
    pub initiator: Option<Initiator>,
}

/// What started a request: `parser`, `script`, … or `other`, the browser
/// itself (a document's navigation, its favicon).
#[derive(Debug, Deserialize)]
pub struct Initiator {
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Deserialize)]
pub struct Request {
    pub url: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseReceived {
    pub request_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub response: Response,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub url: String,
    pub status: u16,
    pub mime_type: String,
    pub headers: HashMap<String, Value>,
}

impl Response {
    /// `Content-Disposition: attachment`: a download, not a page.
    pub fn is_attachment(&self) -> bool {
        self.headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("content-disposition")
                && value
                    .as_str()
                    .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("attachment"))
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestEnded {
    pub request_id: String,
}

/// `Network.loadingFailed`: a request that ended without loading.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadingFailed {
    pub request_id: String,
    /// The resource type (`Image`, `Font` …).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Chromium's network error, `net::ERR_…`.
    #[serde(default)]
    pub error_text: String,
    /// The page or the browser cancelled it (an image replaced, a frame
    /// removed): not a failure to report.
    #[serde(default)]
    pub canceled: bool,
    /// Why Chromium blocked it itself (`csp`, `mixed-content`, …).
    #[serde(default)]
    pub blocked_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedToTarget {
    pub session_id: String,
    pub target_info: TargetInfo,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfo {
    pub target_id: String,
    /// `iframe`, `worker`, `shared_worker`, `service_worker`, `page` …
    #[serde(rename = "type")]
    pub kind: String,
    /// The browser context it lives in (a shared worker, attached at the
    /// browser's level, finds its capture by it).
    #[serde(default)]
    pub browser_context_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetachedFromTarget {
    pub session_id: String,
}

#[derive(Debug, Deserialize)]
pub struct WebSocketCreated {
    pub url: String,
}

#[derive(Debug, Deserialize)]
pub struct FontsUpdated {
    /// Absent when Chromium only says that fonts changed.
    pub font: Option<FontFace>,
}

/// `CSS.styleSheetAdded`: a style sheet of the page (its own, a shadow
/// root's, a constructed one, one from another origin), as CSS reads it.
#[derive(Debug, Deserialize)]
pub struct StyleSheetAdded {
    pub header: StyleSheetHeader,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StyleSheetHeader {
    pub style_sheet_id: String,
    /// `regular` for the page's; `user-agent`, `injected`, `inspector`.
    pub origin: String,
    /// The backend id of its `<style>` or `<link>`; none for a
    /// constructed sheet.
    pub owner_node: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FontFace {
    pub platform_font_family: String,
    pub src: String,
    pub font_weight: String,
    pub font_style: String,
    pub unicode_range: String,
}

#[derive(Debug, Deserialize)]
pub struct DialogOpening {
    pub message: String,
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
}

// ---- Answers to the worker's commands (read with `Connection::ask`).

/// `Browser.getVersion`.
#[derive(Debug, Deserialize)]
pub struct BrowserVersion {
    /// E.g. `HeadlessChrome/156.0.8078.114`.
    pub product: String,
}

/// `Target.createBrowserContext`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedContext {
    pub browser_context_id: String,
}

/// `Target.createTarget`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedTarget {
    pub target_id: String,
}

/// `Target.attachToTarget`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attached {
    pub session_id: String,
}

/// `Runtime.evaluate` and `Runtime.callFunctionOn`: what the expression
/// gave, by value, unless it threw.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluated {
    pub result: RemoteObject,
    pub exception_details: Option<serde::de::IgnoredAny>,
}

impl Evaluated {
    /// The value, when the expression did not throw and gave one.
    pub fn value(self) -> Option<Value> {
        self.exception_details
            .is_none()
            .then_some(self.result.value)
            .flatten()
            .filter(|v| !v.is_null())
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteObject {
    /// Given when asked by value (a page's own value: it stays `Value`).
    pub value: Option<Value>,
    /// Given for an object not asked by value.
    pub object_id: Option<String>,
}

/// `DOM.resolveNode`.
#[derive(Debug, Deserialize)]
pub struct Resolved {
    pub object: RemoteObject,
}

/// `Page.getLayoutMetrics`: the content size in CSS px (`cssContentSize`,
/// which older Chromium lacks, else `contentSize`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutMetrics {
    pub css_content_size: Option<Size>,
    pub content_size: Size,
    pub css_visual_viewport: VisualViewport,
}

/// The part of the page shown, in CSS px, and its scale: on a phone, a page
/// laid out wider than the viewport is shown at a scale below 1.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VisualViewport {
    pub client_width: f64,
    pub scale: f64,
}

#[derive(Debug, Deserialize)]
pub struct Size {
    pub height: f64,
}

/// `Page.captureScreenshot`, decoded straight from the answer's text: a tall
/// page's PNG is tens of MiB.
#[derive(Debug, Deserialize)]
pub struct Screenshot<'a> {
    #[serde(borrow)]
    pub data: std::borrow::Cow<'a, str>,
}

/// `Page.createIsolatedWorld`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IsolatedWorld {
    pub execution_context_id: i64,
}

/// `DOM.pushNodesByBackendIdsToFrontend`: `0` for a node that is gone.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushedNodes {
    pub node_ids: Vec<i64>,
}

/// `DOM.describeNode`: whether the element hosts shadow roots.
#[derive(Debug, Deserialize)]
pub struct Described {
    pub node: DescribedNode,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribedNode {
    #[serde(default)]
    pub shadow_roots: Vec<ShadowRoot>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowRoot {
    pub backend_node_id: i64,
}

/// `DOM.getFrameOwner`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameOwner {
    pub backend_node_id: i64,
}

/// `Network.getResponseBody`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseBody {
    pub body: String,
    pub base64_encoded: bool,
}

/// `Page.navigate`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Navigated {
    /// Absent for a navigation within the same document.
    pub loader_id: Option<String>,
    /// Chromium's `net::ERR_…` when the navigation failed.
    pub error_text: Option<String>,
    /// Chromium took the document for a download.
    #[serde(default)]
    pub is_download: bool,
}

/// `CSS.getPlatformFontsForNode`'s answer.
#[derive(Debug, Deserialize)]
pub struct PlatformFonts {
    pub fonts: Vec<PlatformFontUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformFontUsage {
    pub family_name: String,
    pub post_script_name: String,
    pub is_custom_font: bool,
    pub glyph_count: u64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_missing_field_chromium_always_sends_is_an_error_not_a_default() {
        // No status: before, a silent 0.
        let response = Event::new(
            "Network.responseReceived",
            json!({"requestId": "1", "type": "Document", "response": {"url": "http://a/", "mimeType": "text/html", "headers": {}}}),
        );
        let error = PageEvent::parse(&response).unwrap_err();
        assert!(error.to_string().contains("status"), "{error}");
        // No request id: before, a silent "".
        assert!(PageEvent::parse(&Event::new("Network.loadingFinished", json!({}))).is_err());
        // Optional fields may be absent.
        let sent = Event::new(
            "Network.requestWillBeSent",
            json!({"requestId": "1", "request": {"url": "http://a/"}}),
        );
        assert!(matches!(
            PageEvent::parse(&sent).unwrap(),
            Some(PageEvent::RequestWillBeSent(RequestWillBeSent {
                kind: None,
                frame_id: None,
                ..
            }))
        ));
        assert!(matches!(
            PageEvent::parse(&Event::new("CSS.fontsUpdated", json!({}))).unwrap(),
            Some(PageEvent::FontsUpdated(FontsUpdated { font: None }))
        ));
        // A method the worker does not read is nothing.
        assert!(PageEvent::parse(&Event::new("Network.dataReceived", json!({})))
            .unwrap()
            .is_none());
    }

    #[test]
    fn answers_read_what_chromium_sends_and_what_it_may_leave_out() {
        let evaluated = |answer: Value| Evaluated::deserialize(answer).unwrap().value();
        assert_eq!(
            evaluated(json!({"result": {"type": "number", "value": 1}})),
            Some(json!(1))
        );
        // Threw, gave null, gave nothing (undefined): no value.
        let threw = json!({"result": {"type": "object"}, "exceptionDetails": {"text": "Uncaught"}});
        assert_eq!(evaluated(threw), None);
        assert_eq!(evaluated(json!({"result": {"type": "object", "value": null}})), None);
        assert_eq!(evaluated(json!({"result": {"type": "undefined"}})), None);
        assert!(Evaluated::deserialize(json!({})).is_err(), "a result is always sent");

        let metrics = |answer: Value| {
            let m = LayoutMetrics::deserialize(answer).unwrap();
            m.css_content_size.unwrap_or(m.content_size).height
        };
        let size = |height| json!({"x": 0, "y": 0, "width": 800, "height": height});
        let visual = json!({"offsetX": 0, "offsetY": 0, "pageX": 0, "pageY": 0, "clientWidth": 980.0,
                            "clientHeight": 2122.0, "scale": 0.398, "zoom": 1});
        assert_eq!(
            metrics(json!({"cssContentSize": size(900.5), "contentSize": size(1801.0), "cssVisualViewport": visual})),
            900.5
        );
        assert_eq!(
            metrics(json!({"contentSize": size(1801.0), "cssVisualViewport": visual})),
            1801.0
        );
        let m = LayoutMetrics::deserialize(json!({"contentSize": size(1.0), "cssVisualViewport": visual})).unwrap();
        assert_eq!(
            (m.css_visual_viewport.client_width, m.css_visual_viewport.scale),
            (980.0, 0.398)
        );
        assert!(
            LayoutMetrics::deserialize(json!({"contentSize": size(1.0)})).is_err(),
            "Chromium always sends the visual viewport"
        );
        assert!(LayoutMetrics::deserialize(json!({"cssContentSize": size(1.0)})).is_err());

        let described = |answer: Value| Described::deserialize(answer).unwrap().node.shadow_roots.len();
        assert_eq!(
            described(json!({"node": {"nodeId": 0, "shadowRoots": [{"nodeId": 0, "backendNodeId": 7}]}})),
            1
        );
        assert_eq!(described(json!({"node": {"nodeId": 0}})), 0);
        assert!(
            ResponseBody::deserialize(json!({"body": "x"})).is_err(),
            "base64Encoded is always sent"
        );
    }

    #[test]
    fn an_attachment_is_told_by_its_content_disposition_in_any_case() {
        let response = |headers: Value| Response {
            url: "http://a/".into(),
            status: 200,
            mime_type: "text/html".into(),
            headers: serde_json::from_value(headers).unwrap(),
        };
        assert!(response(json!({"Content-Disposition": " Attachment; filename=a.html"})).is_attachment());
        assert!(response(json!({"content-disposition": "attachment"})).is_attachment());
        assert!(!response(json!({"content-disposition": "inline"})).is_attachment());
        assert!(!response(json!({})).is_attachment());
    }
}
