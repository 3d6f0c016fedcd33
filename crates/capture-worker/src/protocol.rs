//! The CDP events the worker reads, and the answers it reads most, typed. A
//! field Chromium always sends is required here, so an event or answer that
//! lacks it is an error someone sees (an event is logged and not applied),
//! not a silent `""` or `0`. Fields the protocol marks optional are
//! `Option`s. (What the page's own scripts answer stays `Value`: a page
//! may break it.)

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::cdp::Event;

/// One event the worker reads, by method.
#[derive(Debug)]
pub enum PageEvent {
    RequestWillBeSent(RequestWillBeSent),
    ResponseReceived(ResponseReceived),
    LoadingFinished(RequestEnded),
    LoadingFailed(RequestEnded),
    AttachedToTarget(AttachedToTarget),
    DetachedFromTarget(DetachedFromTarget),
    WebSocketCreated(WebSocketCreated),
    FontsUpdated(FontsUpdated),
    DialogOpening(DialogOpening),
    WindowOpen,
    LoadEventFired,
    TargetCrashed,
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
            "Page.javascriptDialogOpening" => Self::DialogOpening(typed(p)?),
            "Page.windowOpen" => Self::WindowOpen,
            "Page.loadEventFired" => Self::LoadEventFired,
            "Inspector.targetCrashed" => Self::TargetCrashed,
            _ => return Ok(None),
        }))
    }
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
    /// `iframe`, `worker`, `service_worker`, `page` …
    #[serde(rename = "type")]
    pub kind: String,
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
