//! The manifest's `dom`, built from the parts' snapshots and what Chromium
//! answered about them.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use page_import_contract::capture::{Document, Dom, Node, UsedFont};

use super::html::{can_host_shadow_root, is_text_like_input};
use super::looks::{place, Looks};
use super::snapshot::{DocumentSnapshot, NodeTree, Snapshot};
use super::styles::{content_origin, scrolls, STYLE_NAMES};
use super::text::layout_offsets;
use super::{Details, Part};

/// The manifest's `dom`: one flat node list of every part, in order. A
/// same-process frame's document hangs below its owner through the
/// snapshot's own `contentDocumentIndex`; a part's first document hangs
/// below its [`Owner`]. Chromium gives each document's boxes in that
/// document's own coordinates; every box is moved into the page's by the
/// content origin of the element that holds its document. `image_keys`
/// are the asset keys of the capture's element images, `fonts` the table
/// the parts' font indexes point into.
#[cfg(test)]
pub fn dom<'s>(parts: &'s [Part<'_>], image_keys: &[String], fonts: Vec<UsedFont>) -> Dom<'s> {
    dom_with_looks(parts, image_keys, fonts, &Looks::default())
}

/// [`dom`] with the page's interaction states and tokens (SPEC §11), read
/// of the first part's document by backend node id, on the manifest's
/// nodes.
pub fn dom_with_looks<'s>(
    parts: &'s [Part<'_>],
    image_keys: &[String],
    fonts: Vec<UsedFont>,
    looks: &Looks,
) -> Dom<'s> {
    let mut out = Builder {
        page_ids: HashMap::new(),
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
    let states = place(looks, &out.page_ids, &mut out.nodes);
    Dom {
        style_names: STYLE_NAMES,
        styles: out.styles,
        documents: out.documents,
        fonts,
        nodes: out.nodes,
        states,
        tokens: looks.root_tokens.clone(),
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

/// A document's rare node data, by node.
struct Rare {
    shadow: HashMap<usize, i32>,
    pseudo: HashMap<usize, i32>,
    input_value: HashMap<usize, i32>,
    text_value: HashMap<usize, i32>,
    current_src: HashMap<usize, i32>,
    checked: HashSet<usize>,
    selected: HashSet<usize>,
}

impl Rare {
    fn of(tree: &NodeTree) -> Rare {
        Rare {
            shadow: tree.shadow_root_type.to_map(),
            pseudo: tree.pseudo_type.to_map(),
            input_value: tree.input_value.to_map(),
            text_value: tree.text_value.to_map(),
            current_src: tree.current_source_url.to_map(),
            checked: tree.input_checked.to_set(),
            selected: tree.option_selected.to_set(),
        }
    }
}

/// A box in its document's coordinates, moved into the page's.
fn moved(r: [f64; 4], offset: [f64; 2]) -> [f64; 4] {
    [r[0] + offset[0], r[1] + offset[1], r[2], r[3]]
}

/// The `dom` being built, part by part.
struct Builder<'s, 'k> {
    /// The first part's nodes' ids, by backend node id.
    page_ids: HashMap<i64, usize>,
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

impl<'a> Snapshot<'a> {
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
        details: &'s Details,
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
                frame_id: self.required(document.frame_id),
                url: self.required(document.document_url),
                owner,
                scroll: [document.scroll_offset_x, document.scroll_offset_y],
                content_size: [document.content_width, document.content_height],
            });
            let ids = self.append_nodes(out, document, index, owner, details, &mut frames);
            let rare = &document.nodes.content_document_index;
            for (node, content_document) in rare.index.iter().zip(&rare.value) {
                // Indexes checked at parse; a frame element left out
                // (below an error page) holds no document.
                if let Some(id) = ids[*node as usize] {
                    owner_of_document.insert(*content_document as usize, id);
                }
            }
            self.append_layout(out, document, &ids, offset);
            append_unlaid_styles(out, document, &ids, details);
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
        let rare = Rare::of(tree);
        let mut ids: Vec<Option<usize>> = Vec::with_capacity(tree.parent_index.len());
        // Shadow roots by host node id.
        let mut roots: HashMap<usize, usize> = HashMap::new();
        for (i, &parent_index) in tree.parent_index.iter().enumerate() {
            let parent = match usize::try_from(parent_index).ok() {
                None => owner,
                // Checked at parse: a parent is listed before its children.
                Some(p) => match (ids[p], rare.shadow.get(&i).and_then(|s| self.string(*s))) {
                    // Below a node that was left out.
                    (None, _) => {
                        ids.push(None);
                        continue;
                    }
                    (Some(host), Some(mode)) => {
                        let shadow_root = ShadowRoot {
                            mode,
                            host,
                            host_index: p,
                            document: index,
                        };
                        self.shadow_parent(out, tree, &rare.shadow, details, &mut roots, shadow_root)
                    }
                    (Some(parent), None) => Some(parent),
                },
            };
            let id = out.nodes.len();
            ids.push(Some(id));
            if out.part == 0 {
                out.page_ids.insert(tree.backend_node_id[i], id);
            }
            let node = self.node(tree, &rare, i, (id, parent, index), details, out.image_keys);
            if matches!(
                node.name.to_ascii_uppercase().as_str(),
                "IFRAME" | "FRAME" | "OBJECT" | "EMBED"
            ) {
                frames.insert(tree.backend_node_id[i], id);
            }
            out.nodes.push(node);
        }
        ids
    }

    /// Snapshot node `i` as the manifest's node `id` below `parent`, in
    /// document `document`.
    fn node<'s>(
        &'s self,
        tree: &NodeTree,
        rare: &Rare,
        i: usize,
        (id, parent, document): (usize, Option<usize>, usize),
        details: &Details,
        image_keys: &[String],
    ) -> Node<'s> {
        let backend_node_id = tree.backend_node_id[i];
        let name = self.node_name(tree, i);
        let attributes = self.attributes_of(tree, i);
        let input_value = self.form_value(
            name,
            &attributes,
            rare.input_value.get(&i).copied(),
            rare.text_value.get(&i).copied(),
        );
        Node {
            id,
            parent,
            node_type: tree.node_type[i].max(0),
            name,
            value: self.string(tree.node_value[i]).filter(|v| !v.is_empty()),
            attributes,
            document,
            pseudo: rare.pseudo.get(&i).and_then(|s| self.string(*s)),
            input_value,
            checked: rare.checked.contains(&i),
            selected: rare.selected.contains(&i),
            current_src: rare
                .current_src
                .get(&i)
                .and_then(|s| self.string(*s))
                .filter(|v| !v.is_empty()),
            image: details
                .pixels
                .get(&backend_node_id)
                .and_then(|image| image_keys.get(*image))
                .cloned(),
            // A node Chromium drew no glyph of has no fonts.
            fonts: details.fonts.get(&backend_node_id).cloned().unwrap_or_default(),
            ..Default::default()
        }
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
        let host_name = self.node_name(tree, node.host_index);
        if node.mode == "user-agent" || !can_host_shadow_root(host_name) {
            return Some(node.host);
        }
        let parent_mode = shadow.get(&node.host_index).and_then(|s| self.string(*s));
        let parent_backend = tree.backend_node_id[node.host_index];
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

    /// Node `i`'s attributes as `[name, value]` (pairs and names checked
    /// at parse). Chromium indexes an empty value (`hidden`, `disabled`,
    /// `open`) as -1, no string.
    fn attributes_of(&self, tree: &NodeTree, i: usize) -> Vec<[&str; 2]> {
        tree.attributes[i]
            .chunks_exact(2)
            .map(|pair| [self.required(pair[0]), self.string(pair[1]).unwrap_or("")])
            .collect()
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
        let layout = &document.layout;
        // Indexes checked at parse; a node left out has no id.
        let node_of = |l: usize| ids[layout.node_index[l] as usize];
        let stacking = layout.stacking_contexts.to_set();
        // Where each layout object's text starts in its node's `text` (a
        // pseudo-element can generate several), in UTF-16 code units, as
        // Chromium's text box offsets count.
        let mut text_start = vec![0usize; layout.node_index.len()];
        let mut text_len: HashMap<usize, usize> = HashMap::new();
        for (l, start_of_text) in text_start.iter_mut().enumerate() {
            let Some(id) = node_of(l) else { continue };
            let first = out.nodes[id].layout_box.is_none();
            let key = layout.styles.table[layout.styles.ids[l]].as_slice();
            let style = (first && !key.is_empty()).then(|| out.intern_style(self, key));
            let node = &mut out.nodes[id];
            if let Some(text) = self.string(layout.text[l]) {
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
            node.layout_box = Some(moved(layout.bounds[l], offset));
            node.paint_order = Some(layout.paint_orders[l]);
            node.style = style;
            let (scroll, client) = (&layout.scroll_rects[l], &layout.client_rects[l]);
            if node.node_type == 1 && scrolls(node, &out.styles, scroll, client) {
                node.scroll = <[f64; 4]>::try_from(&scroll[..4]).ok();
            }
        }
        self.append_text_boxes(out, document, &node_of, &text_start, offset);
    }

    /// The document's text boxes, on their nodes: `[x, y, width, height,
    /// start, length]`, the start in the node's laid-out `text`.
    fn append_text_boxes(
        &self,
        out: &mut Builder<'_, '_>,
        document: &DocumentSnapshot,
        node_of: &dyn Fn(usize) -> Option<usize>,
        text_start: &[usize],
        offset: [f64; 2],
    ) {
        let text = &document.text_boxes;
        // Chromium counts a text box's start in the DOM text and its length
        // in the laid-out one: where `text-transform` changed the length
        // ("ß" → "SS"), starts are moved into `text`.
        let mut offsets: HashMap<usize, Option<Vec<usize>>> = HashMap::new();
        for (t, layout_index) in text.layout_index.iter().enumerate() {
            // Checked at parse.
            let l = *layout_index as usize;
            let Some(id) = node_of(l) else { continue };
            let raw = text.start[t];
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
                + text_start[l] as f64;
            let length = text.length[t] as f64;
            let [x, y, w, h] = moved(text.bounds[t], offset);
            out.nodes[id].text_boxes.push([x, y, w, h, start, length]);
        }
    }
}

/// The computed styles Chromium gave of nodes with no layout object (a
/// gradient's stops), on those nodes.
fn append_unlaid_styles<'s>(
    out: &mut Builder<'s, '_>,
    document: &DocumentSnapshot,
    ids: &[Option<usize>],
    details: &'s Details,
) {
    if details.styles.is_empty() {
        return;
    }
    for (n, backend_node_id) in document.nodes.backend_node_id.iter().enumerate() {
        let (Some(id), Some(values)) = (ids[n], details.styles.get(backend_node_id)) else {
            continue;
        };
        if out.nodes[id].style.is_none() && values.len() == STYLE_NAMES.len() {
            out.nodes[id].style = Some(out.intern_values(values));
        }
    }
}

impl<'s> Builder<'s, '_> {
    /// The index of a style Chromium gave as values, added when new.
    fn intern_values(&mut self, values: &'s [String]) -> usize {
        let row: Vec<&'s str> = values.iter().map(String::as_str).collect();
        if let Some(at) = self.styles.iter().position(|known| *known == row) {
            return at;
        }
        self.styles.push(row);
        self.styles.len() - 1
    }

    /// The index of a computed style in the shared table, added when new.
    fn intern_style(&mut self, snapshot: &'s Snapshot<'_>, key: &'s [i32]) -> usize {
        let next = self.styles.len();
        let id = *self.style_ids.entry((self.part, key)).or_insert(next);
        if id == next {
            // Chromium indexes an empty computed value as -1, no string.
            self.styles
                .push(key.iter().map(|s| snapshot.string(*s).unwrap_or_default()).collect());
        }
        id
    }
}
