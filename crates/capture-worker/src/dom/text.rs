//! Where a text box starts in its node's laid-out text, when
//! `text-transform` changed the text's length.

/// For each UTF-16 offset of the DOM text a text node's layout object was
/// made from, the offset of the same place in its laid-out `text`, when the
/// one is the other with each character upper- or lower-cased
/// (`text-transform`; full case mappings, so "ß" may become "SS"). That DOM
/// text is the node's `value`, or what follows its first few characters
/// when a `::first-letter` laid those out itself (Chromium then counts from
/// there). `None` when they are not.
pub(super) fn layout_offsets(value: &str, laid_out: &str) -> Option<Vec<usize>> {
    case_mapped(value, laid_out).or_else(|| {
        (1..=4).find_map(|skip| {
            let (cut, _) = value.char_indices().nth(skip)?;
            case_mapped(&value[cut..], laid_out)
        })
    })
}

/// [`layout_offsets`] of a whole `value`.
fn case_mapped(value: &str, laid_out: &str) -> Option<Vec<usize>> {
    let mut offsets = Vec::with_capacity(value.len() + 1);
    let mut rest = laid_out;
    let mut at = 0;
    for c in value.chars() {
        let forms = [
            c.to_uppercase().collect::<String>(),
            c.to_lowercase().collect(),
            c.to_string(),
        ];
        let form = forms.iter().find(|f| rest.starts_with(f.as_str()))?;
        offsets.extend(std::iter::repeat_n(at, c.len_utf16()));
        at += form.encode_utf16().count();
        rest = &rest[form.len()..];
    }
    offsets.push(at);
    rest.is_empty().then_some(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_box_starts_move_where_text_transform_changed_the_length() {
        // "straße maße" upper-cased: "STRASSE MASSE".
        let offsets = layout_offsets("straße maße", "STRASSE MASSE").unwrap();
        let starts: Vec<usize> = [0, 4, 5, 7, 9, 10].iter().map(|s| offsets[*s]).collect();
        assert_eq!(starts, vec![0, 4, 6, 8, 10, 12]);
        assert_eq!(offsets.last(), Some(&13));
        assert_eq!(layout_offsets("Ab", "ab"), Some(vec![0, 1, 2]), "lower-cased");
        assert_eq!(layout_offsets("abc", "xyz"), None, "not a case change");
        assert_eq!(layout_offsets("ab", "ABC"), None, "text left over");
        // Characters outside the BMP count two UTF-16 units.
        assert_eq!(layout_offsets("𝒜ß", "𝒜SS"), Some(vec![0, 0, 2, 4]));
        // A ::first-letter laid out "“H" itself: Chromium counts the rest's
        // boxes from "e" (measured: a second line's box starts at 90 of
        // "nce upon … paragraph,\n     floating …", not at 91).
        assert_eq!(layout_offsets("“Hello", "ello"), Some(vec![0, 1, 2, 3, 4]));
        assert_eq!(layout_offsets("“Straße", "TRASSE"), Some(vec![0, 1, 2, 3, 5, 6]));
    }
}
