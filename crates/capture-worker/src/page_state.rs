//! What the CDP events of a page's sessions told so far: [`PageState`],
//! fed one event at a time by `page::watch` from the page's own session and
//! from every cross-site frame and worker attached below it. It knows the
//! main documents' responses, the load event and crashes, the dialogs the
//! page opened, the popups it tried to open, the requests in flight (network idle), the responses worth
//! keeping as assets, the cross-site frames and the web fonts Chromium
//! loaded.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use page_import_contract::capture::{AssetKind, Dialog, DialogKind, MAX_DIALOGS, MAX_DIALOG_MESSAGE_CHARS};

use crate::egress::authority_of;
use crate::failed_requests::Failures;
#[cfg(test)]
use crate::protocol::Event;
use crate::protocol::{PageEvent, StyleSheetHeader};

/// What the events of the page's sessions told so far.
#[derive(Default)]
pub struct PageState {
    /// Main-frame documents by request id.
    pub(crate) documents: HashMap<String, DocumentResponse>,
    /// The JavaScript dialogs the page opened (at most `MAX_DIALOGS`).
    pub(crate) dialogs: Vec<Dialog>,
    /// The popups the page tried to open (`Page.windowOpen`), each
    /// refused by Chromium's popup blocker before it loaded anything: the
    /// worker never gives the page a user gesture.
    pub(crate) popups: u32,
    pub(crate) load_fired: bool,
    pub(crate) crashed: bool,
    /// Requests in flight, by request id.
    in_flight: HashMap<String, InFlight>,
    last_activity: Option<Instant>,
    pub(crate) resources: HashMap<String, Resource>,
    /// Cross-site frames attached in their own sessions, parents first.
    pub(crate) frames: Vec<Frame>,
    /// Web fonts Chromium loaded (`CSS.fontsUpdated`).
    pub(crate) web_fonts: Vec<WebFont>,
    /// `host:port` of everything the page's documents asked for.
    requested: HashSet<String>,
    /// The requests that did not load, told once the capture is taken.
    pub(crate) failures: Failures,
    /// The style sheets CSS reported (`CSS.styleSheetAdded`), by session.
    pub(crate) style_sheets: HashMap<String, Vec<StyleSheetHeader>>,
}

/// How the main document was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentResponse {
    pub status: u16,
    /// After redirects.
    pub url: String,
    /// As Chromium read it (`Content-Type`, or sniffed).
    pub mime_type: String,
    /// `Content-Disposition: attachment`: a download, not a page.
    pub attachment: bool,
}

/// A cross-site frame's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub session: String,
    pub frame_id: String,
    /// The session of the frame (or page) that holds it.
    pub parent_session: String,
}

/// A web font Chromium loaded: the family its file names, the face its
/// `@font-face` rule declared, and the file's URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebFont {
    pub family: String,
    pub weight: String,
    pub style: String,
    /// The code points it is for (`unicode-range`), inclusive.
    pub unicode_range: Vec<(u32, u32)>,
    pub src: String,
}

/// `unicode-range` as CSS writes it: `U+0-10FFFF, U+0131, U+4??`.
pub(crate) fn unicode_range(text: &str) -> Vec<(u32, u32)> {
    let ranges: Vec<(u32, u32)> = text
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            let hex = part.strip_prefix("U+").or_else(|| part.strip_prefix("u+"))?;
            let number = |h: &str| u32::from_str_radix(h, 16).ok();
            match hex.split_once('-') {
                Some((low, high)) => Some((number(low)?, number(high)?)),
                None => Some((number(&hex.replace('?', "0"))?, number(&hex.replace('?', "F"))?)),
            }
        })
        .collect();
    if ranges.is_empty() {
        vec![(0, 0x10FFFF)]
    } else {
        ranges
    }
}

/// A request in flight: the session that saw it start (a frame's requests
/// end with its session), and, for a document, the frame it loads.
#[derive(Debug)]
struct InFlight {
    session: String,
    frame: Option<String>,
}

/// A response worth keeping as an asset, and the session that can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resource {
    pub(crate) url: String,
    pub(crate) kind: AssetKind,
    pub(crate) mime_type: String,
    pub(crate) session: String,
    pub(crate) finished: bool,
}

impl PageState {
    /// [`PageState::record`] of an event as Chromium sends it (unit tests).
    /// An event the worker reads whose fields are missing is logged and left
    /// out.
    #[cfg(test)]
    pub fn apply(&mut self, session: &str, main: bool, event: &Event) {
        if let Some(event) = PageEvent::read(event) {
            self.record(session, main, event);
        }
    }

    /// Records what `event` of `session` (`main`: the page's own session)
    /// tells about the page.
    pub fn record(&mut self, session: &str, main: bool, event: PageEvent) {
        match event {
            PageEvent::RequestWillBeSent(sent) => {
                self.requested.extend(authority_of(&sent.request.url));
                // The browser's own favicon fetch is no part of the page.
                let browsers_own =
                    sent.kind.as_deref() == Some("Other") && sent.initiator.as_ref().is_some_and(|i| i.kind == "other");
                if !browsers_own {
                    self.failures
                        .sent(&sent.request_id, &sent.request.url, sent.kind.as_deref());
                }
                // Media streams as long as it plays (a looping background
                // video): it is motion, not a load to wait for.
                if sent.kind.as_deref() == Some("Media") {
                    return;
                }
                let frame = if sent.kind.as_deref() == Some("Document") {
                    sent.frame_id
                } else {
                    None
                };
                let session = session.to_owned();
                self.in_flight.insert(sent.request_id, InFlight { session, frame });
                self.last_activity = Some(Instant::now());
            }
            PageEvent::ResponseReceived(received) => {
                let response = received.response;
                self.failures
                    .answered(&received.request_id, &response.url, &received.kind, response.status);
                let kind = match received.kind.as_str() {
                    "Document" => {
                        if main {
                            let attachment = response.is_attachment();
                            self.documents.insert(
                                received.request_id,
                                DocumentResponse {
                                    status: response.status,
                                    url: response.url,
                                    mime_type: response.mime_type,
                                    attachment,
                                },
                            );
                        }
                        return;
                    }
                    "Image" => AssetKind::Image,
                    "Stylesheet" => AssetKind::Stylesheet,
                    "Font" => AssetKind::Font,
                    _ => return,
                };
                if response.url.starts_with("http") && (200..300).contains(&response.status) {
                    self.resources.insert(
                        received.request_id,
                        Resource {
                            url: response.url,
                            kind,
                            mime_type: response.mime_type,
                            session: session.to_owned(),
                            finished: false,
                        },
                    );
                }
            }
            PageEvent::LoadingFinished(ended) => {
                self.failures.finished(&ended.request_id);
                self.in_flight.remove(&ended.request_id);
                self.last_activity = Some(Instant::now());
                if let Some(resource) = self.resources.get_mut(&ended.request_id) {
                    resource.finished = true;
                }
            }
            PageEvent::LoadingFailed(ended) => {
                self.failures.failed(&ended);
                self.in_flight.remove(&ended.request_id);
                self.last_activity = Some(Instant::now());
            }
            PageEvent::AttachedToTarget(attached) if attached.target_info.kind == "iframe" => {
                let frame_id = attached.target_info.target_id;
                // The frame's own process finishes loading its document and
                // reports it in the frame's session: the request the parent
                // saw start is no longer the parent's to wait for.
                self.in_flight
                    .retain(|_, request| request.frame.as_deref() != Some(frame_id.as_str()));
                self.frames.push(Frame {
                    session: attached.session_id,
                    frame_id,
                    parent_session: session.to_owned(),
                });
                self.last_activity = Some(Instant::now());
            }
            PageEvent::DetachedFromTarget(detached) => {
                self.frames.retain(|f| f.session != detached.session_id);
                // A frame removed (a CMP's frame once its choice was made)
                // ends no request it had started: they are not waited for.
                let before = self.in_flight.len();
                self.in_flight
                    .retain(|_, request| request.session != detached.session_id);
                if self.in_flight.len() != before {
                    self.last_activity = Some(Instant::now());
                }
            }
            PageEvent::WebSocketCreated(created) => {
                self.requested.extend(authority_of(&created.url));
            }
            PageEvent::FontsUpdated(updated) => {
                if let Some(font) = updated.font {
                    self.web_fonts.push(WebFont {
                        family: font.platform_font_family,
                        weight: font.font_weight,
                        style: font.font_style,
                        unicode_range: unicode_range(&font.unicode_range),
                        src: font.src,
                    });
                }
            }
            PageEvent::StyleSheetAdded(added) => {
                let sheets = self.style_sheets.entry(session.to_owned()).or_default();
                if !sheets.iter().any(|s| s.style_sheet_id == added.header.style_sheet_id) {
                    sheets.push(added.header);
                }
            }
            PageEvent::DialogOpening(dialog) if main && self.dialogs.len() < MAX_DIALOGS => {
                let kind = match dialog.kind.as_str() {
                    "confirm" => DialogKind::Confirm,
                    "prompt" => DialogKind::Prompt,
                    "beforeunload" => DialogKind::Beforeunload,
                    _ => DialogKind::Alert,
                };
                self.dialogs.push(Dialog {
                    kind,
                    message: dialog.message.chars().take(MAX_DIALOG_MESSAGE_CHARS).collect(),
                });
            }
            PageEvent::WindowOpen if main => self.popups += 1,
            PageEvent::LoadEventFired if main => self.load_fired = true,
            PageEvent::TargetCrashed if main => self.crashed = true,
            _ => {}
        }
    }

    /// How long until the network is idle for `quiet` if nothing starts
    /// meanwhile: zero when it is; [`Duration::MAX`] while a request is
    /// in flight (its end is not known).
    pub fn network_idle_in(&self, quiet: Duration) -> Duration {
        if !self.in_flight.is_empty() {
            return Duration::MAX;
        }
        self.last_activity
            .map_or(Duration::ZERO, |t| quiet.saturating_sub(t.elapsed()))
    }

    /// Whether a document of the page's own session was answered, so that
    /// a script of the page may be running. Until then the page is the
    /// blank one its tab opened with, waiting on the network (a server that
    /// accepted the connection and never answered): a deadline missed then
    /// is the navigation's, never a stuck script's. (A main document that
    /// redirects is answered at its last hop; one Chromium could not load
    /// ends the navigation with its error instead.)
    pub fn document_answered(&self) -> bool {
        !self.documents.is_empty()
    }

    /// Whether the page's documents asked for anything at `authority`
    /// (`host:port`, as the egress proxy names a tunnel).
    pub fn requested(&self, authority: &str) -> bool {
        self.requested.contains(authority)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::page::NETWORK_IDLE_PERIOD;

    #[test]
    fn media_that_streams_is_not_a_request_to_wait_for() {
        let mut state = PageState::default();
        state.apply(
            "main",
            true,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "v", "type": "Media", "request": {"url": "http://a.test/loop.webm"}}),
            ),
        );
        assert!(
            state.network_idle_in(Duration::ZERO).is_zero(),
            "a playing video holds nothing"
        );
        state.apply(
            "main",
            true,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "i", "type": "Image", "request": {"url": "http://a.test/a.png"}}),
            ),
        );
        assert!(!state.network_idle_in(Duration::ZERO).is_zero(), "an image still does");
    }

    #[test]
    fn a_removed_frames_requests_are_not_waited_for() {
        let mut state = PageState::default();
        state.apply(
            "F",
            false,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "9", "type": "XHR", "request": {"url": "http://cmp.test/poll"}}),
            ),
        );
        assert!(!state.network_idle_in(Duration::ZERO).is_zero());
        state.apply(
            "P",
            true,
            &Event::new("Target.detachedFromTarget", json!({"sessionId": "F"})),
        );
        assert!(
            state.network_idle_in(Duration::ZERO).is_zero(),
            "the frame's session ended with it"
        );
    }

    #[test]
    fn network_idle_waits_for_every_request_and_a_quiet_period() {
        let mut state = PageState::default();
        assert!(
            state.network_idle_in(NETWORK_IDLE_PERIOD).is_zero(),
            "nothing ever happened"
        );
        state.apply(
            "P",
            true,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "1", "type": "Image", "request": {"url": "http://a.test/1.png"}}),
            ),
        );
        assert!(
            !state.network_idle_in(Duration::ZERO).is_zero(),
            "a request is in flight"
        );
        state.apply(
            "P",
            true,
            &Event::new("Network.loadingFinished", json!({"requestId": "1"})),
        );
        assert!(state.network_idle_in(Duration::ZERO).is_zero());
        assert!(
            !state.network_idle_in(Duration::from_secs(60)).is_zero(),
            "not quiet long enough yet"
        );
        state.apply(
            "P",
            true,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "2", "request": {"url": "http://a.test/2"}}),
            ),
        );
        state.apply(
            "P",
            true,
            &Event::new(
                "Network.loadingFailed",
                json!({"requestId": "2", "request": {"url": "http://a.test/2"}}),
            ),
        );
        assert!(
            state.network_idle_in(Duration::ZERO).is_zero(),
            "a failed request is over too"
        );
    }

    #[test]
    fn dialogs_are_listed_in_order_their_messages_cut_and_their_number_bounded() {
        let mut state = PageState::default();
        let dialog = |kind: &str, message: &str| {
            Event::new(
                "Page.javascriptDialogOpening",
                json!({"type": kind, "message": message, "url": "http://page/"}),
            )
        };
        state.apply("F", false, &dialog("alert", "from a frame's session"));
        state.apply("P", true, &dialog("confirm", "Sure?"));
        state.apply("P", true, &dialog("prompt", &"é".repeat(1_500)));
        for _ in 0..200 {
            state.apply("P", true, &dialog("beforeunload", ""));
        }
        assert_eq!(state.dialogs.len(), MAX_DIALOGS);
        assert_eq!(
            state.dialogs[0],
            Dialog {
                kind: DialogKind::Confirm,
                message: "Sure?".into()
            }
        );
        assert_eq!(state.dialogs[1].kind, DialogKind::Prompt);
        assert_eq!(state.dialogs[1].message, "é".repeat(MAX_DIALOG_MESSAGE_CHARS));
        assert_eq!(state.dialogs[99].kind, DialogKind::Beforeunload);
    }

    #[test]
    fn main_documents_load_and_crashes_come_from_the_page_s_own_session_only() {
        let mut state = PageState::default();
        let document = |url: &str, status: u16| {
            Event::new(
                "Network.responseReceived",
                json!({"requestId": "L1", "type": "Document", "response": {
                    "url": url, "status": status, "mimeType": "text/html",
                    "headers": {"Content-Disposition": " Attachment; filename=a.html"},
                }}),
            )
        };
        state.apply("F", false, &document("http://frame/", 404));
        state.apply("F", false, &Event::new("Page.loadEventFired", json!({})));
        state.apply("F", false, &Event::new("Inspector.targetCrashed", json!({})));
        assert!(state.documents.is_empty() && !state.load_fired && !state.crashed);
        state.apply("P", true, &document("http://page/", 200));
        state.apply("P", true, &Event::new("Page.loadEventFired", json!({})));
        assert_eq!(
            state.documents["L1"],
            DocumentResponse {
                status: 200,
                url: "http://page/".into(),
                mime_type: "text/html".into(),
                attachment: true,
            }
        );
        assert!(state.load_fired);
        state.apply("P", true, &Event::new("Inspector.targetCrashed", json!({})));
        assert!(state.crashed);
    }

    #[test]
    fn only_a_page_whose_document_was_answered_can_be_stuck_in_its_script() {
        let mut state = PageState::default();
        assert!(!state.document_answered(), "the blank tab");
        state.apply(
            "P",
            true,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "L1", "type": "Document", "frameId": "MAIN", "request": {"url": "http://page/"}}),
            ),
        );
        assert!(!state.document_answered(), "asked, and the server never answered");
        let document = Event::new(
            "Network.responseReceived",
            json!({"requestId": "L1", "type": "Document", "response": {
                "url": "http://page/", "status": 200, "mimeType": "text/html", "headers": {},
            }}),
        );
        state.apply("F", false, &document);
        assert!(
            !state.document_answered(),
            "a cross-site frame's document is not the page's"
        );
        state.apply("P", true, &document);
        assert!(state.document_answered());
    }

    #[test]
    fn resources_remember_the_session_that_can_read_them_and_only_2xx_http_is_kept() {
        let mut state = PageState::default();
        let response = |id: &str, kind: &str, url: &str, status: u16| {
            Event::new(
                "Network.responseReceived",
                json!({"requestId": id, "type": kind, "response": {"url": url, "status": status, "mimeType": "image/png", "headers": {}}}),
            )
        };
        state.apply("F", false, &response("1", "Image", "http://frame/a.png", 200));
        state.apply("P", true, &response("2", "Image", "http://page/missing.png", 404));
        state.apply("P", true, &response("3", "Image", "data:image/png;base64,AA", 200));
        state.apply("P", true, &response("4", "Script", "http://page/app.js", 200));
        assert_eq!(state.resources.len(), 1);
        assert!(!state.resources["1"].finished);
        state.apply(
            "F",
            false,
            &Event::new("Network.loadingFinished", json!({"requestId": "1"})),
        );
        let kept = &state.resources["1"];
        assert_eq!(
            (kept.session.as_str(), kept.kind, kept.finished),
            ("F", AssetKind::Image, true)
        );
    }

    #[test]
    fn a_cross_site_frame_is_tracked_by_session_and_its_document_request_is_handed_over() {
        let mut state = PageState::default();
        // The parent sees the frame's document request start ...
        state.apply(
            "P",
            true,
            &Event::new(
                "Network.requestWillBeSent",
                json!({"requestId": "D", "type": "Document", "frameId": "FRAME1", "request": {"url": "http://frame.test/"}}),
            ),
        );
        assert!(!state.network_idle_in(Duration::ZERO).is_zero());
        // ... and the frame's own process finishes it.
        let attached = |session: &str, target: &str, kind: &str| {
            Event::new(
                "Target.attachedToTarget",
                json!({"sessionId": session, "targetInfo": {"targetId": target, "type": kind}}),
            )
        };
        state.apply("P", true, &attached("S1", "FRAME1", "iframe"));
        assert!(state.network_idle_in(Duration::ZERO).is_zero(), "{:?}", state.in_flight);
        state.apply("S1", false, &attached("S2", "FRAME2", "iframe"));
        state.apply("P", true, &attached("W", "WORKER", "worker"));
        assert_eq!(
            state.frames,
            [
                Frame {
                    session: "S1".into(),
                    frame_id: "FRAME1".into(),
                    parent_session: "P".into()
                },
                Frame {
                    session: "S2".into(),
                    frame_id: "FRAME2".into(),
                    parent_session: "S1".into()
                },
            ],
            "frames only, nested ones under their parent"
        );
        state.apply(
            "S1",
            false,
            &Event::new("Target.detachedFromTarget", json!({"sessionId": "S2"})),
        );
        assert_eq!(state.frames.len(), 1);
    }
}
