//! A reader's presses in a plain Chromium ([`super::chromium::Browser`]):
//! a control found by its text or a CSS selector in the page, in its open
//! and closed shadow roots (through DevTools' view of the DOM, which a
//! reader's mouse reaches and a page's script does not), or in a frame of
//! another site (through that frame's own target).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::chromium::Browser;

/// How long a reader looks at a control before pressing it (some
/// libraries build their banner after the load event, and wire its
/// buttons after that).
const READING: Duration = Duration::from_millis(1000);

/// The element a reader means by `label`: the one `label` selects when it
/// starts with `#`, `.` or `[`, else the first button, link or
/// `role=button` whose text holds `label`.
fn is_selector(label: &str) -> bool {
    label.starts_with('#') || label.starts_with('.') || label.starts_with('[')
}

/// Every node of a `DOM.getDocument` tree with `pierce` (shadow roots of
/// both modes, frames' documents of the same process), depth first.
fn flatten<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(node);
    for key in ["shadowRoots", "children"] {
        if let Some(children) = node[key].as_array() {
            for child in children {
                flatten(child, out);
            }
        }
    }
    if node["contentDocument"].is_object() {
        flatten(&node["contentDocument"], out);
    }
}

/// The text of `node` and its descendants, shadow roots included.
fn text_of(node: &Value) -> String {
    let mut all = Vec::new();
    flatten(node, &mut all);
    all.iter()
        .filter(|n| n["nodeType"] == 3)
        .filter_map(|n| n["nodeValue"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

fn attribute<'a>(node: &'a Value, name: &str) -> Option<&'a str> {
    let attributes = node["attributes"].as_array()?;
    attributes
        .chunks(2)
        .find(|pair| pair[0] == name)
        .and_then(|pair| pair[1].as_str())
}

impl Browser {
    /// The DevTools node ids of the elements `label` means, anywhere in the
    /// page's documents and shadow roots, in document order.
    async fn controls(&mut self, label: &str) -> Vec<u64> {
        let document = self.call("DOM.getDocument", json!({"depth": -1, "pierce": true})).await;
        let mut nodes = Vec::new();
        flatten(&document["root"], &mut nodes);
        if is_selector(label) {
            let mut found = Vec::new();
            // The document and every shadow root, each queried on its own.
            for scope in nodes.iter().filter(|n| n["nodeType"] == 9 || n["nodeType"] == 11) {
                let answer = self
                    .call(
                        "DOM.querySelectorAll",
                        json!({"nodeId": scope["nodeId"], "selector": label}),
                    )
                    .await;
                found.extend(answer["nodeIds"].as_array().unwrap().iter().filter_map(Value::as_u64));
            }
            return found;
        }
        nodes
            .iter()
            .filter(|n| {
                n["nodeType"] == 1
                    && (matches!(n["nodeName"].as_str(), Some("BUTTON" | "A"))
                        || attribute(n, "role") == Some("button"))
                    && text_of(n).trim().contains(label)
            })
            .filter_map(|n| n["nodeId"].as_u64())
            .collect()
    }

    /// Presses the first shown control `label` means, a reading pause
    /// after it shows (at most 5 s of looking); panics if none shows.
    pub async fn press(&mut self, label: &str) {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            for node in self.controls(label).await {
                let object = self.call("DOM.resolveNode", json!({"nodeId": node})).await;
                let object_id = object["object"]["objectId"].clone();
                let shown = self
                    .call(
                        "Runtime.callFunctionOn",
                        json!({"objectId": object_id, "returnByValue": true,
                               "functionDeclaration": "function () { return this.checkVisibility({ opacityProperty: true, visibilityProperty: true }) && this.getClientRects().length > 0; }"}),
                    )
                    .await;
                if shown["result"]["value"] == true {
                    tokio::time::sleep(READING).await;
                    self.call(
                        "Runtime.callFunctionOn",
                        json!({"objectId": object_id, "functionDeclaration": "function () { this.click(); }"}),
                    )
                    .await;
                    return;
                }
            }
            assert!(Instant::now() < until, "no shown control {label:?} to press");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Presses the control `label` means in the frame of another site whose
    /// URL starts with `url_prefix`, as [`Browser::press`] does.
    pub async fn press_in_frame(&mut self, url_prefix: &str, label: &str) {
        let find = if is_selector(label) {
            format!("document.querySelector({label:?})")
        } else {
            format!("[...document.querySelectorAll('button, a, [role=button]')].find(e => e.textContent.trim().includes({label:?}))")
        };
        let script = format!(
            "new Promise(done => {{ const until = Date.now() + 5000; (function look() {{ const b = {find};
               if (b && b.checkVisibility() && b.getClientRects().length > 0) setTimeout(() => {{ b.click(); done('pressed'); }}, {});
               else if (Date.now() > until) done('none'); else setTimeout(look, 100); }})(); }})",
            READING.as_millis()
        );
        let answer = self.eval_in_frame(url_prefix, &script).await;
        assert_eq!(
            answer, "pressed",
            "no shown control {label:?} in the frame at {url_prefix}"
        );
    }
}
