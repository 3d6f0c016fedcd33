//! `capture.json` as tests read it: fetched from the bucket, checked against
//! the JSON Schema the contract crate commits (`crates/contract/capture.schema.json`),
//! and looked into by node, style and asset.

use std::ops::Deref;
use std::sync::OnceLock;

use serde_json::Value;

use super::{repo_path, TestApp};

const SCHEMA_PATH: &str = "crates/contract/capture.schema.json";

/// The committed schema, compiled once for the whole test binary.
fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = repo_path(SCHEMA_PATH);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"));
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{path} is not a valid JSON Schema: {e}"))
    })
}

/// Panics with every place where `manifest` breaks the committed schema.
pub fn assert_valid_manifest(manifest: &Value) {
    let errors: Vec<String> = validator()
        .iter_errors(manifest)
        .map(|e| format!("  {} (schema {}): {e}", e.instance_path(), e.schema_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "capture.json does not match {SCHEMA_PATH}:\n{}",
        errors.join("\n")
    );
}

impl TestApp {
    /// An attempt's `capture.json`, checked against the committed schema.
    pub async fn manifest(&self, id: &str, attempt: u32) -> Manifest {
        let json = self
            .object_json(&format!("page-imports/{id}/{attempt}/capture.json"))
            .await;
        assert_valid_manifest(&json);
        Manifest(json)
    }
}

/// A parsed `capture.json`; indexes like the JSON it is.
pub struct Manifest(pub Value);

impl Deref for Manifest {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl Manifest {
    pub fn nodes(&self) -> &[Value] {
        self["dom"]["nodes"].as_array().expect("dom.nodes")
    }

    /// The node with this `id`.
    pub fn node(&self, id: &Value) -> &Value {
        self.nodes()
            .iter()
            .find(|n| n["id"] == *id)
            .unwrap_or_else(|| panic!("no node with id {id}"))
    }

    /// The element whose `id` attribute is `id`.
    pub fn element(&self, id: &str) -> &Value {
        self.nodes()
            .iter()
            .find(|n| n["type"] == 1 && attribute(n, "id") == Some(id))
            .unwrap_or_else(|| panic!("no element with id {id:?}"))
    }

    /// The nodes whose parent is `node`, in order.
    pub fn children<'a>(&'a self, node: &Value) -> Vec<&'a Value> {
        self.nodes().iter().filter(|n| n["parent"] == node["id"]).collect()
    }

    /// The text node whose DOM value is exactly `value`.
    pub fn text_node(&self, value: &str) -> &Value {
        self.nodes()
            .iter()
            .find(|n| n["type"] == 3 && n["value"] == value)
            .unwrap_or_else(|| panic!("no text node {value:?}"))
    }

    /// The computed value of `property` in `node`'s style.
    pub fn style(&self, node: &Value, property: &str) -> &str {
        let dom = &self["dom"];
        let at = dom["styleNames"]
            .as_array()
            .expect("dom.styleNames")
            .iter()
            .position(|n| n == property)
            .unwrap_or_else(|| panic!("{property} is not in dom.styleNames"));
        let style = node["style"]
            .as_u64()
            .unwrap_or_else(|| panic!("node {} has no style", node["id"]));
        dom["styles"][style as usize][at]
            .as_str()
            .unwrap_or_else(|| panic!("style {style} has no value for {property}"))
    }

    pub fn assets(&self) -> &[Value] {
        self["assets"].as_array().expect("assets")
    }

    /// The assets loaded from `url`.
    pub fn assets_from(&self, url: &str) -> Vec<&Value> {
        self.assets().iter().filter(|a| a["url"] == url).collect()
    }

    pub fn asset_with_key(&self, key: &Value) -> &Value {
        self.assets()
            .iter()
            .find(|a| a["key"] == *key)
            .unwrap_or_else(|| panic!("no asset with key {key} in {:?}", self.assets()))
    }
}

/// The value of an element's attribute.
pub fn attribute<'a>(node: &'a Value, name: &str) -> Option<&'a str> {
    node["attributes"]
        .as_array()?
        .iter()
        .find(|pair| pair[0] == name)
        .and_then(|pair| pair[1].as_str())
}

/// Asserts that `node` carries none of `keys`: optional keys are absent
/// where a node has nothing to say (SPEC §11).
pub fn assert_absent(node: &Value, keys: &[&str]) {
    let present: Vec<&&str> = keys.iter().filter(|k| node.get(**k).is_some()).collect();
    assert!(present.is_empty(), "{present:?} present on {node}");
}

/// Width and height from a PNG's IHDR chunk.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(
        png.len() >= 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR",
        "not a PNG"
    );
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}
