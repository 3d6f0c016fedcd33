//! `capture.json`, the manifest a worker writes last under an attempt's
//! prefix (SPEC §10, with §11's additions: `manifestVersion` 2).
//!
//! These types are the manifest's one definition: the worker serializes
//! them, and the JSON Schema that consumers in any language read
//! (`crates/contract/capture.schema.json`) is generated from them and checked
//! current by a unit test (`UPDATE_SCHEMA=1 cargo test -p page-import-contract
//! capture_schema` rewrites it). Strings borrow from what the worker parsed,
//! so a 25 000-node page is not copied to be written.
//!
//! Optional keys are absent where a node has nothing to say, so small pages
//! stay small.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::job::{ColorScheme, Viewport};
use crate::manifest::ManifestIdentity;

/// The layout this module describes.
pub const MANIFEST_VERSION: u32 = 2;

/// Where each artifact of an attempt lives, below the job's prefix.
pub const MANIFEST_OBJECT: &str = "capture.json";
pub const FAILURE_OBJECT: &str = "failure.json";
pub const SCREENSHOT_OBJECT: &str = "screenshot.png";
/// Content-addressed assets: `assets/<sha256>.<ext>`.
pub fn asset_object(sha256_hex: &str, extension: &str) -> String {
    format!("assets/{sha256_hex}.{extension}")
}

/// A completed capture.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    title = "capture.json",
    description = "A completed capture (Page Import SPEC §10 and §11)."
)]
pub struct CaptureManifest<'a> {
    /// `schemaVersion`, `pageImportId`, `attempt`, `nonce`, first.
    #[serde(flatten)]
    pub identity: ManifestIdentity<'a>,
    /// The layout of the rest of this document: 2 (SPEC §11).
    #[schemars(extend("const" = 2))]
    pub manifest_version: u32,
    /// RFC 3339, UTC.
    pub captured_at: String,
    pub worker: WorkerInfo<'a>,
    pub source: SourceInfo<'a>,
    pub viewport: Viewport,
    /// The reader the page was shown to (SPEC §14), as applied.
    pub emulation: Emulation<'a>,
    /// What was done about a consent banner (SPEC §14).
    pub consent: ConsentInfo,
    pub page: PageInfo,
    pub readiness: Readiness<'a>,
    pub screenshot: ScreenshotInfo<'a>,
    /// One entry per stored object.
    pub assets: Vec<Asset<'a>>,
    /// `document.fonts` of the page: the font faces it declared or loaded.
    pub fonts: Vec<FontFace>,
    /// Requests the page made that the egress rules refused: the first
    /// 1 000 refused (SPEC §10); `page.blockedRequestsOmitted` counts the
    /// rest.
    #[schemars(length(max = 1000))]
    pub blocked_requests: &'a [BlockedRequest],
    /// Requests of the capture that did not load for another reason than
    /// the egress rules (SPEC §11 "What did not load"): the first 1 000;
    /// `page.failedRequestsOmitted` counts the rest.
    #[schemars(length(max = 1000))]
    pub failed_requests: &'a [FailedRequest],
    /// The JavaScript dialogs the page opened, in order, each answered at
    /// once (dismissed; `prompt` got no text): at most 100.
    pub dialogs: &'a [Dialog],
    pub timings: &'a Timings,
    pub dom: Dom<'a>,
}

/// The device, colour scheme, language and clock the page saw (SPEC §14).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Emulation<'a> {
    /// A phone or tablet (mobile user agent, touch, `<meta name="viewport">`).
    pub mobile: bool,
    pub color_scheme: ColorScheme,
    /// The BCP 47 tag of `Accept-Language`, `navigator.language` and `Intl`.
    pub locale: &'a str,
    /// The IANA zone of `Date` and `Intl`.
    pub time_zone: &'a str,
    /// The `User-Agent` every request and `navigator.userAgent` carried.
    pub user_agent: &'a str,
}

/// The consent banner: the CMP a rule recognized, what became of its
/// popup, and the time the capture spent on it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConsentInfo {
    /// The name of the rule that recognized the CMP (autoconsent's, or
    /// ours), `generic` for a banner no rule knows that the capture found
    /// by what it is (SPEC §14 "The long tail"), or null when there was
    /// none.
    pub cmp: Option<String>,
    pub outcome: ConsentOutcome,
    /// Milliseconds the banner cost: from its popup's detection to the
    /// opt-out's result, or to the end of the 1.5 s budget; 0 without a popup.
    pub ms: u64,
    /// In an import set (SPEC §15), the id of the earlier member whose
    /// decline the CMP remembered: this page showed no banner (`outcome`
    /// `none`) because that member declined it in the same browser
    /// context. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 255))]
    pub from: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConsentOutcome {
    /// Declined through the CMP's own controls; its banner is gone.
    Declined,
    /// Recognized but not declined in time (or not declinable): hidden, its
    /// scroll lock released.
    Hidden,
    /// No consent popup was open.
    None,
    /// `consent: "keep"`: nothing was done; a banner is in the capture.
    Kept,
}

impl ConsentOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Declined => "declined",
            Self::Hidden => "hidden",
            Self::None => "none",
            Self::Kept => "kept",
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct WorkerInfo<'a> {
    pub version: &'a str,
    /// Chromium's product string, e.g. `Chrome/156.0.8078.114`.
    pub browser: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo<'a> {
    pub requested_url: &'a str,
    pub final_url: &'a str,
    pub http_status: Option<u16>,
    pub title: &'a str,
}

/// The page: its heights in CSS px, the popups it opened, and the refused
/// requests `blockedRequests` leaves out.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    /// The width the page laid out at (CSS px): the viewport's on a desktop;
    /// on a phone, 980 for a page without `<meta name="viewport">` (SPEC
    /// §14), or wider for content that overflows.
    pub layout_width: u32,
    /// How the page is scaled to fit the viewport, as a phone shows it: 1
    /// on a desktop; `viewport.width / layoutWidth` on a phone. Screenshot
    /// pixels = CSS px × `scale` × `viewport.deviceScaleFactor`; every box
    /// in `dom` is in CSS px.
    pub scale: f64,
    /// The page's height, read right before the screenshot.
    pub content_height: u32,
    pub captured_height: u32,
    /// The page was taller than `CAPTURE_MAX_HEIGHT_PX` and was cut.
    pub truncated: bool,
    /// The popups the page opened (`window.open`, `target=_blank`), each
    /// closed before it loaded anything (SPEC §10).
    pub popups_closed: u32,
    /// The requests the page made that the egress rules refused past the
    /// 1 000 that `blockedRequests` lists (SPEC §10); 0 when none were
    /// left out.
    pub blocked_requests_omitted: u64,
    /// The requests that failed past the 1 000 that `failedRequests` lists;
    /// 0 when none were left out.
    pub failed_requests_omitted: u64,
    /// The interactive elements whose states were examined (SPEC §11
    /// "Interaction states"); 0 when none.
    pub states_examined: u32,
    /// Interactive elements were left unexamined: past the first 500, or
    /// past the 1.5 s budget.
    pub states_cut: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Readiness<'a> {
    pub ready_selector: Option<&'a str>,
    pub matched: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScreenshotInfo<'a> {
    pub key: &'a str,
    pub pixel_width: u32,
    pub pixel_height: u32,
    /// 64 lowercase hex digits.
    pub sha256: String,
}

/// A stored object of the page: an image, stylesheet or font it loaded, or
/// the pixels of a canvas or video as drawn at capture time.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Asset<'a> {
    /// Where the page loaded it from; absent for canvas and video pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<&'a str>,
    /// Other URLs the page loaded the same bytes from (a `srcset`'s
    /// candidates that are one file, a `?v=` copy): every image URL the page
    /// drew is `url` or one of these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_urls: Vec<&'a str>,
    pub kind: AssetKind,
    pub mime_type: &'a str,
    pub bytes: usize,
    /// 64 lowercase hex digits.
    pub sha256: String,
    /// The object's key: `<prefix>assets/<sha256>.<ext>`.
    pub key: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AssetKind {
    Image,
    Stylesheet,
    Font,
    /// A PNG of a `<canvas>`'s pixels.
    Canvas,
    /// A PNG of a `<video>`'s current frame.
    Video,
}

/// One entry of `document.fonts`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FontFace {
    pub family: String,
    pub style: String,
    pub weight: String,
    /// `unloaded`, `loading`, `loaded` or `error`.
    pub status: String,
}

/// At most this many dialogs are listed, each message cut to
/// [`MAX_DIALOG_MESSAGE_CHARS`] characters (SPEC §10).
pub const MAX_DIALOGS: usize = 100;
pub const MAX_DIALOG_MESSAGE_CHARS: usize = 1_000;

/// A JavaScript dialog the page opened.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct Dialog {
    #[serde(rename = "type")]
    pub kind: DialogKind,
    /// What the page asked, cut to 1 000 characters.
    pub message: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DialogKind {
    Alert,
    Confirm,
    Prompt,
    Beforeunload,
}

/// At most this many refused requests are listed, each URL cut to
/// [`MAX_BLOCKED_URL_CHARS`] characters (SPEC §10), in `capture.json` and
/// in `failure.json`.
pub const MAX_BLOCKED_REQUESTS: usize = 1_000;
pub const MAX_BLOCKED_URL_CHARS: usize = 2_048;

/// One refused request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct BlockedRequest {
    /// The URL of a plain-HTTP request, the `host:port` of a tunnel; cut to
    /// 2 048 characters.
    #[schemars(length(max = 2048))]
    pub url: String,
    pub reason: String,
}

impl BlockedRequest {
    /// A refused request, its `url` cut to [`MAX_BLOCKED_URL_CHARS`]
    /// characters (on a character boundary).
    pub fn new(url: &str, reason: String) -> Self {
        let cut = url
            .char_indices()
            .nth(MAX_BLOCKED_URL_CHARS)
            .map_or(url, |(end, _)| &url[..end]);
        Self {
            url: cut.to_owned(),
            reason,
        }
    }
}

/// How many failed requests `failedRequests` lists at most.
pub const MAX_FAILED_REQUESTS: usize = 1000;

/// A request of the capture that did not load (SPEC §11 "What did not
/// load"), for another reason than the egress rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedRequest {
    /// Cut to 2 048 characters.
    #[schemars(length(max = 2048))]
    pub url: String,
    pub kind: RequestKind,
    pub reason: FailureReason,
    /// The status of an answer of 400 or more (`reason` `http_status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Chromium's error (`net::ERR_…`) or the reason it blocked the request
    /// itself (`csp`, `mixed-content`, …), for `network_error` and
    /// `blocked_by_browser`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100))]
    pub error: Option<String>,
}

impl FailedRequest {
    /// A failed request, its `url` cut as a blocked request's is.
    pub fn new(url: &str, kind: RequestKind, reason: FailureReason) -> Self {
        Self {
            url: BlockedRequest::new(url, String::new()).url,
            kind,
            reason,
            status: None,
            error: None,
        }
    }
}

/// What a failed request was for, from Chromium's resource type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    Document,
    Stylesheet,
    Script,
    Font,
    Image,
    Media,
    /// `fetch()`, `XMLHttpRequest`, `EventSource`, `sendBeacon`.
    Fetch,
    Other,
}

impl RequestKind {
    /// From CDP's `Network.ResourceType`.
    pub fn of_resource_type(resource_type: &str) -> Self {
        match resource_type {
            "Document" => Self::Document,
            "Stylesheet" => Self::Stylesheet,
            "Script" => Self::Script,
            "Font" => Self::Font,
            "Image" => Self::Image,
            "Media" => Self::Media,
            "Fetch" | "XHR" | "EventSource" | "Ping" => Self::Fetch,
            _ => Self::Other,
        }
    }
}

/// Why a request did not load, in the words of the failure reasons of SPEC
/// §7 where they are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// The host name did not resolve.
    DnsFailure,
    /// The server refused the connection.
    ConnectionRefused,
    /// The connection was reset or closed before an answer.
    ConnectionReset,
    /// The server did not answer in time.
    ConnectionTimeout,
    /// It was answered with a status of 400 or more (`status`).
    HttpStatus,
    /// Chromium refused it itself (`error` says why: a content security
    /// policy, mixed content, CORP, …).
    BlockedByBrowser,
    /// Another network error (`error`: Chromium's `net::ERR_…`).
    NetworkError,
}

/// Milliseconds from the start of the capture at the end of each step.
#[derive(Debug, Default, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub navigate_ms: u64,
    pub ready_ms: u64,
    /// Network idle in every frame, fonts ready.
    pub settle_ms: u64,
    /// The scroll pass (SPEC §11 "Before the snapshot").
    pub reveal_ms: u64,
    /// Animations run to their end, and the page stopped changing (or the
    /// bound was reached).
    pub quiet_ms: u64,
    pub screenshot_ms: u64,
    pub snapshot_ms: u64,
    /// Fonts used, canvas and video pixels, shadow hosts asked of Chromium.
    pub details_ms: u64,
    /// Interaction states and the page's tokens read (SPEC §11), after the
    /// screenshot and the snapshot.
    pub states_ms: u64,
    pub total_ms: u64,
}

/// The page's DOM as laid out: every document of the page (frames too) in
/// one flat node list with parent ids, so deep pages do not nest deeply.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dom<'a> {
    /// The computed style properties, in the order of every `styles` entry.
    pub style_names: &'a [&'a str],
    /// Distinct computed styles: one value per `styleNames` entry each.
    pub styles: Vec<Vec<&'a str>>,
    /// One entry per captured document; a node's `document` is its `index`.
    pub documents: Vec<Document<'a>>,
    /// The fonts that rendered text; a text node's `fonts` index this.
    pub fonts: Vec<UsedFont>,
    pub nodes: Vec<Node<'a>>,
    /// How interactive elements look under `:hover`, `:focus-visible` and
    /// `:active` (SPEC §11 "Interaction states"), in document order; absent
    /// when no state changes anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<StateLook>,
    /// The custom properties in force on the root element, with their
    /// computed values (SPEC §11 "The page's tokens"); absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens: BTreeMap<String, String>,
}

/// What changes when a pseudo-class is forced on an interactive element,
/// once the transitions it starts have ended.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StateLook {
    /// The interactive element's node id.
    pub node: usize,
    pub state: InteractionState,
    /// The element and each element or generated-content node under it
    /// whose computed style changes; never empty.
    pub changes: Vec<StyleChange>,
}

/// A node's computed style under a state: each changed property of
/// `styleNames` with its new value.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StyleChange {
    pub node: usize,
    pub styles: BTreeMap<String, String>,
}

/// The state forced: `focus-visible` is a keyboard user's focus, so
/// `:focus`, `:focus-visible` and `:focus-within` hold on the element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InteractionState {
    Hover,
    FocusVisible,
    Active,
}

impl InteractionState {
    /// In the order they are examined.
    pub const ALL: [Self; 3] = [Self::Hover, Self::FocusVisible, Self::Active];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hover => "hover",
            Self::FocusVisible => "focus-visible",
            Self::Active => "active",
        }
    }
}

/// A captured document: the page (0) or a frame's.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Document<'a> {
    pub index: usize,
    pub frame_id: &'a str,
    pub url: &'a str,
    /// Node id of the `<iframe>`/`<frame>` element holding it; absent for
    /// the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<usize>,
    /// `[x, y]` scroll offset of the document, CSS px.
    pub scroll: [f64; 2],
    /// `[width, height]` of its content, CSS px.
    pub content_size: [f64; 2],
}

/// A font that drew text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsedFont {
    pub family: String,
    pub post_script_name: String,
    /// A web font (`@font-face`), not one of the system's.
    pub custom: bool,
    /// The key of the downloaded font file, when the capture stored it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asset: Option<String>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Node<'a> {
    pub id: usize,
    pub parent: Option<usize>,
    /// DOM node type (1 element, 3 text, 9 document, 11 shadow root, …).
    #[serde(rename = "type")]
    pub node_type: i32,
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<[&'a str; 2]>,
    /// Index of the document the node belongs to (0 = the page).
    #[serde(skip_serializing_if = "is_zero")]
    pub document: usize,
    /// `[x, y, width, height]` in CSS px of the page, where it was painted.
    #[serde(rename = "box", skip_serializing_if = "Option::is_none")]
    pub layout_box: Option<[f64; 4]>,
    /// Index into `dom.styles`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paint_order: Option<i64>,
    /// `[x, y, width, height, start, length]` per line box; `start` and
    /// `length` index into `text`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub text_boxes: Vec<[f64; 6]>,
    /// A pseudo-element: `before`, `after`, `marker`, `first-letter`,
    /// `backdrop`, …; its parent is its element.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pseudo: Option<&'a str>,
    /// The text as laid out (`text-transform` applied): of a text node, or
    /// generated by a pseudo-element.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<Cow<'a, str>>,
    /// On a shadow root (type 11): `open` or `closed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow_root: Option<&'a str>,
    /// The live value of a text-like input or textarea.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_value: Option<Cow<'a, str>>,
    /// A checked checkbox or radio button.
    #[serde(skip_serializing_if = "is_false")]
    pub checked: bool,
    /// A selected `<option>`.
    #[serde(skip_serializing_if = "is_false")]
    pub selected: bool,
    /// The URL an `<img>` actually drew (the chosen `srcset` candidate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_src: Option<&'a str>,
    /// The key of a PNG asset of a `<canvas>` or `<video>`'s pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `[scrollLeft, scrollTop, scrollWidth, scrollHeight]` of an element
    /// whose content overflows and scrolls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scroll: Option<[f64; 4]>,
    /// The element starts a stacking context.
    #[serde(skip_serializing_if = "is_false")]
    pub stacking_context: bool,
    /// Indexes into `dom.fonts`, most glyphs first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fonts: Vec<usize>,
    /// On an element other than the root that defines or redefines custom
    /// properties (by a rule or its `style` attribute): those it sets, as
    /// computed there (SPEC §11 "The page's tokens").
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens: BTreeMap<String, String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The JSON Schema of `capture.json`, as committed: of the JSON the worker
/// writes, so a key it leaves out when empty is not required.
pub fn schema_json() -> String {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<CaptureManifest<'static>>();
    serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_schema_is_the_committed_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/capture.schema.json");
        let generated = schema_json();
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "{path} is not the schema of the manifest types: regenerate it with \
             UPDATE_SCHEMA=1 cargo test -p page-import-contract capture_schema"
        );
    }

    #[test]
    fn a_blocked_request_s_url_is_cut_to_2048_characters_on_a_character_boundary() {
        let short = BlockedRequest::new("http://10.0.0.1/", "r".into());
        assert_eq!(short.url, "http://10.0.0.1/");
        let exact = "a".repeat(MAX_BLOCKED_URL_CHARS);
        assert_eq!(BlockedRequest::new(&exact, "r".into()).url, exact);
        // Two bytes a character: a cut at byte 2 048 would be the 1 024th.
        let long = format!("http://h/{}", "é".repeat(3_000));
        let cut = BlockedRequest::new(&long, "r".into()).url;
        assert_eq!(cut.chars().count(), MAX_BLOCKED_URL_CHARS);
        assert!(long.starts_with(&cut));
    }

    #[test]
    fn optional_node_keys_are_absent_when_unset() {
        let node = Node {
            id: 3,
            name: "DIV",
            node_type: 1,
            ..Default::default()
        };
        let json = serde_json::to_value(&node).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id": 3, "parent": null, "type": 1, "name": "DIV"})
        );
    }
}
