//! How the page looks when a reader acts on it, and what it names (SPEC §11
//! "Interaction states" and "The page's tokens"), read of the page's own
//! document once its screenshot, snapshot and element pixels are taken, so
//! that none of them shows a forced state.
//!
//! The page's style sheets come from Chromium's CSS domain (`CSS.enable`
//! reports each, also in shadow roots, constructed and from other origins;
//! `CSS.getStyleSheetText` reads it) and are parsed in a world of the
//! worker's own (`looks.js`). From them: the custom properties the page
//! declares (the tokens), and per state the compounds an element must match
//! for a rule with that pseudo-class to apply to it, so that an element no
//! rule can change is not examined. Each examined element then goes through
//! its states in one stream of commands the worker does not wait between
//! (`CSS.forcePseudoState`, a read, the state lifted), which Chromium runs
//! in order (see [`run`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use page_import_contract::capture::InteractionState;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cdp::{CdpError, Command, Done};
use crate::commands::{
    CreateIsolatedWorld, CssEnable, DomEnable, Evaluate, GetDocument, PushNodesByBackendIdsToFrontend, ResolveNode,
};
use crate::dom::{Looks, STYLE_NAMES};
use crate::page::{Page, COMMAND_TIMEOUT};
use crate::protocol::Evaluated;

mod run;

/// The page-side half (see the file).
const LOOKS_SCRIPT: &str = include_str!("looks.js");
/// SPEC §11: at most this many elements examined, within this long.
pub const MAX_EXAMINED: usize = 500;
pub const STATES_BUDGET: Duration = Duration::from_millis(1500);
/// Interactive elements considered at most (resolved and matched against
/// the rules): past them, the cut is said.
const MAX_CANDIDATES: usize = 1500;
/// The style sheets' text read at most, in all: past it, sheets are left
/// out (their tokens unknown, their states taken as any element's, every
/// property read under them).
const MAX_SHEET_BYTES: usize = 16 * 1024 * 1024;
/// CDP calls in flight at once where the order does not matter.
const IN_FLIGHT: usize = 64;

impl Page {
    /// The interaction states of `interactive` (the page's laid-out
    /// interactive elements, by backend node id, in document order) and
    /// the page's tokens, read in frame `frame_id` (the page's). What
    /// Chromium does not answer is left out and said in the log; the
    /// capture goes on.
    pub async fn looks(&self, frame_id: Option<&str>, interactive: &[i64]) -> Looks {
        let started = Instant::now();
        let Some(frame_id) = frame_id else {
            return Looks {
                cut: !interactive.is_empty(),
                ..Looks::default()
            };
        };
        match self.read_looks(frame_id, interactive, started).await {
            Ok(looks) => looks,
            Err(e) => {
                tracing::warn!(error = %e, "the page's states and tokens could not be read; they are left out");
                crate::metrics::dropped("states");
                Looks {
                    cut: !interactive.is_empty(),
                    ..Looks::default()
                }
            }
        }
    }

    async fn read_looks(&self, frame_id: &str, interactive: &[i64], started: Instant) -> Result<Looks, CdpError> {
        let session = Some(self.session.as_str());
        self.cdp.send(session, &DomEnable {}, COMMAND_TIMEOUT).await?;
        self.cdp.send(session, &CssEnable {}, COMMAND_TIMEOUT).await?;
        // `CSS.enable` reports every sheet before it answers; the events
        // reach the page's state through its event task.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let world = self
            .cdp
            .send(
                session,
                &CreateIsolatedWorld {
                    frame_id,
                    world_name: "page-import-looks",
                },
                COMMAND_TIMEOUT,
            )
            .await?
            .execution_context_id;
        let install = Evaluate {
            expression: LOOKS_SCRIPT,
            context_id: Some(world),
            await_promise: false,
            return_by_value: true,
        };
        self.cdp.send(session, &install, COMMAND_TIMEOUT).await?;
        let tokens = self.read_sheets(world).await?;
        let mut reads = run::Reads::default();
        let (examined, cut) = self.examine(world, interactive, started, &mut reads).await?;
        let nodes = self.named_nodes(world).await?;
        Ok(reads.into_looks(tokens, &nodes, examined, cut))
    }

    /// The page's sheets, read through CSS, given to `looks.js`; its
    /// answer: the tokens, `{root, elements}`.
    async fn read_sheets(&self, world: i64) -> Result<Value, CdpError> {
        let session = Some(self.session.as_str());
        let headers: Vec<_> = self
            .state()
            .style_sheets
            .get(&self.session)
            .map(|sheets| sheets.iter().filter(|s| s.origin == "regular").cloned().collect())
            .unwrap_or_default();
        let texts: Vec<_> = headers
            .iter()
            .map(|h| {
                let (cdp, session, id) = (self.cdp.clone(), self.session.clone(), h.style_sheet_id.clone());
                async move {
                    let read = GetStyleSheetText { style_sheet_id: &id };
                    cdp.send(Some(&session), &read, COMMAND_TIMEOUT).await
                }
            })
            .collect();
        let texts = futures::future::join_all(texts).await;
        let owners: Vec<_> = headers
            .iter()
            .map(|h| {
                let (cdp, session, owner) = (self.cdp.clone(), self.session.clone(), h.owner_node);
                async move {
                    let resolve = ResolveNode {
                        backend_node_id: owner?,
                        execution_context_id: world,
                    };
                    resolve.object_id(&cdp, &session, COMMAND_TIMEOUT).await
                }
            })
            .collect();
        let owners = futures::future::join_all(owners).await;
        let mut sheets = Vec::new();
        let mut owner_ids: Vec<&str> = Vec::new();
        let mut bytes = 0;
        let mut complete = true;
        for (text, owner) in texts.into_iter().zip(&owners) {
            let Ok(text) = text else {
                // A sheet removed since it was reported.
                continue;
            };
            bytes += text.text.len();
            if bytes > MAX_SHEET_BYTES {
                tracing::debug!("the page's style sheets are too large to read in full; the rest are left out");
                complete = false;
                break;
            }
            let owner = match owner {
                Some(id) => {
                    owner_ids.push(id);
                    owner_ids.len() as i64 - 1
                }
                None => -1,
            };
            sheets.push(serde_json::json!({"text": text.text, "owner": owner}));
        }
        let mut arguments = vec![
            Argument::Value {
                value: Value::Array(sheets),
            },
            Argument::Value {
                value: serde_json::json!(STYLE_NAMES),
            },
            Argument::Value {
                value: Value::Bool(complete),
            },
        ];
        arguments.extend(owner_ids.iter().map(|id| Argument::Object { object_id: id }));
        let init = CallInWorld {
            execution_context_id: world,
            function_declaration:
                "function (sheets, names, complete, ...owners) { return __pageImportLooks.init(sheets, names, complete, owners); }",
            arguments,
            return_by_value: true,
        };
        Ok(self
            .cdp
            .send(session, &init, COMMAND_TIMEOUT)
            .await?
            .value()
            .unwrap_or(Value::Null))
    }

    /// Every node `looks.js` named in its answers, by its index there: its
    /// backend node id, and its pseudo-elements' by type.
    async fn named_nodes(&self, world: i64) -> Result<Vec<Option<i64>>, CdpError> {
        use futures::StreamExt;
        let session = Some(self.session.as_str());
        let call = |function_declaration, return_by_value| CallInWorld {
            execution_context_id: world,
            function_declaration,
            arguments: Vec::new(),
            return_by_value,
        };
        let pseudos = self
            .cdp
            .send(
                session,
                &call("function () { return __pageImportLooks.pseudos(); }", true),
                COMMAND_TIMEOUT,
            )
            .await?
            .value();
        let pseudos: Vec<Option<String>> = pseudos.and_then(|p| serde_json::from_value(p).ok()).unwrap_or_default();
        if pseudos.is_empty() {
            return Ok(Vec::new());
        }
        let list = self
            .cdp
            .send(
                session,
                &call("function () { return __pageImportLooks.elements(); }", false),
                COMMAND_TIMEOUT,
            )
            .await?;
        let Some(list) = list.result.object_id else {
            return Ok(Vec::new());
        };
        let properties = GetProperties {
            object_id: &list,
            own_properties: true,
        };
        let properties = self.cdp.send(session, &properties, COMMAND_TIMEOUT).await?;
        let mut objects: Vec<Option<String>> = vec![None; pseudos.len()];
        for p in properties.result {
            if let (Ok(i), Some(id)) = (p.name.parse::<usize>(), p.value.and_then(|v| v.object_id)) {
                if let Some(slot) = objects.get_mut(i) {
                    *slot = Some(id);
                }
            }
        }
        let describes: Vec<_> = objects
            .into_iter()
            .zip(pseudos)
            .map(|(object, pseudo)| {
                let (cdp, session) = (self.cdp.clone(), self.session.clone());
                async move {
                    let describe = DescribeRef {
                        object_id: object.as_deref()?,
                        depth: 0,
                    };
                    let node = cdp.send(Some(&session), &describe, COMMAND_TIMEOUT).await.ok()?.node;
                    match pseudo {
                        None => Some(node.backend_node_id),
                        Some(kind) => node
                            .pseudo_elements
                            .iter()
                            .find(|p| p.pseudo_type == kind)
                            .map(|p| p.backend_node_id),
                    }
                }
            })
            .collect();
        let described: Vec<Option<i64>> = futures::stream::iter(describes).buffered(IN_FLIGHT).collect().await;
        Ok(described)
    }
}

/// What `looks.js` answered, gathered: each examined element's changes
/// under each state, naming nodes by their index among its named nodes.
impl run::Reads {
    fn into_looks(self, tokens: Value, nodes: &[Option<i64>], examined: u32, cut: bool) -> Looks {
        let node = |i: &Value| i.as_u64().and_then(|i| nodes.get(i as usize).copied().flatten());
        let styles = |v: &Value| -> BTreeMap<String, String> {
            v.as_object()
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let pairs = |v: &Value| -> Vec<(i64, BTreeMap<String, String>)> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|pair| Some((node(pair.get(0)?)?, styles(pair.get(1)?))))
                .filter(|(_, styles)| !styles.is_empty())
                .collect()
        };
        let states = self
            .0
            .into_iter()
            .filter_map(|(element, state, answer)| {
                let changes = pairs(&answer);
                (!changes.is_empty()).then_some(crate::dom::StatesOf {
                    node: element,
                    state,
                    changes,
                })
            })
            .collect();
        Looks {
            states,
            root_tokens: styles(&tokens["root"]),
            tokens: pairs(&tokens["elements"]),
            examined,
            cut,
        }
    }
}

/// The pseudo-classes `CSS.forcePseudoState` forces for a state.
fn forced(state: InteractionState) -> &'static [&'static str] {
    match state {
        InteractionState::Hover => &["hover"],
        InteractionState::FocusVisible => &["focus", "focus-visible", "focus-within"],
        InteractionState::Active => &["active"],
    }
}

// ---- The commands of its own.

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GetStyleSheetText<'a> {
    style_sheet_id: &'a str,
}

#[derive(Deserialize)]
struct SheetText {
    text: String,
}

impl Command for GetStyleSheetText<'_> {
    const METHOD: &'static str = "CSS.getStyleSheetText";
    type Reply = SheetText;
}

/// `Runtime.callFunctionOn` in a world, with values and objects of it as
/// arguments.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallInWorld<'a> {
    execution_context_id: i64,
    function_declaration: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    arguments: Vec<Argument<'a>>,
    return_by_value: bool,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Argument<'a> {
    Value {
        value: Value,
    },
    Object {
        #[serde(rename = "objectId")]
        object_id: &'a str,
    },
}

impl Command for CallInWorld<'_> {
    const METHOD: &'static str = "Runtime.callFunctionOn";
    type Reply = Evaluated;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GetProperties<'a> {
    object_id: &'a str,
    own_properties: bool,
}

#[derive(Deserialize)]
struct Properties {
    result: Vec<Property>,
}

#[derive(Deserialize)]
struct Property {
    name: String,
    value: Option<crate::protocol::RemoteObject>,
}

impl Command for GetProperties<'_> {
    const METHOD: &'static str = "Runtime.getProperties";
    type Reply = Properties;
}

/// `DOM.describeNode` of a JavaScript object: its backend node id and its
/// pseudo-elements'.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DescribeRef<'a> {
    object_id: &'a str,
    depth: i64,
}

#[derive(Deserialize)]
struct DescribedRef {
    node: RefNode,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RefNode {
    backend_node_id: i64,
    #[serde(default)]
    pseudo_elements: Vec<PseudoNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PseudoNode {
    backend_node_id: i64,
    pseudo_type: String,
}

impl Command for DescribeRef<'_> {
    const METHOD: &'static str = "DOM.describeNode";
    type Reply = DescribedRef;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ForcePseudoState<'a> {
    node_id: i64,
    forced_pseudo_classes: &'a [&'a str],
}

impl Command for ForcePseudoState<'_> {
    const METHOD: &'static str = "CSS.forcePseudoState";
    type Reply = Done;
}
