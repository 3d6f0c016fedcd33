//! What SPEC §11 adds beyond the snapshot about how the page looks when a
//! reader acts on it and what it names: which elements are interactive
//! (asked of the snapshot), and the interaction states and tokens the
//! worker read of the page afterwards (`looks/`), by backend node id,
//! turned into the manifest's node ids.

use std::collections::{BTreeMap, HashMap, HashSet};

use page_import_contract::capture::{InteractionState, Node, StateLook, StyleChange};

use super::snapshot::{DocumentSnapshot, Snapshot};

/// The roles that make an element interactive (SPEC §11).
const INTERACTIVE_ROLES: [&str; 7] = ["button", "link", "tab", "menuitem", "option", "switch", "checkbox"];

/// What the worker read of the page's own document (the snapshot's first
/// part) beyond the snapshot, by backend node id.
#[derive(Debug, Default)]
pub struct Looks {
    /// In the order examined: the element, the state, and each changed
    /// node's changed properties.
    pub states: Vec<StatesOf>,
    /// Custom properties in force on the root element.
    pub root_tokens: BTreeMap<String, String>,
    /// Elements other than the root that set custom properties.
    pub tokens: Vec<(i64, BTreeMap<String, String>)>,
    pub examined: u32,
    pub cut: bool,
}

/// One element's changes under one state, by backend node id.
#[derive(Debug, Clone, PartialEq)]
pub struct StatesOf {
    pub node: i64,
    pub state: InteractionState,
    pub changes: Vec<(i64, BTreeMap<String, String>)>,
}

impl Snapshot<'_> {
    /// The backend node ids of the laid-out interactive elements of the
    /// snapshot's first document (the page's, with its shadow trees), in
    /// document order (SPEC §11 "Interaction states").
    pub fn interactive(&self) -> Vec<i64> {
        let Some(document) = self.documents.first().filter(|d| !self.is_error_page(d)) else {
            return Vec::new();
        };
        let laid_out: HashSet<usize> = document
            .layout
            .node_index
            .iter()
            .zip(&document.layout.bounds)
            .filter(|(_, b)| b[2] > 0.0 || b[3] > 0.0)
            .map(|(n, _)| *n as usize)
            .collect();
        let pseudo = document.nodes.pseudo_type.to_map();
        let tree = &document.nodes;
        (0..tree.parent_index.len())
            .filter(|n| tree.node_type[*n] == 1 && laid_out.contains(n) && !pseudo.contains_key(n))
            .filter(|n| self.is_interactive(document, *n))
            .map(|n| tree.backend_node_id[n])
            .collect()
    }

    /// SPEC §11's list: links with `href`, form controls, `summary`,
    /// `label`, the interactive roles, a `tabindex` ≥ 0.
    fn is_interactive(&self, document: &DocumentSnapshot, n: usize) -> bool {
        let tree = &document.nodes;
        let attribute = |name: &str| {
            tree.attributes[n]
                .chunks_exact(2)
                .find(|pair| self.required(pair[0]).eq_ignore_ascii_case(name))
                .map(|pair| self.string(pair[1]).unwrap_or(""))
        };
        let element = self.node_name(tree, n).to_ascii_lowercase();
        let by_name = match element.as_str() {
            "a" | "area" => attribute("href").is_some(),
            "button" | "input" | "select" | "textarea" | "summary" | "label" => true,
            _ => false,
        };
        let by_role = attribute("role").is_some_and(|roles| {
            roles
                .split_ascii_whitespace()
                .next()
                .is_some_and(|role| INTERACTIVE_ROLES.iter().any(|r| role.eq_ignore_ascii_case(r)))
        });
        let by_tabindex = attribute("tabindex").is_some_and(|t| t.trim().parse::<i64>().is_ok_and(|t| t >= 0));
        by_name || by_role || by_tabindex
    }
}

/// `looks` with the manifest's node ids (`ids`: the page part's backend
/// node ids' ids): states of an element left out of the manifest are
/// dropped, and so is a change of a node left out; tokens go on their
/// nodes.
pub(super) fn place(looks: &Looks, ids: &HashMap<i64, usize>, nodes: &mut [Node<'_>]) -> Vec<StateLook> {
    for (backend, tokens) in &looks.tokens {
        if let Some(node) = ids.get(backend).and_then(|id| nodes.get_mut(*id)) {
            node.tokens = tokens.clone();
        }
    }
    looks
        .states
        .iter()
        .filter_map(|look| {
            let node = *ids.get(&look.node)?;
            let changes: Vec<StyleChange> = look
                .changes
                .iter()
                .filter_map(|(backend, styles)| {
                    Some(StyleChange {
                        node: *ids.get(backend)?,
                        styles: styles.clone(),
                    })
                })
                .collect();
            (!changes.is_empty()).then_some(StateLook {
                node,
                state: look.state,
                changes,
            })
        })
        .collect()
}
