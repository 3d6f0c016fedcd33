//! `DOMSnapshot.captureSnapshot` turned into the manifest's `dom`: a flat
//! list of nodes with parent ids (deep pages do not nest deeply), layout
//! boxes, text boxes, paint order, and computed styles as indexes into one
//! table of distinct style sets; and what SPEC §11 adds, most of it from the
//! same snapshot: the documents, pseudo-elements and the text they generate,
//! laid-out text, shadow roots, form state, `currentSrc`, scroll containers
//! and stacking contexts. What the snapshot does not tell (fonts used, the
//! pixels of canvases and videos, which element hosts a shadow root when
//! that is ambiguous) is asked of Chromium by the page while it is open
//! (`details.rs`), from the snapshot's [`Questions`], and comes back as a
//! part's [`Details`].
//!
//! Under site isolation a cross-site frame renders in a process of its own
//! and is snapshotted through its own CDP session (SPEC §10 Frames): each
//! such snapshot is one [`Part`], stitched under the `<iframe>` element that
//! owns it, its boxes moved from the frame's coordinates to the page's.
//!
//! One job per file: [`snapshot`] decodes Chromium's answer and checks it,
//! [`questions`] says what to ask Chromium after it, [`build`] turns the
//! parts into the manifest's `dom`; [`styles`] and [`html`] hold what the
//! others read of CSS and of HTML elements, `text` the text-transform
//! offsets.

use std::collections::{HashMap, HashSet};

mod build;
mod html;
mod looks;
mod questions;
mod snapshot;
mod styles;
#[cfg(test)]
mod tests;
mod text;

#[cfg(test)]
pub use build::dom;
pub use build::dom_with_looks;
pub use looks::{Looks, StatesOf};
pub use questions::{PixelsOf, Questions, TextNode, MAX_ELEMENT_IMAGES};
pub use snapshot::{Snapshot, SnapshotError};
pub use styles::STYLE_NAMES;

/// One snapshot: the page's, or a cross-site frame's taken through its own
/// session, with the `<iframe>` that owns it and what the worker asked
/// Chromium about its nodes afterwards.
pub struct Part<'a> {
    pub snapshot: Snapshot<'a>,
    pub owner: Option<Owner>,
    pub details: Details,
}

/// The element that holds a frame: its backend node id in an earlier part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub part: usize,
    pub backend_node_id: i64,
}

/// Chromium's answers to a part's [`Questions`].
#[derive(Debug, Default)]
pub struct Details {
    /// Indexes into the used-font table, most glyphs first.
    pub fonts: HashMap<i64, Vec<usize>>,
    /// Index of the element's image among the capture's element images.
    pub pixels: HashMap<i64, usize>,
    /// Of the `maybe_hosts`, those that host a shadow root.
    pub hosts: HashSet<i64>,
    /// The computed style of the `unlaid_styles`, one value per
    /// [`STYLE_NAMES`].
    pub styles: HashMap<i64, Vec<String>>,
}
