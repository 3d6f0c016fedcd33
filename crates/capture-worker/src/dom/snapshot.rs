//! `DOMSnapshot.captureSnapshot`'s answer, decoded into compact types and
//! checked once: every array Chromium always sends is required, the
//! per-node and per-layout-object arrays have one entry each, and every
//! index into another table is in it. A snapshot that is not so is an
//! error the capture reports, never a manifest of zeros.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde::de::{SeqAccess, Visitor};
use serde::Deserialize;

/// The parts of `DOMSnapshot.captureSnapshot`'s result the manifest uses,
/// in compact types: a 25 000-node page is tens of MiB as `serde_json::Value`.
/// Made only by [`Snapshot::parse`], which checks it (or empty).
#[derive(Deserialize, Default)]
pub struct Snapshot<'a> {
    #[serde(borrow)]
    strings: Vec<Str<'a>>,
    pub(super) documents: Vec<DocumentSnapshot>,
}

/// A string of the snapshot's table, borrowed unless it had escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// A snapshot that is not what Chromium sends: the capture reports it.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("the DOM snapshot does not decode: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("document {document} of the DOM snapshot: {what}")]
    Malformed { document: usize, what: String },
}

/// One document. Every string is an index into the snapshot's table, -1
/// for none.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DocumentSnapshot {
    #[serde(rename = "documentURL")]
    pub(super) document_url: i32,
    pub(super) frame_id: i32,
    /// Chromium leaves the scroll offset and content size out for a
    /// document without a view of its own: not scrolled, no size.
    #[serde(default)]
    pub(super) scroll_offset_x: f64,
    #[serde(default)]
    pub(super) scroll_offset_y: f64,
    #[serde(default)]
    pub(super) content_width: f64,
    #[serde(default)]
    pub(super) content_height: f64,
    pub(super) nodes: NodeTree,
    pub(super) layout: LayoutTree,
    pub(super) text_boxes: TextBoxes,
}

/// The document's nodes, one entry per node in each array (checked), a
/// parent listed before its children.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodeTree {
    pub(super) parent_index: Vec<i32>,
    pub(super) node_type: Vec<i32>,
    pub(super) node_name: Vec<i32>,
    pub(super) node_value: Vec<i32>,
    /// Each node's attributes as `[name, value, …]`.
    pub(super) attributes: Vec<Vec<i32>>,
    pub(super) backend_node_id: Vec<i64>,
    /// The rare data: absent when no node has one.
    #[serde(default)]
    pub(super) content_document_index: RareIntegers,
    #[serde(default)]
    pub(super) shadow_root_type: RareIntegers,
    #[serde(default)]
    pub(super) pseudo_type: RareIntegers,
    #[serde(default)]
    pub(super) input_value: RareIntegers,
    #[serde(default)]
    pub(super) text_value: RareIntegers,
    #[serde(default)]
    pub(super) input_checked: RareBooleans,
    #[serde(default)]
    pub(super) option_selected: RareBooleans,
    #[serde(rename = "currentSourceURL", default)]
    pub(super) current_source_url: RareIntegers,
}

/// `RareIntegerData` and `RareStringData`: values for the few nodes that
/// have one (strings as indexes into the string table).
#[derive(Deserialize, Default)]
pub(super) struct RareIntegers {
    pub(super) index: Vec<i32>,
    pub(super) value: Vec<i32>,
}

impl RareIntegers {
    /// By node (indexes checked at parse).
    pub(super) fn to_map(&self) -> HashMap<usize, i32> {
        self.index
            .iter()
            .zip(&self.value)
            .map(|(i, v)| (*i as usize, *v))
            .collect()
    }
}

/// `RareBooleanData`: the indexes that are true.
#[derive(Deserialize, Default)]
pub(super) struct RareBooleans {
    pub(super) index: Vec<i32>,
}

impl RareBooleans {
    /// The true indexes (checked at parse).
    pub(super) fn to_set(&self) -> HashSet<usize> {
        self.index.iter().map(|i| *i as usize).collect()
    }
}

/// The document's layout objects, one entry per object in each array
/// (checked; the worker asks for paint orders and rects).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LayoutTree {
    pub(super) node_index: Vec<i32>,
    pub(super) styles: InternedStyles,
    pub(super) bounds: Vec<[f64; 4]>,
    /// The layout text of text objects (`text-transform` applied), as
    /// string indexes; -1 for boxes.
    pub(super) text: Vec<i32>,
    pub(super) stacking_contexts: RareBooleans,
    pub(super) paint_orders: Vec<i64>,
    /// `[scrollLeft, scrollTop, scrollWidth, scrollHeight]`; empty for text.
    pub(super) scroll_rects: Vec<Vec<f64>>,
    /// `[clientLeft, clientTop, clientWidth, clientHeight]`.
    pub(super) client_rects: Vec<Vec<f64>>,
}

/// The document's text boxes, one entry per box in each array (checked).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TextBoxes {
    pub(super) layout_index: Vec<i32>,
    pub(super) bounds: Vec<[f64; 4]>,
    pub(super) start: Vec<i64>,
    pub(super) length: Vec<i64>,
}

/// A layout tree's computed styles, deduplicated while they are parsed:
/// each layout object's list of string indexes becomes an index into a table
/// of the distinct lists (hundreds for thousands of nodes).
#[derive(Default)]
pub(super) struct InternedStyles {
    pub(super) table: Vec<Vec<i32>>,
    pub(super) ids: Vec<usize>,
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

impl<'a> Snapshot<'a> {
    /// Decodes and checks Chromium's answer.
    pub fn parse(reply: &'a crate::cdp::Reply) -> Result<Self, SnapshotError> {
        let snapshot: Snapshot<'a> = reply.result()?;
        snapshot.check()?;
        Ok(snapshot)
    }

    /// A string of the table; `None` for -1, Chromium's index of no string
    /// and of the empty one, which its table never holds (checked at parse:
    /// every other index is in the table).
    pub(super) fn string(&self, index: i32) -> Option<&str> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .map(|s| s.0.as_ref())
    }

    /// A string the snapshot always has: a node's name, an attribute's, a
    /// document's URL and frame id. Checked at parse to be in the table
    /// (never -1): a snapshot without one is a [`SnapshotError`].
    pub(super) fn required(&self, index: i32) -> &str {
        &self.strings[index as usize].0
    }

    /// Node `n`'s name (checked at parse: every node has one).
    pub(super) fn node_name(&self, tree: &NodeTree, n: usize) -> &str {
        self.required(tree.node_name[n])
    }

    /// Chromium's own error page (a blocked or failed frame), not content.
    pub(super) fn is_error_page(&self, document: &DocumentSnapshot) -> bool {
        self.required(document.document_url).starts_with("chrome-error:")
    }

    /// Every array's length and every index, once.
    fn check(&self) -> Result<(), SnapshotError> {
        let strings = self.strings.len();
        for (d, document) in self.documents.iter().enumerate() {
            check_document(document, strings, self.documents.len())
                .map_err(|what| SnapshotError::Malformed { document: d, what })?;
        }
        Ok(())
    }
}

/// Each array has `len` entries.
fn same_len(len: usize, arrays: &[(&str, usize)]) -> Result<(), String> {
    match arrays.iter().find(|(_, n)| *n != len) {
        Some((name, n)) => Err(format!("{name} has {n} entries for {len}")),
        None => Ok(()),
    }
}

/// Each index is in `0..len`, or -1 where `none` allows it.
fn in_range<'i>(name: &str, indexes: impl IntoIterator<Item = &'i i32>, len: usize, none: bool) -> Result<(), String> {
    for &i in indexes {
        let ok = usize::try_from(i).is_ok_and(|i| i < len) || (none && i == -1);
        if !ok {
            return Err(format!("{name} has index {i} of {len}"));
        }
    }
    Ok(())
}

fn check_document(document: &DocumentSnapshot, strings: usize, documents: usize) -> Result<(), String> {
    in_range("documentURL", &[document.document_url], strings, false)?;
    in_range("frameId", &[document.frame_id], strings, false)?;
    let tree = &document.nodes;
    check_nodes(tree, strings, documents)?;
    check_layout(&document.layout, tree.parent_index.len(), strings)?;
    let text = &document.text_boxes;
    same_len(
        text.layout_index.len(),
        &[
            ("textBoxes.bounds", text.bounds.len()),
            ("textBoxes.start", text.start.len()),
            ("textBoxes.length", text.length.len()),
        ],
    )?;
    in_range(
        "textBoxes.layoutIndex",
        &text.layout_index,
        document.layout.node_index.len(),
        false,
    )
}

fn check_nodes(tree: &NodeTree, strings: usize, documents: usize) -> Result<(), String> {
    let nodes = tree.parent_index.len();
    same_len(
        nodes,
        &[
            ("nodeType", tree.node_type.len()),
            ("nodeName", tree.node_name.len()),
            ("nodeValue", tree.node_value.len()),
            ("attributes", tree.attributes.len()),
            ("backendNodeId", tree.backend_node_id.len()),
        ],
    )?;
    for (i, &p) in tree.parent_index.iter().enumerate() {
        if p != -1 && usize::try_from(p).map_or(true, |p| p >= i) {
            return Err(format!("node {i}'s parent {p} is not listed before it"));
        }
    }
    if let Some(i) = tree.attributes.iter().position(|a| a.len() % 2 == 1) {
        return Err(format!("node {i}'s attributes are not name-value pairs"));
    }
    in_range("nodeName", &tree.node_name, strings, false)?;
    in_range("nodeValue", &tree.node_value, strings, true)?;
    // An attribute always has a name; its value is -1 when empty.
    let names = tree.attributes.iter().flat_map(|a| a.iter().step_by(2));
    in_range("an attribute name", names, strings, false)?;
    in_range("attributes", tree.attributes.iter().flatten(), strings, true)?;
    let rare_strings = [
        ("shadowRootType", &tree.shadow_root_type),
        ("pseudoType", &tree.pseudo_type),
        ("inputValue", &tree.input_value),
        ("textValue", &tree.text_value),
        ("currentSourceURL", &tree.current_source_url),
    ];
    for (name, rare) in rare_strings {
        same_len(rare.index.len(), &[(name, rare.value.len())])?;
        in_range(name, &rare.index, nodes, false)?;
        in_range(name, &rare.value, strings, true)?;
    }
    let frames = &tree.content_document_index;
    same_len(frames.index.len(), &[("contentDocumentIndex", frames.value.len())])?;
    in_range("contentDocumentIndex", &frames.index, nodes, false)?;
    in_range("contentDocumentIndex", &frames.value, documents, false)?;
    in_range("inputChecked", &tree.input_checked.index, nodes, false)?;
    in_range("optionSelected", &tree.option_selected.index, nodes, false)
}

fn check_layout(layout: &LayoutTree, nodes: usize, strings: usize) -> Result<(), String> {
    let objects = layout.node_index.len();
    same_len(
        objects,
        &[
            ("layout.styles", layout.styles.ids.len()),
            ("layout.bounds", layout.bounds.len()),
            ("layout.text", layout.text.len()),
            ("layout.paintOrders", layout.paint_orders.len()),
            ("layout.scrollRects", layout.scroll_rects.len()),
            ("layout.clientRects", layout.client_rects.len()),
        ],
    )?;
    in_range("layout.nodeIndex", &layout.node_index, nodes, false)?;
    in_range("layout.text", &layout.text, strings, true)?;
    in_range("layout.styles", layout.styles.table.iter().flatten(), strings, true)?;
    in_range(
        "layout.stackingContexts",
        &layout.stacking_contexts.index,
        objects,
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(snapshot: serde_json::Value) -> Result<(), SnapshotError> {
        let text = serde_json::to_string(&json!({"id": 1, "result": snapshot})).unwrap();
        let reply = crate::cdp::Reply::from_text(text);
        Snapshot::parse(&reply).map(|_| ())
    }

    /// A one-document snapshot: a document, `<html>` and a text node, each
    /// laid out, one text box.
    fn good() -> serde_json::Value {
        json!({
            "strings": ["#document", "HTML", "#text", "hi", "about:blank", "F1"],
            "documents": [{
                "documentURL": 4, "frameId": 5,
                "nodes": {
                    "parentIndex": [-1, 0, 1], "nodeType": [9, 1, 3], "nodeName": [0, 1, 2],
                    "nodeValue": [-1, -1, 3], "backendNodeId": [1, 2, 3], "attributes": [[], [], []]
                },
                "layout": {
                    "nodeIndex": [0, 1, 2], "styles": [[], [], []],
                    "bounds": [[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 5, 5]],
                    "text": [-1, -1, 3], "stackingContexts": {"index": [0]}, "paintOrders": [1, 2, 3],
                    "scrollRects": [[0, 0, 10, 10], [0, 0, 10, 10], []], "clientRects": [[], [], []]
                },
                "textBoxes": {"layoutIndex": [2], "bounds": [[0, 0, 5, 5]], "start": [0], "length": [2]}
            }]
        })
    }

    #[test]
    fn a_snapshot_as_chromium_sends_it_parses() {
        parse(good()).unwrap();
        // An empty attribute value (`hidden`) is -1, no string.
        let mut snapshot = good();
        snapshot["documents"][0]["nodes"]["attributes"] = json!([[], [3, -1], []]);
        parse(snapshot).unwrap();
    }

    #[test]
    fn a_malformed_snapshot_is_an_error_naming_what_is_wrong() {
        let broken = |path: &str, value: serde_json::Value| {
            let mut snapshot = good();
            *snapshot.pointer_mut(path).unwrap() = value;
            parse(snapshot).unwrap_err().to_string()
        };
        let missing = {
            let mut snapshot = good();
            snapshot["documents"][0]["nodes"]
                .as_object_mut()
                .unwrap()
                .remove("backendNodeId");
            parse(snapshot).unwrap_err().to_string()
        };
        assert!(missing.contains("backendNodeId"), "{missing}");
        let cases = [
            (
                "/documents/0/nodes/nodeType",
                json!([9, 1]),
                "nodeType has 2 entries for 3",
            ),
            ("/documents/0/nodes/parentIndex", json!([-1, 2, 1]), "node 1's parent 2"),
            (
                "/documents/0/nodes/nodeName",
                json!([0, 1, 99]),
                "nodeName has index 99",
            ),
            (
                "/documents/0/nodes/attributes",
                json!([[], [1], []]),
                "name-value pairs",
            ),
            (
                "/documents/0/layout/nodeIndex",
                json!([0, 1, 7]),
                "layout.nodeIndex has index 7",
            ),
            (
                "/documents/0/layout/paintOrders",
                json!([1]),
                "layout.paintOrders has 1 entries for 3",
            ),
            (
                "/documents/0/textBoxes/layoutIndex",
                json!([3]),
                "textBoxes.layoutIndex has index 3",
            ),
            (
                "/documents/0/textBoxes/start",
                json!([]),
                "textBoxes.start has 0 entries for 1",
            ),
            ("/documents/0/frameId", json!(-1), "frameId has index -1"),
            (
                "/documents/0/nodes/attributes",
                json!([[], [-1, 3], []]),
                "an attribute name has index -1",
            ),
        ];
        for (path, value, expected) in cases {
            let error = broken(path, value);
            assert!(error.contains(expected), "{path}: {error}");
            assert!(error.starts_with("document 0 of the DOM snapshot"), "{error}");
        }
    }
}
