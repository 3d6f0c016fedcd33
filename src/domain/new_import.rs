//! A create request's values, each checked by its own rule (SPEC §6).

use super::reader::{ColorScheme, Consent, Locale, ReaderSettings, TimeZone};
use super::FieldError;
use super::{ReadySelector, SourceUrl, SourceUrlPolicy, Viewport};

/// A create whose every field passed its rules (the DNS check, which needs
/// the network, is the service's: `service::create`).
pub struct NewImport {
    pub organization_id: i64,
    pub project_id: i64,
    pub source_url: SourceUrl,
    pub viewport: Viewport,
    pub ready_selector: Option<ReadySelector>,
    pub reader: ReaderSettings,
}

/// The request's fields as sent.
pub struct NewImportFields<'a> {
    pub organization_id: i64,
    pub project_id: i64,
    pub source_url: &'a str,
    pub width: i64,
    pub height: i64,
    pub device_scale_factor: Option<f64>,
    pub mobile: Option<bool>,
    pub ready_selector: Option<&'a str>,
    pub color_scheme: Option<&'a str>,
    pub locale: Option<&'a str>,
    pub time_zone: Option<&'a str>,
    pub consent: Option<&'a str>,
}

impl NewImport {
    /// Every broken rule is one field error; all of them are reported.
    pub fn parse(fields: NewImportFields<'_>, policy: SourceUrlPolicy) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let source_url = SourceUrl::parse(fields.source_url, policy)
            .map_err(|e| errors.push(FieldError::new("sourceUrl", e.code(), e.to_string())))
            .ok();
        let viewport = Viewport::parse(
            fields.width,
            fields.height,
            fields.device_scale_factor,
            fields.mobile.unwrap_or(false),
        )
        .map_err(|e| errors.extend(e))
        .ok();
        let ready_selector = match fields.ready_selector.map(ReadySelector::parse) {
            Some(Err(e)) => {
                errors.push(e);
                None
            }
            Some(Ok(s)) => Some(s),
            None => None,
        };
        let reader = reader_settings(&fields, &mut errors);
        match (source_url, viewport, errors.is_empty()) {
            (Some(source_url), Some(viewport), true) => Ok(Self {
                organization_id: fields.organization_id,
                project_id: fields.project_id,
                source_url,
                viewport,
                ready_selector,
                reader,
            }),
            _ => Err(errors),
        }
    }
}

/// The reader's settings (SPEC §14): each absent one its default, each
/// malformed one a field error (and its default meanwhile).
fn reader_settings(fields: &NewImportFields<'_>, errors: &mut Vec<FieldError>) -> ReaderSettings {
    let locale = match fields.locale.map(Locale::parse).transpose() {
        Ok(locale) => locale.unwrap_or_default(),
        Err(e) => {
            errors.push(e);
            Locale::default()
        }
    };
    let time_zone = match fields.time_zone.map(TimeZone::parse).transpose() {
        Ok(zone) => zone.unwrap_or_default(),
        Err(e) => {
            errors.push(e);
            TimeZone::default()
        }
    };
    let color_scheme = one_of(fields.color_scheme, "colorScheme", ColorScheme::parse, "light or dark");
    let consent = one_of(fields.consent, "consent", Consent::parse, "decline or keep");
    ReaderSettings {
        color_scheme: color_scheme.unwrap_or_else(|e| {
            errors.push(e);
            ColorScheme::default()
        }),
        locale,
        time_zone,
        consent: consent.unwrap_or_else(|e| {
            errors.push(e);
            Consent::default()
        }),
    }
}

/// An optional field whose value is one of a few words: the default when
/// absent, a 422 naming the field when another word.
fn one_of<T: Default>(
    value: Option<&str>,
    field: &'static str,
    parse: fn(&str) -> Option<T>,
    allowed: &str,
) -> Result<T, FieldError> {
    match value {
        None => Ok(T::default()),
        Some(value) => {
            parse(value).ok_or_else(|| FieldError::new(field, "invalid_value", format!("{field} must be {allowed}")))
        }
    }
}
