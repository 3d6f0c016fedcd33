//! `DOMSnapshot.captureSnapshot` turned into the manifest's `dom`: a flat
//! list of nodes with parent ids (deep pages do not nest deeply), layout
//! boxes, text boxes, paint order, and computed styles as indexes into one
//! table of distinct style sets.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

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

/// The manifest's `dom`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dom {
    pub style_names: &'static [&'static str],
    pub styles: Vec<Vec<String>>,
    pub nodes: Vec<Node>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    pub id: usize,
    pub parent: Option<usize>,
    /// DOM node type (1 element, 3 text, 9 document, …).
    #[serde(rename = "type")]
    pub node_type: i64,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<[String; 2]>,
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

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_i64().unwrap_or(-1)).collect())
        .unwrap_or_default()
}

fn rect(v: &Value) -> Option<[f64; 4]> {
    let a = v.as_array()?;
    let f = |i: usize| a.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    (a.len() >= 4).then(|| [f(0), f(1), f(2), f(3)])
}

/// Rare data (`{index: [...], value: [...]}`) as a map from node index.
fn rare_ints(v: &Value) -> HashMap<i64, i64> {
    ints(&v["index"]).into_iter().zip(ints(&v["value"])).collect()
}

/// Converts a `DOMSnapshot.captureSnapshot` result captured with
/// [`STYLE_NAMES`] as its computed styles.
pub fn from_snapshot(snapshot: &Value) -> Dom {
    let strings: Vec<&str> = snapshot["strings"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap_or_default()).collect())
        .unwrap_or_default();
    let string = |i: i64| usize::try_from(i).ok().and_then(|i| strings.get(i)).copied();
    let empty = Vec::new();
    let documents = snapshot["documents"].as_array().unwrap_or(&empty);

    let mut nodes: Vec<Node> = Vec::new();
    let mut styles: Vec<Vec<String>> = Vec::new();
    let mut style_ids: HashMap<Vec<i64>, usize> = HashMap::new();
    // (document, node index within it) → global id; a frame's document hangs
    // below the element that owns it.
    let mut first_id_of_document = Vec::with_capacity(documents.len());
    let mut owner_of_document: HashMap<usize, usize> = HashMap::new();

    for (d, document) in documents.iter().enumerate() {
        let base = nodes.len();
        first_id_of_document.push(base);
        let tree = &document["nodes"];
        let parents = ints(&tree["parentIndex"]);
        let types = ints(&tree["nodeType"]);
        let names = ints(&tree["nodeName"]);
        let values = ints(&tree["nodeValue"]);
        let attributes = tree["attributes"].as_array().unwrap_or(&empty);
        for (owner, content_document) in rare_ints(&tree["contentDocumentIndex"]) {
            owner_of_document.insert(content_document as usize, base + owner as usize);
        }
        for (i, &parent_index) in parents.iter().enumerate() {
            let node_type = types.get(i).copied().unwrap_or(0);
            let attrs = attributes
                .get(i)
                .map(|a| {
                    ints(a)
                        .chunks(2)
                        .filter_map(|pair| Some([string(pair[0])?.to_owned(), string(*pair.get(1)?)?.to_owned()]))
                        .collect()
                })
                .unwrap_or_default();
            let parent = match parent_index {
                p if p >= 0 => Some(base + p as usize),
                _ => None,
            };
            nodes.push(Node {
                id: base + i,
                parent,
                node_type,
                name: string(names.get(i).copied().unwrap_or(-1))
                    .unwrap_or_default()
                    .to_owned(),
                value: values
                    .get(i)
                    .and_then(|v| string(*v))
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned),
                attributes: attrs,
                document: d,
                layout_box: None,
                style: None,
                paint_order: None,
                text_boxes: Vec::new(),
            });
        }

        let layout = &document["layout"];
        let layout_nodes = ints(&layout["nodeIndex"]);
        let layout_styles = layout["styles"].as_array().unwrap_or(&empty);
        let bounds = layout["bounds"].as_array().unwrap_or(&empty);
        let paint_orders = ints(&layout["paintOrders"]);
        for (l, node_index) in layout_nodes.iter().enumerate() {
            let Some(node) = usize::try_from(*node_index).ok().and_then(|n| nodes.get_mut(base + n)) else {
                continue;
            };
            // A node can own several layout objects; the first is its box.
            if node.layout_box.is_some() {
                continue;
            }
            node.layout_box = bounds.get(l).and_then(rect);
            node.paint_order = paint_orders.get(l).copied();
            if let Some(style) = layout_styles.get(l) {
                let key = ints(style);
                let next = styles.len();
                let id = *style_ids.entry(key.clone()).or_insert(next);
                if id == next {
                    styles.push(key.iter().map(|s| string(*s).unwrap_or_default().to_owned()).collect());
                }
                node.style = Some(id);
            }
        }

        let text_boxes = &document["textBoxes"];
        let text_layouts = ints(&text_boxes["layoutIndex"]);
        let text_bounds = text_boxes["bounds"].as_array().unwrap_or(&empty);
        let starts = ints(&text_boxes["start"]);
        let lengths = ints(&text_boxes["length"]);
        for (t, layout_index) in text_layouts.iter().enumerate() {
            let node_index = usize::try_from(*layout_index)
                .ok()
                .and_then(|l| layout_nodes.get(l))
                .and_then(|n| usize::try_from(*n).ok());
            let (Some(node_index), Some(r)) = (node_index, text_bounds.get(t).and_then(rect)) else {
                continue;
            };
            if let Some(node) = nodes.get_mut(base + node_index) {
                let start = starts.get(t).copied().unwrap_or(0) as f64;
                let length = lengths.get(t).copied().unwrap_or(0) as f64;
                node.text_boxes.push([r[0], r[1], r[2], r[3], start, length]);
            }
        }
    }
    for (document, owner) in owner_of_document {
        if let Some(&root) = first_id_of_document.get(document) {
            if let Some(node) = nodes.get_mut(root) {
                node.parent = Some(owner);
            }
        }
    }
    Dom {
        style_names: STYLE_NAMES,
        styles,
        nodes,
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
        let dom = from_snapshot(&snapshot);
        assert_eq!(dom.nodes.len(), 6);
        assert_eq!(dom.styles, vec![vec!["block", "red"], vec!["inline", "red"]]);
        let body = &dom.nodes[2];
        assert_eq!((body.parent, body.name.as_str()), (Some(1), "BODY"));
        assert_eq!(body.attributes, vec![["class".to_owned(), "x".to_owned()]]);
        assert_eq!(body.style, Some(0));
        let text = &dom.nodes[3];
        assert_eq!(text.value.as_deref(), Some("hi"));
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
}
