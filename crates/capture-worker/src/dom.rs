//! `DOMSnapshot.captureSnapshot` turned into the manifest's `dom`: a flat
//! list of nodes with parent ids (deep pages do not nest deeply), layout
//! boxes, text boxes, paint order, and computed styles as indexes into one
//! table of distinct style sets.
//!
//! Under site isolation a cross-site frame renders in a process of its own
//! and is snapshotted through its own CDP session (SPEC §10 Frames): each
//! such snapshot is one [`Part`], stitched under the `<iframe>` element that
//! owns it, its boxes moved from the frame's coordinates to the page's.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The computed style properties captured for every laid-out node.
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
];

/// The manifest's `dom`; it borrows its strings from the snapshot's text.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dom<'a> {
    pub style_names: &'static [&'static str],
    pub styles: Vec<Vec<&'a str>>,
    pub nodes: Vec<Node<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node<'a> {
    pub id: usize,
    pub parent: Option<usize>,
    /// DOM node type (1 element, 3 text, 9 document, …).
    #[serde(rename = "type")]
    pub node_type: i32,
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<[&'a str; 2]>,
    /// Index of the document the node belongs to (0 = the page, then frames).
    #[serde(skip_serializing_if = "is_zero")]
    pub document: usize,
    /// `[x, y, width, height]` in CSS pixels of the page.
    #[serde(rename = "box", skip_serializing_if = "Option::is_none")]
    pub layout_box: Option<[f64; 4]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paint_order: Option<i64>,
    /// `[x, y, width, height, start, length]` per line box of a text node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub text_boxes: Vec<[f64; 6]>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

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
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RareIntegers {
    index: Vec<i32>,
    value: Vec<i32>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LayoutTree {
    node_index: Vec<i32>,
    styles: InternedStyles,
    bounds: Vec<[f64; 4]>,
    paint_orders: Vec<i64>,
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
/// session, with the `<iframe>` that owns it.
pub struct Part<'a> {
    pub snapshot: Snapshot<'a>,
    pub owner: Option<Owner>,
}

/// The element that holds a frame: its backend node id in an earlier part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub part: usize,
    pub backend_node_id: i64,
}

/// Where the content of a frame starts inside its owner's box: border and
/// padding, from the owner's computed style.
const CONTENT_INSET: [(&str, &str); 2] = [
    ("border-left-width", "padding-left"),
    ("border-top-width", "padding-top"),
];

/// The manifest's `dom`: one flat node list of every part, in order. A
/// same-process frame's document hangs below its owner through the
/// snapshot's own `contentDocumentIndex`; a part's first document hangs
/// below its [`Owner`]. Chromium gives each document's boxes in that
/// document's own coordinates; every box is moved into the page's by the
/// content origin of the element that holds its document.
pub fn dom<'s>(parts: &'s [Part<'_>]) -> Dom<'s> {
    let mut nodes: Vec<Node<'s>> = Vec::new();
    let mut styles: Vec<Vec<&'s str>> = Vec::new();
    let mut style_ids: HashMap<&'s [i32], usize> = HashMap::new();
    // Per part: its first node id, when it was placed.
    let mut placed: Vec<Option<usize>> = Vec::with_capacity(parts.len());
    let mut documents = 0;
    for part in parts {
        let first_node = nodes.len();
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
                let base = (*placed.get(owner.part)?)?;
                let id = parts[owner.part].snapshot.node_of_backend_id(owner.backend_node_id)? + base;
                Some((Some(id), content_origin(nodes.get(id)?, &styles)))
            })(),
        };
        let Some((owner_id, offset)) = place else {
            placed.push(None);
            continue;
        };
        placed.push(Some(first_node));
        part.snapshot
            .append(&mut nodes, &mut styles, &mut style_ids, documents, offset);
        documents += part.snapshot.documents.len();
        if let (Some(owner_id), true) = (owner_id, nodes.len() > first_node) {
            nodes[first_node].parent = Some(owner_id);
        }
    }
    Dom {
        style_names: STYLE_NAMES,
        styles,
        nodes,
    }
}

/// The top-left corner of `owner`'s content box, in page coordinates.
fn content_origin(owner: &Node<'_>, styles: &[Vec<&str>]) -> [f64; 2] {
    let Some([x, y, _, _]) = owner.layout_box else {
        return [0.0, 0.0];
    };
    let style = owner.style.and_then(|s| styles.get(s));
    let px = |name: &str| -> f64 {
        let Some(at) = STYLE_NAMES.iter().position(|n| *n == name) else {
            return 0.0;
        };
        style
            .and_then(|values| values.get(at))
            .and_then(|v| v.strip_suffix("px"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let [(border_x, padding_x), (border_y, padding_y)] = CONTENT_INSET;
    [x + px(border_x) + px(padding_x), y + px(border_y) + px(padding_y)]
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

    /// The index (within this snapshot's node list) of the node with this
    /// backend node id.
    fn node_of_backend_id(&self, backend_node_id: i64) -> Option<usize> {
        let mut base = 0;
        // Counted as `append` numbers them: error pages have no nodes.
        for document in self.documents.iter().filter(|d| !self.is_error_page(d)) {
            if let Some(i) = document
                .nodes
                .backend_node_id
                .iter()
                .position(|b| *b == backend_node_id)
            {
                return Some(base + i);
            }
            base += document.nodes.parent_index.len();
        }
        None
    }

    /// Appends this snapshot's nodes, numbered after `nodes`, its documents
    /// numbered from `first_document`: the first document's boxes moved by
    /// `offset`, each frame document's by its owner's content origin.
    fn append<'s>(
        &'s self,
        nodes: &mut Vec<Node<'s>>,
        styles: &mut Vec<Vec<&'s str>>,
        style_ids: &mut HashMap<&'s [i32], usize>,
        first_document: usize,
        offset: [f64; 2],
    ) {
        let mut first_id_of_document = Vec::with_capacity(self.documents.len());
        let mut owner_of_document: HashMap<usize, usize> = HashMap::new();

        for (d, document) in self.documents.iter().enumerate() {
            if self.is_error_page(document) {
                first_id_of_document.push(usize::MAX);
                continue;
            }
            // A frame's document comes after the one holding its owner, whose
            // box is in page coordinates by then: the frame's content starts
            // at the owner's content origin.
            let offset = match owner_of_document.get(&d) {
                Some(owner) => content_origin(&nodes[*owner], styles),
                None => offset,
            };
            let moved = |r: [f64; 4]| [r[0] + offset[0], r[1] + offset[1], r[2], r[3]];
            let base = nodes.len();
            first_id_of_document.push(base);
            let tree = &document.nodes;
            let rare = &tree.content_document_index;
            for (owner, content_document) in rare.index.iter().zip(&rare.value) {
                owner_of_document.insert(*content_document as usize, base + *owner as usize);
            }
            for (i, &parent_index) in tree.parent_index.iter().enumerate() {
                let at = |v: &Vec<i32>| v.get(i).copied().unwrap_or(-1);
                let attributes = tree
                    .attributes
                    .get(i)
                    .map(|pairs| {
                        pairs
                            .chunks(2)
                            .filter_map(|pair| Some([self.string(pair[0])?, self.string(*pair.get(1)?)?]))
                            .collect()
                    })
                    .unwrap_or_default();
                nodes.push(Node {
                    id: base + i,
                    parent: usize::try_from(parent_index).ok().map(|p| base + p),
                    node_type: at(&tree.node_type).max(0),
                    name: self.string(at(&tree.node_name)).unwrap_or_default(),
                    value: self.string(at(&tree.node_value)).filter(|v| !v.is_empty()),
                    attributes,
                    document: first_document + d,
                    layout_box: None,
                    style: None,
                    paint_order: None,
                    text_boxes: Vec::new(),
                });
            }

            let layout = &document.layout;
            for (l, node_index) in layout.node_index.iter().enumerate() {
                let Some(node) = usize::try_from(*node_index).ok().and_then(|n| nodes.get_mut(base + n)) else {
                    continue;
                };
                // A node can own several layout objects; the first is its box.
                if node.layout_box.is_some() {
                    continue;
                }
                node.layout_box = layout.bounds.get(l).copied().map(moved);
                node.paint_order = layout.paint_orders.get(l).copied();
                if let Some(local) = layout.styles.ids.get(l) {
                    let key = layout.styles.table[*local].as_slice();
                    let next = styles.len();
                    let id = *style_ids.entry(key).or_insert(next);
                    if id == next {
                        styles.push(key.iter().map(|s| self.string(*s).unwrap_or_default()).collect());
                    }
                    node.style = Some(id);
                }
            }

            let text = &document.text_boxes;
            for (t, layout_index) in text.layout_index.iter().enumerate() {
                let node_index = usize::try_from(*layout_index)
                    .ok()
                    .and_then(|l| layout.node_index.get(l))
                    .and_then(|n| usize::try_from(*n).ok());
                let (Some(node_index), Some(r)) = (node_index, text.bounds.get(t)) else {
                    continue;
                };
                if let Some(node) = nodes.get_mut(base + node_index) {
                    let start = text.start.get(t).copied().unwrap_or(0) as f64;
                    let length = text.length.get(t).copied().unwrap_or(0) as f64;
                    let [x, y, w, h] = moved(*r);
                    node.text_boxes.push([x, y, w, h, start, length]);
                }
            }
        }
        for (document, owner) in owner_of_document {
            if let Some(node) = first_id_of_document.get(document).and_then(|root| nodes.get_mut(*root)) {
                node.parent = Some(owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_snapshot_becomes_a_flat_node_list_with_a_shared_style_table() {
        // strings: 0 "#document", 1 "HTML", 2 "BODY", 3 "#text", 4 "hi",
        // 5 "block", 6 "red", 7 "class", 8 "x", 9 "IFRAME", 10 "inline"
        let snapshot = json!({
            "strings": ["#document", "HTML", "BODY", "#text", "hi", "block", "red", "class", "x", "IFRAME", "inline"],
            "documents": [
                {
                    "nodes": {
                        "parentIndex": [-1, 0, 1, 2, 2],
                        "nodeType": [9, 1, 1, 3, 1],
                        "nodeName": [0, 1, 2, 3, 9],
                        "nodeValue": [-1, -1, -1, 4, -1],
                        "attributes": [[], [], [7, 8], [], []],
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
        let parts = [Part {
            snapshot: Snapshot::parse(&reply).unwrap(),
            owner: None,
        }];
        let dom = dom(&parts);
        assert_eq!(dom.nodes.len(), 6);
        assert_eq!(dom.styles, vec![vec!["block", "red"], vec!["inline", "red"]]);
        let body = &dom.nodes[2];
        assert_eq!((body.parent, body.name), (Some(1), "BODY"));
        assert_eq!(body.attributes, vec![["class", "x"]]);
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
                Part {
                    snapshot: Snapshot::parse(&page).unwrap(),
                    owner: None,
                },
                Part {
                    snapshot: Snapshot::parse(&frame).unwrap(),
                    owner: Some(Owner {
                        part: 0,
                        backend_node_id: owner,
                    }),
                },
            ]
        };
        let stitched = parts(42);
        let dom = dom(&stitched);
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
            Part {
                snapshot: Snapshot::parse(&page).unwrap(),
                owner: None,
            },
            Part {
                snapshot: Snapshot::parse(&error).unwrap(),
                owner: Some(Owner {
                    part: 0,
                    backend_node_id: 42,
                }),
            },
        ];
        assert_eq!(super::dom(&with_error).nodes.len(), 2, "only the page's nodes");

        // A frame whose snapshot did not parse is an empty part: the parts
        // after it keep their numbers and their places.
        let after_empty = [
            Part {
                snapshot: Snapshot::parse(&page).unwrap(),
                owner: None,
            },
            Part {
                snapshot: Snapshot::default(),
                owner: Some(Owner {
                    part: 0,
                    backend_node_id: 42,
                }),
            },
            Part {
                snapshot: Snapshot::parse(&frame).unwrap(),
                owner: Some(Owner {
                    part: 0,
                    backend_node_id: 42,
                }),
            },
        ];
        let dom = super::dom(&after_empty);
        assert_eq!(dom.nodes.len(), 4);
        assert_eq!(dom.nodes[2].parent, Some(1));
        assert_eq!(dom.nodes[3].layout_box, Some([110.0, 160.0, 50.0, 18.0]));

        // A frame whose owner is not found cannot be placed: left empty too.
        let orphan = parts(7);
        assert_eq!(super::dom(&orphan).nodes.len(), 2, "only the page's nodes");
    }
}
