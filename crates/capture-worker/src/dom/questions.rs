//! What to ask Chromium about a snapshot's nodes while the page is still
//! open: which fonts drew its text, the pixels of its canvases and videos,
//! which elements host a shadow root when the snapshot cannot tell.

use std::collections::{HashMap, HashSet};

use page_import_contract::capture::AssetKind;

use super::html::can_host_shadow_root;
use super::snapshot::{DocumentSnapshot, Snapshot};
use super::styles::STYLE_NAMES;

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
    /// Elements not laid out whose computed style paints others, an SVG
    /// gradient's `<stop>`s: their style, which the snapshot only gives
    /// laid-out nodes.
    pub unlaid_styles: Vec<i64>,
    /// The frame of the part's first document, where its pixels are read.
    pub frame_id: Option<String>,
    /// The laid-out interactive elements of its first document, in
    /// document order: whose states are read (SPEC §11).
    pub interactive: Vec<i64>,
}

/// A snapshot asks about at most this many of each: a hostile page can lay
/// out any number of nodes, and each question is a call to Chromium.
pub const MAX_FONT_QUESTIONS: usize = 25_000;
pub const MAX_ELEMENT_IMAGES: usize = 64;
pub const MAX_HOST_QUESTIONS: usize = 10_000;
pub const MAX_STYLE_QUESTIONS: usize = 1_000;

/// The elements without a layout object whose computed style a rebuild
/// needs: a gradient's stops colour the shape that uses it.
const UNLAID_STYLED: &[&str] = &["stop"];

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

impl Snapshot<'_> {
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
                questions.frame_id = Some(self.required(document.frame_id).to_owned());
            }
            self.ask_about_layout(document, first, styles_seen, &mut questions, &mut pixels_asked);
            self.ask_about_hosts(document, &mut questions);
            self.ask_about_unlaid_styles(document, &mut questions);
            styles_seen += document.layout.styles.table.len();
        }
        questions.maybe_hosts.sort_unstable();
        questions.interactive = self.interactive();
        questions
    }

    /// Per layout object of `document`: the fonts of its text (a text
    /// node's or a pseudo-element's), the pixels of a canvas or video.
    fn ask_about_layout(
        &self,
        document: &DocumentSnapshot,
        first: bool,
        styles_seen: usize,
        questions: &mut Questions,
        pixels_asked: &mut HashSet<i64>,
    ) {
        let tree = &document.nodes;
        let pseudo = tree.pseudo_type.to_map();
        // Where each node's question is, by backend node id.
        let mut asked: HashMap<i64, usize> = HashMap::new();
        for (l, node) in document.layout.node_index.iter().enumerate() {
            // Checked at parse.
            let n = *node as usize;
            let id = tree.backend_node_id[n];
            let text = self.string(document.layout.text[l]).filter(|t| !t.trim().is_empty());
            let room = questions.text_nodes.len() < MAX_FONT_QUESTIONS || asked.contains_key(&id);
            if let (Some(text), true) = (text, room && (tree.node_type[n] == 3 || pseudo.contains_key(&n))) {
                let at = *asked.entry(id).or_insert_with(|| {
                    questions.text_nodes.push(self.text_node(document, l, styles_seen, id));
                    questions.text_nodes.len() - 1
                });
                let chars = &mut questions.text_nodes[at].chars;
                chars.extend(text.chars().filter(|c| !c.is_whitespace()));
                chars.sort_unstable();
                chars.dedup();
            }
            let Some(kind) = pixel_kind(self.node_name(tree, n)) else {
                continue;
            };
            let layout_box = document.layout.bounds[l];
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

    /// The elements of `document` named in [`UNLAID_STYLED`], up to
    /// [`MAX_STYLE_QUESTIONS`] in all.
    fn ask_about_unlaid_styles(&self, document: &DocumentSnapshot, questions: &mut Questions) {
        let tree = &document.nodes;
        for n in 0..tree.node_type.len() {
            if questions.unlaid_styles.len() >= MAX_STYLE_QUESTIONS {
                return;
            }
            if tree.node_type[n] == 1 && UNLAID_STYLED.contains(&self.node_name(tree, n)) {
                questions.unlaid_styles.push(tree.backend_node_id[n]);
            }
        }
    }

    /// The font question of layout object `l` (node `id`), before its
    /// characters.
    fn text_node(&self, document: &DocumentSnapshot, l: usize, styles_seen: usize, id: i64) -> TextNode {
        let local = document.layout.styles.ids[l];
        let value = |name: &str| -> String {
            let at = STYLE_NAMES.iter().position(|n| *n == name);
            let values = &document.layout.styles.table[local];
            // A layout object without computed styles (an empty list), or
            // with an empty value (-1, no string), has the initial value.
            at.and_then(|at| values.get(at))
                .and_then(|v| self.string(*v))
                .unwrap_or("normal")
                .to_owned()
        };
        TextNode {
            backend_node_id: id,
            style: Some(styles_seen + local),
            chars: Vec::new(),
            font_weight: value("font-weight"),
            font_style: value("font-style"),
        }
    }

    /// Elements of `document` that may host a shadow root the snapshot
    /// cannot tell from their children's (see [`Questions::maybe_hosts`]).
    fn ask_about_hosts(&self, document: &DocumentSnapshot, questions: &mut Questions) {
        let tree = &document.nodes;
        let shadow = tree.shadow_root_type.to_map();
        let mut hosts = HashSet::new();
        for (&n, &mode) in &shadow {
            let Ok(p) = usize::try_from(tree.parent_index[n]) else {
                continue;
            };
            let name = self.node_name(tree, p);
            let user_agent = self.string(mode) == Some("user-agent");
            let room = questions.maybe_hosts.len() < MAX_HOST_QUESTIONS;
            if room && shadow.get(&p) == Some(&mode) && !user_agent && can_host_shadow_root(name) && hosts.insert(p) {
                questions.maybe_hosts.push(tree.backend_node_id[p]);
            }
        }
    }
}

/// The element images asked for: a canvas's or a video's pixels.
fn pixel_kind(name: &str) -> Option<AssetKind> {
    match name.to_ascii_uppercase().as_str() {
        "CANVAS" => Some(AssetKind::Canvas),
        "VIDEO" => Some(AssetKind::Video),
        _ => None,
    }
}
