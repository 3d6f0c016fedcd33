//! `DOMSnapshot.captureSnapshot` turned into the manifest's `dom`: a flat
//! list of nodes with parent ids (deep pages do not nest deeply), layout
//! boxes, text boxes, paint order, and computed styles as indexes into one
//! table of distinct style sets; and what SPEC §11 adds, most of it from the
//! same snapshot: the documents, pseudo-elements and the text they generate,
//! laid-out text, shadow roots, form state, `currentSrc`, scroll containers
//! and stacking contexts. What the snapshot does not tell (fonts used, the
//! pixels of canvases and videos, which element hosts a shadow root when
//! that is ambiguous) is asked of Chromium by the page while it is open
//! (`details.rs`), from the snapshot's [`Questions`], and comes back as a
//! part's [`Details`].
//!
//! Under site isolation a cross-site frame renders in a process of its own
//! and is snapshotted through its own CDP session (SPEC §10 Frames): each
//! such snapshot is one [`Part`], stitched under the `<iframe>` element that
//! owns it, its boxes moved from the frame's coordinates to the page's.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use page_import_contract::capture::{AssetKind, Document, Dom, Node, UsedFont};
use serde::de::{SeqAccess, Visitor};
use serde::Deserialize;

/// The computed style properties captured for every laid-out node (SPEC §10,
/// and §11's additions).
pub const STYLE_NAMES: &[&str] = &[
    "display",
    "position",
    "top",
    "right",
    "bottom",
    "left",
    "z-index",
    "float",
    "box-sizing",
    "width",
    "height",
    "min-width",
    "min-height",
    "max-width",
    "max-height",
    "margin-top",
    "margin-right",
    "margin-bottom",
    "margin-left",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "border-top-width",
    "border-right-width",
    "border-bottom-width",
    "border-left-width",
    "border-top-style",
    "border-right-style",
    "border-bottom-style",
    "border-left-style",
    "border-top-color",
    "border-right-color",
    "border-bottom-color",
    "border-left-color",
    "border-top-left-radius",
    "border-top-right-radius",
    "border-bottom-right-radius",
    "border-bottom-left-radius",
    "color",
    "background-color",
    "background-image",
    "background-size",
    "background-position",
    "background-repeat",
    "opacity",
    "visibility",
    "overflow-x",
    "overflow-y",
    "box-shadow",
    "transform",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "line-height",
    "letter-spacing",
    "text-align",
    "text-decoration-line",
    "text-transform",
    "white-space",
    "vertical-align",
    "list-style-type",
    "flex-direction",
    "flex-wrap",
    "justify-content",
    "align-items",
    "align-self",
    "flex-grow",
    "flex-shrink",
    "flex-basis",
    "row-gap",
    "column-gap",
    "grid-template-columns",
    "grid-template-rows",
    "object-fit",
    "cursor",
    // SPEC §11: what a design converter needs beyond §10.
    "text-shadow",
    "filter",
    "backdrop-filter",
    "mix-blend-mode",
    "isolation",
    "clip-path",
    "mask-image",
    "transform-origin",
    "fill",
    "stroke",
    "stroke-width",
    "background-clip",
    "-webkit-text-fill-color",
    "text-overflow",
    "text-indent",
    "word-break",
    "overflow-wrap",
    "font-variant",
    "font-stretch",
    "text-decoration-color",
    "text-decoration-style",
    "outline-color",
    "outline-style",
    "outline-width",
    "outline-offset",
    "content",
    "list-style-position",
    "list-style-image",
    "order",
    "align-content",
    "justify-items",
    "justify-self",
    "grid-column-start",
    "grid-column-end",
    "grid-row-start",
    "grid-row-end",
    "object-position",
    "aspect-ratio",
    "writing-mode",
    // Vertical text: how its glyphs stand, and digits set upright in one
    // cell (縦中横); without them a converter draws "20" sideways.
    "text-orientation",
    "text-combine-upright",
    "direction",
    "-webkit-line-clamp",
    "border-collapse",
    "border-spacing",
    "table-layout",
    "backface-visibility",
    "perspective",
    "appearance",
    "mask-size",
    "mask-position",
    "mask-repeat",
];

/// The parts of `DOMSnapshot.captureSnapshot`'s result the manifest uses,
/// in compact types: a 25 000-node page is tens of MiB as `serde_json::Value`.
#[derive(Deserialize, Default)]
pub struct Snapshot<'a> {
    #[serde(borrow)]
    strings: Vec<Str<'a>>,
    documents: Vec<DocumentSnapshot>,
}

/// A string of the snapshot's table, borrowed unless it had escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DocumentSnapshot {
    #[serde(rename = "documentURL", default)]
    document_url: Option<i32>,
    #[serde(default)]
    frame_id: Option<i32>,
    #[serde(default)]
    scroll_offset_x: f64,
    #[serde(default)]
    scroll_offset_y: f64,
    #[serde(default)]
    content_width: f64,
    #[serde(default)]
    content_height: f64,
    nodes: NodeTree,
    layout: LayoutTree,
    text_boxes: TextBoxes,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct NodeTree {
    parent_index: Vec<i32>,
    node_type: Vec<i32>,
    node_name: Vec<i32>,
    node_value: Vec<i32>,
    attributes: Vec<Vec<i32>>,
    backend_node_id: Vec<i64>,
    content_document_index: RareIntegers,
    shadow_root_type: RareIntegers,
    pseudo_type: RareIntegers,
    input_value: RareIntegers,
    text_value: RareIntegers,
    input_checked: RareBooleans,
    option_selected: RareBooleans,
    #[serde(rename = "currentSourceURL")]
    current_source_url: RareIntegers,
}

/// `RareIntegerData` and `RareStringData`: values for the few nodes that
/// have one (strings as indexes into the string table).
#[derive(Deserialize, Default)]
#[serde(default)]
struct RareIntegers {
    index: Vec<i32>,
    value: Vec<i32>,
}

impl RareIntegers {
    fn to_map(&self) -> HashMap<usize, i32> {
        self.index
            .iter()
            .zip(&self.value)
            .filter_map(|(i, v)| Some((usize::try_from(*i).ok()?, *v)))
            .collect()
    }
}

/// `RareBooleanData`: the indexes that are true.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RareBooleans {
    index: Vec<i32>,
}

impl RareBooleans {
    fn to_set(&self) -> HashSet<usize> {
        self.index.iter().filter_map(|i| usize::try_from(*i).ok()).collect()
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LayoutTree {
    node_index: Vec<i32>,
    styles: InternedStyles,
    bounds: Vec<[f64; 4]>,
    /// The layout text of text objects (`text-transform` applied), as
    /// string indexes; -1 for boxes.
    text: Vec<i32>,
    stacking_contexts: RareBooleans,
    paint_orders: Vec<i64>,
    /// `[scrollLeft, scrollTop, scrollWidth, scrollHeight]`; empty for text.
    scroll_rects: Vec<Vec<f64>>,
    /// `[clientLeft, clientTop, clientWidth, clientHeight]`.
    client_rects: Vec<Vec<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct TextBoxes {
    layout_index: Vec<i32>,
    bounds: Vec<[f64; 4]>,
    start: Vec<i64>,
    length: Vec<i64>,
}

/// A layout tree's computed styles, deduplicated while they are parsed:
/// each layout object's list of string indexes becomes an index into a table
/// of the distinct lists (hundreds for thousands of nodes).
#[derive(Default)]
struct InternedStyles {
    table: Vec<Vec<i32>>,
    ids: Vec<usize>,
}

impl<'de> Deserialize<'de> for InternedStyles {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = InternedStyles;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of string-index lists")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<InternedStyles, A::Error> {
                let mut out = InternedStyles::default();
                let mut known: HashMap<Vec<i32>, usize> = HashMap::new();
                while let Some(style) = seq.next_element::<Vec<i32>>()? {
                    let id = match known.get(&style) {
                        Some(id) => *id,
                        None => {
                            let id = out.table.len();
                            known.insert(style.clone(), id);
                            out.table.push(style);
                            id
                        }
                    };
                    out.ids.push(id);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_seq(Visit)
    }
}

/// One snapshot: the page's, or a cross-site frame's taken through its own
/// session, with the `<iframe>` that owns it and what the worker asked
/// Chromium about its nodes afterwards.
pub struct Part<'a> {
    pub snapshot: Snapshot<'a>,
    pub owner: Option<Owner>,
    pub details: Details,
}

/// The element that holds a frame: its backend node id in an earlier part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub part: usize,
    pub backend_node_id: i64,
}

/// What the snapshot alone does not tell, to be asked of Chromium about a
/// part's nodes (by backend node id) while the page is still open.
#[derive(Debug, Default, PartialEq)]
pub struct Questions {
    /// Laid-out text nodes and pseudo-elements with text: which fonts drew them.
    pub text_nodes: Vec<TextNode>,
    /// Laid-out `<canvas>` and `<video>` elements: their pixels.
    pub pixels: Vec<PixelsOf>,
    /// Elements whose children may be a shadow root's or their own (a node
    /// in a shadow tree below another of the same mode): which host one.
    pub maybe_hosts: Vec<i64>,
    /// The frame of the part's first document, where its pixels are read.
    pub frame_id: Option<String>,
}

/// A snapshot asks about at most this many of each: a hostile page can lay
/// out any number of nodes, and each question is a call to Chromium.
pub const MAX_FONT_QUESTIONS: usize = 25_000;
pub const MAX_ELEMENT_IMAGES: usize = 64;
pub const MAX_HOST_QUESTIONS: usize = 10_000;

/// A canvas or video whose pixels are asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PixelsOf {
    pub backend_node_id: i64,
    pub kind: AssetKind,
    /// Its box in its document's coordinates.
    pub layout_box: [f64; 4],
    /// It belongs to the part's first document.
    pub first_document: bool,
}

/// A node whose fonts are asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct TextNode {
    pub backend_node_id: i64,
    /// Nodes with the same number have the same computed style, so the same
    /// font draws the same character in each of them.
    pub style: Option<usize>,
    /// The distinct characters of its laid-out text, sorted.
    pub chars: Vec<char>,
    /// Its computed `font-weight` and `font-style`: which face of a web
    /// font drew it.
    pub font_weight: String,
    pub font_style: String,
}

/// Chromium's answers to a part's [`Questions`].
#[derive(Debug, Default)]
pub struct Details {
    /// Indexes into the used-font table, most glyphs first.
    pub fonts: HashMap<i64, Vec<usize>>,
    /// Index of the element's image among the capture's element images.
    pub pixels: HashMap<i64, usize>,
    /// Of the `maybe_hosts`, those that host a shadow root.
    pub hosts: HashSet<i64>,
}

/// Where the content of a frame starts inside its owner's box: border and
/// padding, from the owner's computed style.
const CONTENT_INSET: [(&str, &str); 2] = [
    ("border-left-width", "padding-left"),
    ("border-top-width", "padding-top"),
];

/// Elements `attachShadow` accepts: custom elements and a fixed list (DOM
/// Standard).
fn can_host_shadow_root(name: &str) -> bool {
    name.contains('-')
        || matches!(
            name.to_ascii_lowercase().as_str(),
            "article"
                | "aside"
                | "blockquote"
                | "body"
                | "div"
                | "footer"
                | "h1"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "header"
                | "main"
                | "nav"
                | "p"
                | "section"
                | "span"
        )
}

/// Input types whose value shows as text (SPEC §11 form state).
fn is_text_like_input(input_type: &str) -> bool {
    !matches!(
        input_type.to_ascii_lowercase().as_str(),
        "checkbox" | "radio" | "button" | "submit" | "reset" | "image" | "file" | "hidden" | "range" | "color"
    )
}

/// The manifest's `dom`: one flat node list of every part, in order. A
/// same-process frame's document hangs below its owner through the
/// snapshot's own `contentDocumentIndex`; a part's first document hangs
/// below its [`Owner`]. Chromium gives each document's boxes in that
/// document's own coordinates; every box is moved into the page's by the
/// content origin of the element that holds its document. `image_keys`
/// are the asset keys of the capture's element images, `fonts` the table
/// the parts' font indexes point into.
pub fn dom<'s>(parts: &'s [Part<'_>], image_keys: &[String], fonts: Vec<UsedFont>) -> Dom<'s> {
    let mut out = Builder {
        nodes: Vec::new(),
        documents: Vec::new(),
        styles: Vec::new(),
        style_ids: HashMap::new(),
        part: 0,
        image_keys,
    };
    // Per part: where its frame elements are, once it is placed.
    let mut placed: Vec<Option<HashMap<i64, usize>>> = Vec::with_capacity(parts.len());
    let mut documents = 0;
    for (number, part) in parts.iter().enumerate() {
        out.part = number;
        // Where the part hangs: the page at the origin, a frame below its
        // owner's content box. A frame showing Chromium's error page (the
        // egress rules blocked it, or it failed), or whose owner is not in
        // a placed part, is left empty.
        let error_page = part
            .snapshot
            .documents
            .first()
            .is_some_and(|d| part.snapshot.is_error_page(d));
        let place = match part.owner {
            _ if error_page => None,
            None => Some((None, [0.0, 0.0])),
            Some(owner) => (|| {
                let id = *placed.get(owner.part)?.as_ref()?.get(&owner.backend_node_id)?;
                Some((Some(id), content_origin(out.nodes.get(id)?, &out.styles)))
            })(),
        };
        let Some((owner_id, offset)) = place else {
            placed.push(None);
            continue;
        };
        let frames = part
            .snapshot
            .append(&mut out, documents, owner_id, offset, &part.details);
        placed.push(Some(frames));
        documents += part.snapshot.documents.len();
    }
    Dom {
        style_names: STYLE_NAMES,
        styles: out.styles,
        documents: out.documents,
        fonts,
        nodes: out.nodes,
    }
}

/// A node listed inside a shadow tree, below `host` (its parent as listed,
/// at `host_index` in the document's node tree), in document `document`.
struct ShadowRoot<'s> {
    mode: &'s str,
    host: usize,
    host_index: usize,
    document: usize,
}

/// The `dom` being built, part by part.
struct Builder<'s, 'k> {
    nodes: Vec<Node<'s>>,
    documents: Vec<Document<'s>>,
    styles: Vec<Vec<&'s str>>,
    /// Style ids by part and the part's string indexes: each part (each
    /// session's snapshot) numbers its strings its own way.
    style_ids: HashMap<(usize, &'s [i32]), usize>,
    /// The part being appended.
    part: usize,
    image_keys: &'k [String],
}

/// The top-left corner of `owner`'s content box, in page coordinates.
fn content_origin(owner: &Node<'_>, styles: &[Vec<&str>]) -> [f64; 2] {
    let Some([x, y, _, _]) = owner.layout_box else {
        return [0.0, 0.0];
    };
    let [(border_x, padding_x), (border_y, padding_y)] = CONTENT_INSET;
    let px = |name| style_value(owner, styles, name).and_then(|v| v.strip_suffix("px")?.parse().ok());
    let px = |name| px(name).unwrap_or(0.0);
    [x + px(border_x) + px(padding_x), y + px(border_y) + px(padding_y)]
}

/// A node's computed value of the style property `name`.
fn style_value<'v>(node: &Node<'_>, styles: &'v [Vec<&str>], name: &str) -> Option<&'v str> {
    let at = STYLE_NAMES.iter().position(|n| *n == name)?;
    styles.get(node.style?)?.get(at).copied()
}

/// An element whose content overflows its box and can be scrolled (by the
/// reader or by script: `overflow: hidden` scrolls too).
fn scrolls(node: &Node<'_>, styles: &[Vec<&str>], scroll: &[f64], client: &[f64]) -> bool {
    let (Some(&[_, _, scroll_width, scroll_height]), Some(&[_, _, client_width, client_height])) = (
        scroll.get(..4).and_then(|s| <&[f64; 4]>::try_from(s).ok()),
        client.get(..4).and_then(|c| <&[f64; 4]>::try_from(c).ok()),
    ) else {
        return false;
    };
    let scrollable = |axis| !matches!(style_value(node, styles, axis), None | Some("visible" | "clip"));
    (scroll_width > client_width && scrollable("overflow-x"))
        || (scroll_height > client_height && scrollable("overflow-y"))
}

impl<'a> Snapshot<'a> {
    pub fn parse(reply: &'a crate::cdp::Reply) -> Result<Self, serde_json::Error> {
        reply.result()
    }

    fn string(&self, index: i32) -> Option<&str> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .map(|s| s.0.as_ref())
    }

    /// Chromium's own error page (a blocked or failed frame), not content.
    fn is_error_page(&self, document: &DocumentSnapshot) -> bool {
        document
            .document_url
            .and_then(|url| self.string(url))
            .is_some_and(|url| url.starts_with("chrome-error:"))
    }

    /// What to ask Chromium about this snapshot's nodes (see [`Questions`]).
    pub fn questions(&self) -> Questions {
        let mut questions = Questions::default();
        // Style numbers of earlier documents, so each document's are its own.
        let mut styles_seen = 0;
        let mut pixels_asked = HashSet::new();
        let documents = self.documents.iter().filter(|d| !self.is_error_page(d));
        for (d, document) in documents.enumerate() {
            let first = d == 0;
            if first {
                questions.frame_id = document.frame_id.and_then(|f| self.string(f)).map(str::to_owned);
            }
            let tree = &document.nodes;
            let backend = |n: usize| tree.backend_node_id.get(n).copied();
            let pseudo = tree.pseudo_type.to_map();
            let mut asked: HashMap<i64, usize> = HashMap::new();
            for (l, node) in document.layout.node_index.iter().enumerate() {
                let Ok(n) = usize::try_from(*node) else { continue };
                let Some(id) = backend(n) else { continue };
                let node_type = tree.node_type.get(n).copied().unwrap_or(0);
                let text = document
                    .layout
                    .text
                    .get(l)
                    .and_then(|t| self.string(*t))
                    .filter(|t| !t.trim().is_empty());
                let room = questions.text_nodes.len() < MAX_FONT_QUESTIONS || asked.contains_key(&id);
                if let (Some(text), true) = (text, room && (node_type == 3 || pseudo.contains_key(&n))) {
                    let local = document.layout.styles.ids.get(l).copied();
                    let style = local.map(|s| styles_seen + s);
                    let value = |name: &str| -> String {
                        let at = STYLE_NAMES.iter().position(|n| *n == name);
                        local
                            .and_then(|s| document.layout.styles.table.get(s))
                            .and_then(|values| values.get(at?))
                            .and_then(|v| self.string(*v))
                            .unwrap_or("normal")
                            .to_owned()
                    };
                    let at = *asked.entry(id).or_insert_with(|| {
                        questions.text_nodes.push(TextNode {
                            backend_node_id: id,
                            style,
                            chars: Vec::new(),
                            font_weight: value("font-weight"),
                            font_style: value("font-style"),
                        });
                        questions.text_nodes.len() - 1
                    });
                    let chars = &mut questions.text_nodes[at].chars;
                    chars.extend(text.chars().filter(|c| !c.is_whitespace()));
                    chars.sort_unstable();
                    chars.dedup();
                }
                let name = tree.node_name.get(n).and_then(|s| self.string(*s)).unwrap_or_default();
                let kind = match name.to_ascii_uppercase().as_str() {
                    "CANVAS" => Some(AssetKind::Canvas),
                    "VIDEO" => Some(AssetKind::Video),
                    _ => None,
                };
                if let (Some(kind), Some(&layout_box)) = (kind, document.layout.bounds.get(l)) {
                    let room = questions.pixels.len() < MAX_ELEMENT_IMAGES;
                    if room && layout_box[2] > 0.0 && layout_box[3] > 0.0 && pixels_asked.insert(id) {
                        questions.pixels.push(PixelsOf {
                            backend_node_id: id,
                            kind,
                            layout_box,
                            first_document: first,
                        });
                    }
                }
            }
            let shadow = tree.shadow_root_type.to_map();
            let mut hosts = HashSet::new();
            for (&n, &mode) in &shadow {
                let Some(p) = tree.parent_index.get(n).and_then(|p| usize::try_from(*p).ok()) else {
                    continue;
                };
                let name = tree.node_name.get(p).and_then(|s| self.string(*s)).unwrap_or_default();
                let user_agent = self.string(mode) == Some("user-agent");
                let room = questions.maybe_hosts.len() < MAX_HOST_QUESTIONS;
                if room && shadow.get(&p) == Some(&mode) && !user_agent && can_host_shadow_root(name) && hosts.insert(p)
                {
                    questions.maybe_hosts.extend(backend(p));
                }
            }
            styles_seen += document.layout.styles.table.len();
            questions.maybe_hosts.sort_unstable();
        }
        questions
    }

    /// Appends this snapshot's nodes and documents, its documents numbered
    /// from `first_document`: the first document below `owner` with its boxes
    /// moved by `offset`, each frame document's by its owner's content
    /// origin. Returns where its frame elements went, by backend node id.
    fn append<'s>(
        &'s self,
        out: &mut Builder<'s, '_>,
        first_document: usize,
        owner: Option<usize>,
        offset: [f64; 2],
        details: &Details,
    ) -> HashMap<i64, usize> {
        let mut frames = HashMap::new();
        // Same-process frame documents: their owner's node id.
        let mut owner_of_document: HashMap<usize, usize> = HashMap::new();
        if let Some(owner) = owner {
            owner_of_document.insert(0, owner);
        }
        for (d, document) in self.documents.iter().enumerate() {
            if self.is_error_page(document) {
                continue;
            }
            let owner = owner_of_document.get(&d).copied();
            // A frame's document comes after the one holding its owner, whose
            // box is in page coordinates by then: the frame's content starts
            // at the owner's content origin.
            let offset = match owner {
                Some(owner) if d > 0 => content_origin(&out.nodes[owner], &out.styles),
                _ => offset,
            };
            let index = first_document + d;
            out.documents.push(Document {
                index,
                frame_id: document.frame_id.and_then(|s| self.string(s)).unwrap_or_default(),
                url: document.document_url.and_then(|s| self.string(s)).unwrap_or_default(),
                owner,
                scroll: [document.scroll_offset_x, document.scroll_offset_y],
                content_size: [document.content_width, document.content_height],
            });
            let ids = self.append_nodes(out, document, index, owner, details, &mut frames);
            let rare = &document.nodes.content_document_index;
            for (node, content_document) in rare.index.iter().zip(&rare.value) {
                let (Some(id), Ok(content_document)) = (
                    usize::try_from(*node).ok().and_then(|n| ids.get(n).copied().flatten()),
                    usize::try_from(*content_document),
                ) else {
                    continue;
                };
                owner_of_document.insert(content_document, id);
            }
            self.append_layout(out, document, &ids, offset);
        }
        frames
    }

    /// The document's nodes, with a node of type 11 for every shadow root
    /// a page attached (Chromium lists a shadow root's children directly
    /// below their host). Returns each snapshot node's id, if it was kept.
    fn append_nodes<'s>(
        &'s self,
        out: &mut Builder<'s, '_>,
        document: &'s DocumentSnapshot,
        index: usize,
        owner: Option<usize>,
        details: &Details,
        frames: &mut HashMap<i64, usize>,
    ) -> Vec<Option<usize>> {
        let tree = &document.nodes;
        let shadow = tree.shadow_root_type.to_map();
        let pseudo = tree.pseudo_type.to_map();
        let input_value = tree.input_value.to_map();
        let text_value = tree.text_value.to_map();
        let current_src = tree.current_source_url.to_map();
        let checked = tree.input_checked.to_set();
        let selected = tree.option_selected.to_set();
        let mut ids: Vec<Option<usize>> = Vec::with_capacity(tree.parent_index.len());
        // Shadow roots by host node id.
        let mut roots: HashMap<usize, usize> = HashMap::new();
        for (i, &parent_index) in tree.parent_index.iter().enumerate() {
            let at = |v: &Vec<i32>| v.get(i).copied().unwrap_or(-1);
            let backend_node_id = tree.backend_node_id.get(i).copied().unwrap_or(0);
            let parent_index = usize::try_from(parent_index).ok();
            let mode = shadow.get(&i).and_then(|s| self.string(*s));
            let parent = match parent_index {
                Some(p) => match ids.get(p).copied().flatten() {
                    Some(id) => Some(id),
                    // Below a node that was left out.
                    None => {
                        ids.push(None);
                        continue;
                    }
                },
                None => None,
            };
            let parent = match (mode, parent, parent_index) {
                (Some(mode), Some(host), Some(p)) => {
                    let shadow_root = ShadowRoot {
                        mode,
                        host,
                        host_index: p,
                        document: index,
                    };
                    self.shadow_parent(out, tree, &shadow, details, &mut roots, shadow_root)
                }
                _ => parent,
            };
            let id = out.nodes.len();
            ids.push(Some(id));
            let name = self.string(at(&tree.node_name)).unwrap_or_default();
            let attributes = self.attributes_of(tree, i);
            let input_value = self.form_value(
                name,
                &attributes,
                input_value.get(&i).copied(),
                text_value.get(&i).copied(),
            );
            if matches!(
                name.to_ascii_uppercase().as_str(),
                "IFRAME" | "FRAME" | "OBJECT" | "EMBED"
            ) {
                frames.insert(backend_node_id, id);
            }
            out.nodes.push(Node {
                id,
                parent: if parent_index.is_none() { owner } else { parent },
                node_type: at(&tree.node_type).max(0),
                name,
                value: self.string(at(&tree.node_value)).filter(|v| !v.is_empty()),
                attributes,
                document: index,
                pseudo: pseudo.get(&i).and_then(|s| self.string(*s)),
                input_value,
                checked: checked.contains(&i),
                selected: selected.contains(&i),
                current_src: current_src
                    .get(&i)
                    .and_then(|s| self.string(*s))
                    .filter(|v| !v.is_empty()),
                image: details
                    .pixels
                    .get(&backend_node_id)
                    .and_then(|image| out.image_keys.get(*image))
                    .cloned(),
                fonts: details.fonts.get(&backend_node_id).cloned().unwrap_or_default(),
                ..Default::default()
            });
        }
        ids
    }

    /// The parent of a node in a shadow tree (SPEC §11): the shadow root
    /// node of its host (made once per host) when the node is the shadow
    /// tree's top, a node whose parent is in no shadow tree, in another,
    /// or hosts one (asked of Chromium); else the host, its parent as
    /// listed. The browser's own trees (labelled `user-agent`, or below an
    /// element no page can attach a shadow root to, as `<select>`'s) get
    /// no shadow root node: their nodes stay as they are listed.
    fn shadow_parent<'s>(
        &'s self,
        out: &mut Builder<'s, '_>,
        tree: &NodeTree,
        shadow: &HashMap<usize, i32>,
        details: &Details,
        roots: &mut HashMap<usize, usize>,
        node: ShadowRoot<'s>,
    ) -> Option<usize> {
        let host_name = tree
            .node_name
            .get(node.host_index)
            .and_then(|s| self.string(*s))
            .unwrap_or_default();
        if node.mode == "user-agent" || !can_host_shadow_root(host_name) {
            return Some(node.host);
        }
        let parent_mode = shadow.get(&node.host_index).and_then(|s| self.string(*s));
        let parent_backend = tree.backend_node_id.get(node.host_index).copied().unwrap_or(0);
        if parent_mode == Some(node.mode) && !details.hosts.contains(&parent_backend) {
            return Some(node.host);
        }
        let root = *roots.entry(node.host).or_insert_with(|| {
            let id = out.nodes.len();
            out.nodes.push(Node {
                id,
                parent: Some(node.host),
                node_type: 11,
                name: "#shadow-root",
                document: node.document,
                shadow_root: Some(node.mode),
                ..Default::default()
            });
            id
        });
        Some(root)
    }

    /// Node `i`'s attributes as `[name, value]`. Chromium indexes an empty
    /// value (`hidden`, `disabled`, `open`) as -1, no string.
    fn attributes_of(&self, tree: &NodeTree, i: usize) -> Vec<[&str; 2]> {
        tree.attributes
            .get(i)
            .map(|pairs| {
                pairs
                    .chunks(2)
                    .filter_map(|pair| Some([self.string(pair[0])?, self.string(*pair.get(1)?).unwrap_or("")]))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The value a form control shows (SPEC §11 form state): a text-like
    /// `<input>`'s value (a password's as one bullet per character, never the
    /// secret), a `<textarea>`'s text; `None` for anything else.
    fn form_value(
        &self,
        name: &str,
        attributes: &[[&str; 2]],
        input_value: Option<i32>,
        text_value: Option<i32>,
    ) -> Option<Cow<'_, str>> {
        match name.to_ascii_uppercase().as_str() {
            "INPUT" => {
                let input_type = attributes
                    .iter()
                    .find(|[k, _]| k.eq_ignore_ascii_case("type"))
                    .map_or("text", |[_, v]| *v);
                let value = input_value.and_then(|s| self.string(s)).filter(|v| !v.is_empty());
                match value {
                    Some(v) if input_type.eq_ignore_ascii_case("password") => {
                        Some(Cow::Owned("•".repeat(v.chars().count())))
                    }
                    Some(v) if is_text_like_input(input_type) => Some(Cow::Borrowed(v)),
                    _ => None,
                }
            }
            "TEXTAREA" => text_value
                .or(input_value)
                .and_then(|s| self.string(s))
                .filter(|v| !v.is_empty())
                .map(Cow::Borrowed),
            _ => None,
        }
    }

    /// Boxes, styles, paint order, layout text and text boxes, scroll and
    /// stacking of the document's laid-out nodes.
    fn append_layout<'s>(
        &'s self,
        out: &mut Builder<'s, '_>,
        document: &'s DocumentSnapshot,
        ids: &[Option<usize>],
        offset: [f64; 2],
    ) {
        let moved = |r: [f64; 4]| [r[0] + offset[0], r[1] + offset[1], r[2], r[3]];
        let layout = &document.layout;
        let node_of = |l: usize| -> Option<usize> {
            let n = usize::try_from(*layout.node_index.get(l)?).ok()?;
            ids.get(n).copied().flatten()
        };
        let stacking = layout.stacking_contexts.to_set();
        // Where each layout object's text starts in its node's `text` (a
        // pseudo-element can generate several), in UTF-16 code units, as
        // Chromium's text box offsets count.
        let mut text_start = vec![0usize; layout.node_index.len()];
        let mut text_len: HashMap<usize, usize> = HashMap::new();
        let no_rect = Vec::new();
        for (l, start_of_text) in text_start.iter_mut().enumerate() {
            let Some(id) = node_of(l) else { continue };
            let first = out.nodes[id].layout_box.is_none();
            let style = layout
                .styles
                .ids
                .get(l)
                .map(|local| layout.styles.table[*local].as_slice())
                .filter(|key| first && !key.is_empty())
                .map(|key| out.intern_style(self, key));
            let node = &mut out.nodes[id];
            if let Some(text) = layout.text.get(l).and_then(|t| self.string(*t)) {
                let length = text_len.entry(id).or_insert(0);
                *start_of_text = *length;
                *length += text.encode_utf16().count();
                node.text = Some(match node.text.take() {
                    None => Cow::Borrowed(text),
                    Some(earlier) => Cow::Owned(earlier.into_owned() + text),
                });
            }
            if stacking.contains(&l) && node.node_type == 1 {
                node.stacking_context = true;
            }
            // A node can own several layout objects; the first is its box.
            if !first {
                continue;
            }
            node.layout_box = layout.bounds.get(l).copied().map(moved);
            node.paint_order = layout.paint_orders.get(l).copied();
            node.style = style;
            let scroll = layout.scroll_rects.get(l).unwrap_or(&no_rect);
            let client = layout.client_rects.get(l).unwrap_or(&no_rect);
            if node.node_type == 1 && scrolls(node, &out.styles, scroll, client) {
                node.scroll = <[f64; 4]>::try_from(&scroll[..4]).ok();
            }
        }
        let text = &document.text_boxes;
        // Chromium counts a text box's start in the DOM text and its length
        // in the laid-out one: where `text-transform` changed the length
        // ("ß" → "SS"), starts are moved into `text`.
        let mut offsets: HashMap<usize, Option<Vec<usize>>> = HashMap::new();
        for (t, layout_index) in text.layout_index.iter().enumerate() {
            let Ok(l) = usize::try_from(*layout_index) else {
                continue;
            };
            let (Some(id), Some(r)) = (node_of(l), text.bounds.get(t)) else {
                continue;
            };
            let raw = text.start.get(t).copied().unwrap_or(0);
            let node = &out.nodes[id];
            let map = offsets
                .entry(id)
                .or_insert_with(|| match (node.value, node.text.as_deref()) {
                    (Some(value), Some(laid_out))
                        if value.encode_utf16().count() != laid_out.encode_utf16().count() =>
                    {
                        layout_offsets(value, laid_out)
                    }
                    _ => None,
                });
            let start = usize::try_from(raw)
                .ok()
                .and_then(|raw| map.as_ref()?.get(raw).copied())
                .map_or(raw as f64, |moved| moved as f64)
                + text_start.get(l).copied().unwrap_or(0) as f64;
            let length = text.length.get(t).copied().unwrap_or(0) as f64;
            let [x, y, w, h] = moved(*r);
            out.nodes[id].text_boxes.push([x, y, w, h, start, length]);
        }
    }
}

/// For each UTF-16 offset of the DOM text a text node's layout object was
/// made from, the offset of the same place in its laid-out `text`, when the
/// one is the other with each character upper- or lower-cased
/// (`text-transform`; full case mappings, so "ß" may become "SS"). That DOM
/// text is the node's `value`, or what follows its first few characters
/// when a `::first-letter` laid those out itself (Chromium then counts from
/// there). `None` when they are not.
fn layout_offsets(value: &str, laid_out: &str) -> Option<Vec<usize>> {
    case_mapped(value, laid_out).or_else(|| {
        (1..=4).find_map(|skip| {
            let (cut, _) = value.char_indices().nth(skip)?;
            case_mapped(&value[cut..], laid_out)
        })
    })
}

/// [`layout_offsets`] of a whole `value`.
fn case_mapped(value: &str, laid_out: &str) -> Option<Vec<usize>> {
    let mut offsets = Vec::with_capacity(value.len() + 1);
    let mut rest = laid_out;
    let mut at = 0;
    for c in value.chars() {
        let forms = [
            c.to_uppercase().collect::<String>(),
            c.to_lowercase().collect(),
            c.to_string(),
        ];
        let form = forms.iter().find(|f| rest.starts_with(f.as_str()))?;
        offsets.extend(std::iter::repeat_n(at, c.len_utf16()));
        at += form.encode_utf16().count();
        rest = &rest[form.len()..];
    }
    offsets.push(at);
    rest.is_empty().then_some(offsets)
}

impl<'s> Builder<'s, '_> {
    /// The index of a computed style in the shared table, added when new.
    fn intern_style(&mut self, snapshot: &'s Snapshot<'_>, key: &'s [i32]) -> usize {
        let next = self.styles.len();
        let id = *self.style_ids.entry((self.part, key)).or_insert(next);
        if id == next {
            self.styles
                .push(key.iter().map(|s| snapshot.string(*s).unwrap_or_default()).collect());
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A part with no answers: `owner` as (part, backend node id).
    fn parsed(snapshot: Snapshot<'_>, owner: Option<(usize, i64)>) -> Part<'_> {
        Part {
            snapshot,
            owner: owner.map(|(part, backend_node_id)| Owner { part, backend_node_id }),
            details: Details::default(),
        }
    }

    #[test]
    fn a_snapshot_becomes_a_flat_node_list_with_a_shared_style_table() {
        // strings: 0 "#document", 1 "HTML", 2 "BODY", 3 "#text", 4 "hi",
        // 5 "block", 6 "red", 7 "class", 8 "x", 9 "IFRAME", 10 "inline"
        let snapshot = json!({
            "strings": ["#document", "HTML", "BODY", "#text", "hi", "block", "red", "class", "x", "IFRAME", "inline", "hidden"],
            "documents": [
                {
                    "nodes": {
                        "parentIndex": [-1, 0, 1, 2, 2],
                        "nodeType": [9, 1, 1, 3, 1],
                        "nodeName": [0, 1, 2, 3, 9],
                        "nodeValue": [-1, -1, -1, 4, -1],
                        // An empty value (`hidden`) is -1.
                        "attributes": [[], [], [7, 8, 11, -1], [], []],
                        "contentDocumentIndex": {"index": [4], "value": [1]}
                    },
                    "layout": {
                        "nodeIndex": [1, 2, 3, 3],
                        "styles": [[5, 6], [5, 6], [10, 6], [10, 6]],
                        "bounds": [[0, 0, 800, 600], [8, 8, 784, 20], [8, 8, 12, 18], [0, 0, 1, 1]],
                        "paintOrders": [0, 1, 2, 3]
                    },
                    "textBoxes": {"layoutIndex": [2], "bounds": [[8, 8, 12, 18]], "start": [0], "length": [2]}
                },
                {
                    "nodes": {"parentIndex": [-1], "nodeType": [9], "nodeName": [0], "nodeValue": [-1], "attributes": [[]]},
                    "layout": {"nodeIndex": [], "styles": [], "bounds": [], "paintOrders": []},
                    "textBoxes": {"layoutIndex": [], "bounds": [], "start": [], "length": []}
                }
            ]
        });
        let text = serde_json::to_string(&json!({"id": 1, "result": snapshot})).unwrap();
        let reply = crate::cdp::Reply::from_text(text);
        let parts = [parsed(Snapshot::parse(&reply).unwrap(), None)];
        let dom = dom(&parts, &[], Vec::new());
        assert_eq!(dom.nodes.len(), 6);
        assert_eq!(dom.styles, vec![vec!["block", "red"], vec!["inline", "red"]]);
        let body = &dom.nodes[2];
        assert_eq!((body.parent, body.name), (Some(1), "BODY"));
        assert_eq!(body.attributes, vec![["class", "x"], ["hidden", ""]]);
        assert_eq!(body.style, Some(0));
        let text = &dom.nodes[3];
        assert_eq!(text.value, Some("hi"));
        assert_eq!(text.style, Some(1));
        assert_eq!(
            text.layout_box,
            Some([8.0, 8.0, 12.0, 18.0]),
            "the first layout object is the box"
        );
        assert_eq!(text.text_boxes, vec![[8.0, 8.0, 12.0, 18.0, 0.0, 2.0]]);
        let frame_document = &dom.nodes[5];
        assert_eq!((frame_document.document, frame_document.parent), (1, Some(4)));
        let json = serde_json::to_value(&dom).unwrap();
        assert_eq!(json["nodes"][3]["box"], json!([8.0, 8.0, 12.0, 18.0]));
        assert!(json["nodes"][0].get("style").is_none());
    }

    /// A node's computed style list for `STYLE_NAMES`: `default` for every
    /// property but the ones given.
    fn style_of(default: i32, given: &[(&str, i32)]) -> Vec<i32> {
        STYLE_NAMES
            .iter()
            .map(|n| given.iter().find(|(name, _)| name == n).map_or(default, |(_, v)| *v))
            .collect()
    }

    #[test]
    fn each_part_s_styles_are_read_with_its_own_strings() {
        let part = |strings: serde_json::Value, name: i32| {
            let snapshot = json!({"id": 1, "result": {"strings": strings, "documents": [{
                "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 1], "nodeName": [0, name], "backendNodeId": [1, 42]},
                "layout": {"nodeIndex": [1], "styles": [[2]], "bounds": [[0, 0, 10, 10]]},
                "textBoxes": {}
            }]}});
            crate::cdp::Reply::from_text(snapshot.to_string())
        };
        // The same string indexes, different strings: the page's IFRAME is
        // red, the frame's DIV blue.
        let (page, frame) = (
            part(json!(["#document", "IFRAME", "red"]), 1),
            part(json!(["#document", "DIV", "blue"]), 1),
        );
        let parts = [
            parsed(Snapshot::parse(&page).unwrap(), None),
            parsed(Snapshot::parse(&frame).unwrap(), Some((0, 42))),
        ];
        let dom = dom(&parts, &[], Vec::new());
        let style_of = |name: &str| {
            let node = dom.nodes.iter().find(|n| n.name == name).unwrap();
            dom.styles[node.style.unwrap()].clone()
        };
        assert_eq!((style_of("IFRAME"), style_of("DIV")), (vec!["red"], vec!["blue"]));
    }

    #[test]
    fn text_box_starts_move_where_text_transform_changed_the_length() {
        // "straße maße" upper-cased: "STRASSE MASSE".
        let offsets = layout_offsets("straße maße", "STRASSE MASSE").unwrap();
        let starts: Vec<usize> = [0, 4, 5, 7, 9, 10].iter().map(|s| offsets[*s]).collect();
        assert_eq!(starts, vec![0, 4, 6, 8, 10, 12]);
        assert_eq!(offsets.last(), Some(&13));
        assert_eq!(layout_offsets("Ab", "ab"), Some(vec![0, 1, 2]), "lower-cased");
        assert_eq!(layout_offsets("abc", "xyz"), None, "not a case change");
        assert_eq!(layout_offsets("ab", "ABC"), None, "text left over");
        // Characters outside the BMP count two UTF-16 units.
        assert_eq!(layout_offsets("𝒜ß", "𝒜SS"), Some(vec![0, 0, 2, 4]));
        // A ::first-letter laid out "“H" itself: Chromium counts the rest's
        // boxes from "e" (measured: a second line's box starts at 90 of
        // "nce upon … paragraph,\n     floating …", not at 91).
        assert_eq!(layout_offsets("“Hello", "ello"), Some(vec![0, 1, 2, 3, 4]));
        assert_eq!(layout_offsets("“Straße", "TRASSE"), Some(vec![0, 1, 2, 3, 5, 6]));
    }

    #[test]
    fn what_spec_11_adds_comes_from_the_snapshot_and_the_answers() {
        let strings = json!([
            "#document",
            "HTML",
            "BODY",
            "#text",
            "hello world",
            "HELLO WORLD",
            "SPAN",
            "::before",
            "before",
            "Since ",
            "v",
            "DIV",
            "closed",
            "B",
            "shadow",
            "INPUT",
            "type",
            "password",
            "hunter2",
            "checkbox",
            "on",
            "SELECT",
            "OPTION",
            "IMG",
            "http://x/b.png",
            "auto",
            "visible",
            "0px",
            "CANVAS",
            "user-agent",
            "http://x/",
            "FRAME1",
            "open",
            "I",
            "text",
            "typed",
            "1.0",
            "my-card"
        ]);
        // 0 #document, 1 HTML, 2 BODY, 3 #text "hello world", 4 SPAN, 5 ::before,
        // 6 #text "1.0", 7 DIV (closed host), 8 B (closed tree), 9 #text "shadow",
        // 10 INPUT password (closed tree), 11 INPUT checkbox, 12 SELECT, 13 OPTION,
        // 14 IMG, 15 DIV scroller, 16 DIV plain, 17 CANVAS, 18 DIV (UA tree: dropped),
        // 19 #text below it (dropped), 20 MY-CARD (closed tree: a host of its own, nested),
        // 21 B (closed tree of 20), 22 INPUT text
        let auto = style_of(27, &[("overflow-x", 25), ("overflow-y", 25)]);
        let visible = style_of(27, &[("overflow-x", 26), ("overflow-y", 26)]);
        let plain = style_of(27, &[]);
        let snapshot = json!({"id": 1, "result": {"strings": strings, "documents": [{
            "documentURL": 30, "frameId": 31, "scrollOffsetX": 0, "scrollOffsetY": 40,
            "contentWidth": 800, "contentHeight": 3000,
            "nodes": {
                "parentIndex": [-1, 0, 1, 2, 2, 4, 4, 2, 7, 8, 7, 2, 2, 12, 2, 2, 2, 2, 11, 18, 7, 20, 2],
                "nodeType": [9, 1, 1, 3, 1, 1, 3, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1],
                "nodeName": [0, 1, 2, 3, 6, 7, 3, 11, 13, 3, 15, 15, 21, 22, 23, 11, 11, 28, 11, 3, 37, 13, 15],
                "nodeValue": [-1, -1, -1, 4, -1, -1, 36, -1, -1, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, 10, -1, -1, -1],
                "attributes": [[], [], [], [], [], [], [], [], [], [], [16, 17], [16, 19], [], [], [], [], [], [], [], [], [], [], [16, 34]],
                "backendNodeId": [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122],
                "shadowRootType": {"index": [8, 9, 10, 18, 19, 20, 21], "value": [12, 12, 12, 29, 29, 12, 12]},
                "pseudoType": {"index": [5], "value": [8]},
                "inputValue": {"index": [10, 11, 22], "value": [18, 20, 35]},
                "inputChecked": {"index": [11]},
                "optionSelected": {"index": [13]},
                "currentSourceURL": {"index": [14], "value": [24]}
            },
            "layout": {
                "nodeIndex": [1, 2, 3, 5, 5, 6, 7, 9, 15, 16, 17, 13, 21],
                "styles": [plain, plain, plain, plain, [], plain, plain, plain, auto, visible, plain, [], plain],
                "bounds": [[0, 0, 800, 3000], [8, 8, 784, 100], [8, 8, 90, 18], [8, 30, 40, 18], [8, 30, 40, 18],
                           [48, 30, 20, 18], [8, 60, 100, 20], [8, 60, 50, 18], [8, 100, 100, 50], [8, 160, 100, 50],
                           [8, 220, 50, 50], [0, 0, 0, 0], [8, 300, 10, 10]],
                "text": [-1, -1, 5, -1, 9, -1, -1, 14, -1, -1, -1, -1, -1],
                "stackingContexts": {"index": [0, 2, 6]},
                "paintOrders": [0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11],
                "scrollRects": [[0, 0, 800, 3000], [0, 0, 784, 100], [], [0, 0, 40, 18], [], [], [0, 0, 100, 20], [],
                                [0, 40, 100, 400], [0, 0, 100, 400], [0, 0, 50, 50], [0, 0, 0, 0], [0, 0, 10, 10]],
                "clientRects": [[0, 0, 800, 3000], [0, 0, 784, 100], [], [0, 0, 40, 18], [], [], [0, 0, 100, 20], [],
                                [0, 0, 100, 50], [0, 0, 100, 50], [0, 0, 50, 50], [0, 0, 0, 0], [0, 0, 10, 10]]
            },
            "textBoxes": {"layoutIndex": [2, 4, 7], "bounds": [[8, 8, 90, 18], [8, 30, 40, 18], [8, 60, 50, 18]],
                          "start": [0, 0, 0], "length": [11, 6, 6]}
        }]}});
        let reply = crate::cdp::Reply::from_text(snapshot.to_string());
        let snapshot = Snapshot::parse(&reply).unwrap();

        let questions = snapshot.questions();
        let asked: Vec<(i64, String)> = questions
            .text_nodes
            .iter()
            .map(|t| (t.backend_node_id, t.chars.iter().collect()))
            .collect();
        assert_eq!(
            asked,
            [(103, "DEHLORW"), (105, "Scein"), (109, "adhosw")].map(|(id, chars)| (id, chars.to_owned())),
            "laid-out text and generated text, by their distinct characters"
        );
        assert_eq!(
            questions.text_nodes[0].style, questions.text_nodes[2].style,
            "the same computed style"
        );
        assert_eq!(
            questions.pixels,
            vec![PixelsOf {
                backend_node_id: 117,
                kind: AssetKind::Canvas,
                layout_box: [8.0, 220.0, 50.0, 50.0],
                first_document: true
            }]
        );
        assert_eq!(questions.frame_id.as_deref(), Some("FRAME1"));
        assert_eq!(
            questions.maybe_hosts,
            vec![120],
            "an element that can host, in a closed tree, with closed-tree children (B cannot host)"
        );

        let details = Details {
            fonts: HashMap::from([(103, vec![1, 0])]),
            pixels: HashMap::from([(117, 0)]),
            hosts: HashSet::from([120]),
        };
        let parts = [Part {
            snapshot,
            owner: None,
            details,
        }];
        let fonts = vec![UsedFont {
            family: "Liberation Sans".into(),
            post_script_name: "LiberationSans".into(),
            custom: false,
            asset: None,
        }];
        let dom = dom(&parts, &["k/canvas.png".to_owned()], fonts.clone());
        let named = |name: &'static str| dom.nodes.iter().filter(move |n| n.name == name);
        let by_backend = |i: usize| &dom.nodes[i];

        assert_eq!(dom.fonts, fonts);
        assert_eq!(
            dom.documents.len(),
            1,
            "{:?}",
            dom.documents.iter().map(|d| d.url).collect::<Vec<_>>()
        );
        let page = &dom.documents[0];
        assert_eq!(
            (page.index, page.frame_id, page.url, page.owner),
            (0, "FRAME1", "http://x/", None)
        );
        assert_eq!((page.scroll, page.content_size), ([0.0, 40.0], [800.0, 3000.0]));

        // Laid-out text, its fonts, text boxes into it.
        let hello = by_backend(3);
        assert_eq!(
            (hello.value, hello.text.as_deref()),
            (Some("hello world"), Some("HELLO WORLD"))
        );
        assert_eq!(hello.fonts, vec![1, 0]);
        assert_eq!(hello.text_boxes, vec![[8.0, 8.0, 90.0, 18.0, 0.0, 11.0]]);

        // A pseudo-element: its own node, its box the first layout object's,
        // its text the generated one, no empty style entry.
        let before = named("::before").next().unwrap();
        assert_eq!(
            (before.pseudo, before.text.as_deref(), before.parent),
            (Some("before"), Some("Since "), Some(4))
        );
        assert_eq!(before.layout_box, Some([8.0, 30.0, 40.0, 18.0]));
        assert!(
            dom.styles.iter().all(|s| s.len() == STYLE_NAMES.len()),
            "no empty style entry"
        );
        assert_eq!(
            named("OPTION").next().unwrap().style,
            None,
            "an empty style list is no style"
        );

        // Shadow roots: one per host, between the host and its children;
        // the nested host (asked of Chromium) gets its own; the user-agent
        // tree is left out.
        let roots: Vec<_> = dom.nodes.iter().filter(|n| n.node_type == 11).collect();
        assert_eq!(roots.len(), 2, "{roots:?}");
        let host = named("DIV").next().unwrap();
        assert_eq!(
            (roots[0].parent, roots[0].shadow_root, roots[0].name),
            (Some(host.id), Some("closed"), "#shadow-root")
        );
        assert!(
            roots[0].id < dom.nodes.iter().find(|n| n.name == "B").unwrap().id,
            "the root comes before its children"
        );
        let nested_host = named("my-card").next().unwrap();
        assert_eq!(
            (nested_host.parent, roots[1].parent),
            (Some(roots[0].id), Some(nested_host.id))
        );
        assert_eq!(named("B").next_back().unwrap().parent, Some(roots[1].id));
        let ua_text = dom.nodes.iter().find(|n| n.value == Some("v")).unwrap();
        let ua_div = &dom.nodes[ua_text.parent.unwrap()];
        assert_eq!(
            (ua_div.name, dom.nodes[ua_div.parent.unwrap()].name),
            ("DIV", "INPUT"),
            "a user-agent tree gets no shadow root node"
        );

        // Form state: a password shows as bullets, a checkbox's value is no text.
        let inputs: Vec<_> = named("INPUT").collect();
        assert_eq!(inputs[0].input_value.as_deref(), Some("•••••••"));
        assert_eq!((inputs[1].input_value.as_deref(), inputs[1].checked), (None, true));
        assert_eq!(inputs[2].input_value.as_deref(), Some("typed"));
        assert!(named("OPTION").next().unwrap().selected);
        assert_eq!(named("IMG").next().unwrap().current_src, Some("http://x/b.png"));

        // Scroll containers and stacking contexts.
        let divs: Vec<_> = named("DIV").filter(|d| d.parent != Some(inputs[1].id)).collect();
        assert_eq!(
            divs[1].scroll,
            Some([0.0, 40.0, 100.0, 400.0]),
            "overflow: auto, taller content"
        );
        assert_eq!(divs[2].scroll, None, "overflow: visible does not scroll");
        assert_eq!(by_backend(1).scroll, None, "content that fits");
        assert!(by_backend(1).stacking_context && host.stacking_context);
        assert!(!by_backend(3).stacking_context, "text starts none");

        // Canvas pixels by key.
        assert_eq!(named("CANVAS").next().unwrap().image.as_deref(), Some("k/canvas.png"));

        let json = serde_json::to_value(&dom).unwrap();
        let plain_div = &json["nodes"][divs[2].id];
        for key in [
            "pseudo",
            "text",
            "shadowRoot",
            "inputValue",
            "checked",
            "selected",
            "currentSrc",
            "image",
            "scroll",
            "stackingContext",
            "fonts",
        ] {
            assert!(plain_div.get(key).is_none(), "{key} on a plain div: {plain_div}");
        }
    }

    #[test]
    fn a_frame_snapshotted_in_its_own_session_hangs_below_its_iframe_in_page_coordinates() {
        // strings: 0 "#document", 1 "IFRAME", 2 "#text", 3 "in frame", 4 "0px", 5 "4px", 6 "6px"
        let strings = json!(["#document", "IFRAME", "#text", "in frame", "0px", "4px", "6px"]);
        let style = |name_value: &[(&str, i32)]| -> Vec<i32> {
            STYLE_NAMES
                .iter()
                .map(|n| name_value.iter().find(|(name, _)| name == n).map_or(4, |(_, v)| *v))
                .collect()
        };
        let iframe_style = style(&[
            ("border-left-width", 5),
            ("border-top-width", 5),
            ("padding-left", 6),
            ("padding-top", 6),
        ]);
        let page = json!({"id": 1, "result": {"strings": strings, "documents": [{
            "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 1], "nodeName": [0, 1], "nodeValue": [-1, -1],
                      "backendNodeId": [1, 42]},
            "layout": {"nodeIndex": [1], "styles": [iframe_style], "bounds": [[100, 150, 520, 320]], "paintOrders": [1]},
            "textBoxes": {}
        }]}});
        let frame = json!({"id": 2, "result": {"strings": strings, "documents": [{
            "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 3], "nodeName": [0, 2], "nodeValue": [-1, 3],
                      "backendNodeId": [1, 2]},
            "layout": {"nodeIndex": [1], "styles": [style(&[])], "bounds": [[0, 0, 50, 18]], "paintOrders": [1]},
            "textBoxes": {"layoutIndex": [0], "bounds": [[0, 0, 50, 18]], "start": [0], "length": [8]}
        }]}});
        let (page, frame) = (
            crate::cdp::Reply::from_text(page.to_string()),
            crate::cdp::Reply::from_text(frame.to_string()),
        );
        // The page, and the frame whose owner has this backend node id.
        let parts = |owner: i64| {
            [
                parsed(Snapshot::parse(&page).unwrap(), None),
                parsed(Snapshot::parse(&frame).unwrap(), Some((0, owner))),
            ]
        };
        let stitched = parts(42);
        let dom = dom(&stitched, &[], Vec::new());
        assert_eq!(dom.nodes.len(), 4);
        let (frame_document, text) = (&dom.nodes[2], &dom.nodes[3]);
        assert_eq!(
            (frame_document.parent, frame_document.document),
            (Some(1), 1),
            "below the IFRAME"
        );
        assert_eq!((text.parent, text.document, text.value), (Some(2), 1, Some("in frame")));
        // The iframe's content starts at its box + 4px border + 6px padding.
        assert_eq!(text.layout_box, Some([110.0, 160.0, 50.0, 18.0]));
        assert_eq!(text.text_boxes, vec![[110.0, 160.0, 50.0, 18.0, 0.0, 8.0]]);
        assert_eq!(dom.styles.len(), 2, "one style table for both parts");

        // A frame that shows Chromium's error page is left empty.
        let error = json!({"id": 3, "result": {"strings": ["#document", "chrome-error://chromewebdata/", "#text", "This site can't be reached"],
            "documents": [{"documentURL": 1,
                "nodes": {"parentIndex": [-1, 0], "nodeType": [9, 3], "nodeName": [0, 2], "nodeValue": [-1, 3]},
                "layout": {}, "textBoxes": {}}]}});
        let error = crate::cdp::Reply::from_text(error.to_string());
        let with_error = [
            parsed(Snapshot::parse(&page).unwrap(), None),
            parsed(Snapshot::parse(&error).unwrap(), Some((0, 42))),
        ];
        assert_eq!(
            super::dom(&with_error, &[], Vec::new()).nodes.len(),
            2,
            "only the page's nodes"
        );

        // A frame whose snapshot did not parse is an empty part: the parts
        // after it keep their numbers and their places.
        let after_empty = [
            parsed(Snapshot::parse(&page).unwrap(), None),
            parsed(Snapshot::default(), Some((0, 42))),
            parsed(Snapshot::parse(&frame).unwrap(), Some((0, 42))),
        ];
        let dom = super::dom(&after_empty, &[], Vec::new());
        assert_eq!(dom.nodes.len(), 4);
        assert_eq!(dom.nodes[2].parent, Some(1));
        assert_eq!(dom.nodes[3].layout_box, Some([110.0, 160.0, 50.0, 18.0]));

        // A frame whose owner is not found cannot be placed: left empty too.
        let orphan = parts(7);
        assert_eq!(
            super::dom(&orphan, &[], Vec::new()).nodes.len(),
            2,
            "only the page's nodes"
        );
    }
}
