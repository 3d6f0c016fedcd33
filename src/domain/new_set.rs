//! An import set's create request (SPEC §15): the shared fields and 1–12
//! variants, each checked by the rules of a create (SPEC §6), with the
//! variant's index in the field path of its errors.

use super::new_import::{NewImport, NewImportFields};
use super::{FieldError, SourceUrlPolicy};

/// The fewest and most variants a set may have.
pub const MIN_VARIANTS: usize = 1;
pub const MAX_VARIANTS: usize = 12;

/// A variant as sent: its device and colour scheme.
pub struct VariantFields<'a> {
    pub width: i64,
    pub height: i64,
    pub device_scale_factor: Option<f64>,
    pub mobile: Option<bool>,
    pub color_scheme: Option<&'a str>,
}

/// The request's shared fields as sent, and its variants.
pub struct NewSetFields<'a> {
    pub organization_id: i64,
    pub project_id: i64,
    pub source_url: &'a str,
    pub ready_selector: Option<&'a str>,
    pub locale: Option<&'a str>,
    pub time_zone: Option<&'a str>,
    pub consent: Option<&'a str>,
    pub variants: Vec<VariantFields<'a>>,
}

/// Why a set request is refused before anything is written.
#[derive(Debug)]
pub enum NewSetError {
    /// Field errors (422), every one reported.
    Fields(Vec<FieldError>),
    /// Variant `later` equals variant `earlier` once defaults are filled in.
    Duplicate { earlier: usize, later: usize },
}

/// A set whose every field passed its rules: one import per variant, in
/// order, sharing the page and the reader's language, clock and consent.
pub struct NewSet {
    pub members: Vec<NewImport>,
}

impl NewSet {
    /// Each variant is parsed as a create of its own with the shared fields;
    /// an error of a variant's own field (its viewport, its scheme) is
    /// reported under `variants[i].`, an error of a shared field once.
    pub fn parse(fields: NewSetFields<'_>, policy: SourceUrlPolicy) -> Result<Self, NewSetError> {
        let n = fields.variants.len();
        if !(MIN_VARIANTS..=MAX_VARIANTS).contains(&n) {
            return Err(NewSetError::Fields(vec![FieldError::new(
                "variants",
                "out_of_range",
                format!("variants must hold from {MIN_VARIANTS} to {MAX_VARIANTS} items"),
            )]));
        }
        let mut errors: Vec<FieldError> = Vec::new();
        let mut members = Vec::with_capacity(n);
        for (i, variant) in fields.variants.iter().enumerate() {
            let one = NewImportFields {
                organization_id: fields.organization_id,
                project_id: fields.project_id,
                source_url: fields.source_url,
                width: variant.width,
                height: variant.height,
                device_scale_factor: variant.device_scale_factor,
                mobile: variant.mobile,
                ready_selector: fields.ready_selector,
                color_scheme: variant.color_scheme,
                locale: fields.locale,
                time_zone: fields.time_zone,
                consent: fields.consent,
            };
            match NewImport::parse(one, policy) {
                Ok(member) => members.push(member),
                Err(found) => {
                    for e in found {
                        if is_variant_field(&e.field) {
                            errors.push(e.under(&format!("variants[{i}]")));
                        } else if i == 0 {
                            errors.push(e);
                        }
                    }
                }
            }
        }
        if !errors.is_empty() {
            return Err(NewSetError::Fields(errors));
        }
        if let Some((earlier, later)) = first_duplicate(&members) {
            return Err(NewSetError::Duplicate { earlier, later });
        }
        Ok(Self { members })
    }
}

/// A field a variant sets itself, not one the set shares.
fn is_variant_field(field: &str) -> bool {
    field == "viewport" || field.starts_with("viewport.") || field == "colorScheme"
}

/// The first pair of variants that capture the same, defaults filled in.
fn first_duplicate(members: &[NewImport]) -> Option<(usize, usize)> {
    for (later, b) in members.iter().enumerate() {
        for (earlier, a) in members[..later].iter().enumerate() {
            if a.viewport == b.viewport && a.reader.color_scheme == b.reader.color_scheme {
                return Some((earlier, later));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(width: i64, scheme: Option<&'static str>) -> VariantFields<'static> {
        VariantFields {
            width,
            height: 900,
            device_scale_factor: None,
            mobile: None,
            color_scheme: scheme,
        }
    }

    fn set(variants: Vec<VariantFields<'static>>) -> NewSetFields<'static> {
        NewSetFields {
            organization_id: 1,
            project_id: 1,
            source_url: "https://example.com/",
            ready_selector: None,
            locale: None,
            time_zone: None,
            consent: None,
            variants,
        }
    }

    fn fields_of(err: NewSetError) -> Vec<String> {
        match err {
            NewSetError::Fields(errors) => errors.into_iter().map(|e| e.field.into_owned()).collect(),
            NewSetError::Duplicate { .. } => panic!("a duplicate, not field errors"),
        }
    }

    #[test]
    fn a_variants_errors_name_its_index_and_shared_ones_appear_once() {
        let mut fields = set(vec![
            variant(1440, None),
            variant(10, Some("sepia")),
            variant(390, None),
        ]);
        fields.source_url = "http://localhost/";
        let got = fields_of(NewSet::parse(fields, SourceUrlPolicy::default()).err().unwrap());
        assert_eq!(
            got,
            ["sourceUrl", "variants[1].viewport.width", "variants[1].colorScheme"]
        );
    }

    #[test]
    fn variants_equal_once_defaults_are_filled_in_are_duplicates() {
        let fields = set(vec![
            variant(1440, None),
            variant(390, None),
            variant(390, Some("light")),
        ]);
        match NewSet::parse(fields, SourceUrlPolicy::default()) {
            Err(NewSetError::Duplicate { earlier, later }) => assert_eq!((earlier, later), (1, 2)),
            _ => panic!("a duplicate"),
        }
        let fields = set(vec![variant(390, None), variant(390, Some("dark"))]);
        assert_eq!(
            NewSet::parse(fields, SourceUrlPolicy::default()).unwrap().members.len(),
            2
        );
    }

    #[test]
    fn a_set_holds_one_to_twelve_variants() {
        assert_eq!(
            fields_of(NewSet::parse(set(vec![]), SourceUrlPolicy::default()).err().unwrap()),
            ["variants"]
        );
        let thirteen = (0..13).map(|i| variant(400 + i, None)).collect();
        assert_eq!(
            fields_of(NewSet::parse(set(thirteen), SourceUrlPolicy::default()).err().unwrap()),
            ["variants"]
        );
        let twelve = (0..12).map(|i| variant(400 + i, None)).collect();
        assert_eq!(
            NewSet::parse(set(twelve), SourceUrlPolicy::default())
                .unwrap()
                .members
                .len(),
            12
        );
    }
}
