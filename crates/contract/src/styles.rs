//! The computed style properties a capture records for every laid-out node
//! (SPEC §10, and what §11 adds), in the order of the manifest's
//! `dom.styleNames` and of every entry of `dom.styles`. The worker asks
//! Chromium for exactly these; the tests read SPEC §11's from here.

/// Defines [`SPEC_10`], [`SPEC_11`] and [`STYLE_NAMES`] (the one, then the
/// other) from one list of each.
macro_rules! style_names {
    (spec_10: [$($a:literal,)*], spec_11: [$($b:literal,)*]) => {
        /// SPEC §10's properties.
        pub const SPEC_10: &[&str] = &[$($a,)*];
        /// What SPEC §11 adds: what a design converter needs beyond §10.
        pub const SPEC_11: &[&str] = &[$($b,)*];
        /// Every property captured: §10's, then §11's.
        pub const STYLE_NAMES: &[&str] = &[$($a,)* $($b,)*];
    };
}

style_names! {
    spec_10: [
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
    ],
    spec_11: [
        "text-shadow",
        "filter",
        "backdrop-filter",
        "mix-blend-mode",
        "isolation",
        "clip-path",
        "mask-image",
        "transform-origin",
        "fill",
        "stroke",
        "stroke-width",
        "background-clip",
        "-webkit-text-fill-color",
        "text-overflow",
        "text-indent",
        "word-break",
        "overflow-wrap",
        "font-variant",
        "font-stretch",
        "text-decoration-color",
        "text-decoration-style",
        "outline-color",
        "outline-style",
        "outline-width",
        "outline-offset",
        "content",
        "list-style-position",
        "list-style-image",
        "order",
        "align-content",
        "justify-items",
        "justify-self",
        "grid-column-start",
        "grid-column-end",
        "grid-row-start",
        "grid-row-end",
        "object-position",
        "aspect-ratio",
        "writing-mode",
        // Vertical text: how its glyphs stand, and digits set upright in one
        // cell (縦中横); without them a converter draws "20" sideways.
        "text-orientation",
        "text-combine-upright",
        "direction",
        "-webkit-line-clamp",
        "border-collapse",
        "border-spacing",
        "table-layout",
        "backface-visibility",
        "perspective",
        "appearance",
        "mask-size",
        "mask-position",
        "mask-repeat",
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_list_is_spec_10s_then_spec_11s_each_once() {
        assert_eq!(STYLE_NAMES.len(), SPEC_10.len() + SPEC_11.len());
        assert_eq!(&STYLE_NAMES[..SPEC_10.len()], SPEC_10);
        assert_eq!(&STYLE_NAMES[SPEC_10.len()..], SPEC_11);
        let distinct: std::collections::HashSet<_> = STYLE_NAMES.iter().collect();
        assert_eq!(distinct.len(), STYLE_NAMES.len(), "a property listed twice");
    }
}
