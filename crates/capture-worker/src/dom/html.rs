//! What the HTML and DOM standards say about elements, as the snapshot's
//! reading needs it.

/// Elements `attachShadow` accepts: custom elements and a fixed list (DOM
/// Standard).
pub(super) fn can_host_shadow_root(name: &str) -> bool {
    name.contains('-')
        || matches!(
            name.to_ascii_lowercase().as_str(),
            "article"
                | "aside"
                | "blockquote"
                | "body"
                | "div"
                | "footer"
                | "h1"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "header"
                | "main"
                | "nav"
                | "p"
                | "section"
                | "span"
        )
}

/// Input types whose value shows as text (SPEC §11 form state).
pub(super) fn is_text_like_input(input_type: &str) -> bool {
    !matches!(
        input_type.to_ascii_lowercase().as_str(),
        "checkbox" | "radio" | "button" | "submit" | "reset" | "image" | "file" | "hidden" | "range" | "color"
    )
}
