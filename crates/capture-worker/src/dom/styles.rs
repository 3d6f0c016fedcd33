//! What the worker reads of the computed styles it captured: the list
//! itself is the contract's (`page_import_contract::styles`).

use page_import_contract::capture::Node;

pub use page_import_contract::styles::STYLE_NAMES;

/// Where the content of a frame starts inside its owner's box: border and
/// padding, from the owner's computed style.
const CONTENT_INSET: [(&str, &str); 2] = [
    ("border-left-width", "padding-left"),
    ("border-top-width", "padding-top"),
];

/// The top-left corner of `owner`'s content box, in page coordinates.
pub(super) fn content_origin(owner: &Node<'_>, styles: &[Vec<&str>]) -> [f64; 2] {
    let Some([x, y, _, _]) = owner.layout_box else {
        return [0.0, 0.0];
    };
    let [(border_x, padding_x), (border_y, padding_y)] = CONTENT_INSET;
    let px = |name| style_value(owner, styles, name).and_then(|v| v.strip_suffix("px")?.parse().ok());
    // An owner without computed styles has no border or padding; with
    // them, Chromium resolves both to px.
    let px = |name| px(name).unwrap_or(0.0);
    [x + px(border_x) + px(padding_x), y + px(border_y) + px(padding_y)]
}

/// A node's computed value of the style property `name`.
pub(super) fn style_value<'v>(node: &Node<'_>, styles: &'v [Vec<&str>], name: &str) -> Option<&'v str> {
    let at = STYLE_NAMES.iter().position(|n| *n == name)?;
    styles.get(node.style?)?.get(at).copied()
}

/// An element whose content overflows its box and can be scrolled (by the
/// reader or by script: `overflow: hidden` scrolls too).
pub(super) fn scrolls(node: &Node<'_>, styles: &[Vec<&str>], scroll: &[f64], client: &[f64]) -> bool {
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
