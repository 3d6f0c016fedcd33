//! A create request's values, each checked by its own rule (SPEC §6).

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
}

/// The request's fields as sent.
pub struct NewImportFields<'a> {
    pub organization_id: i64,
    pub project_id: i64,
    pub source_url: &'a str,
    pub width: i64,
    pub height: i64,
    pub device_scale_factor: Option<f64>,
    pub ready_selector: Option<&'a str>,
}

impl NewImport {
    /// Every broken rule is one field error; all of them are reported.
    pub fn parse(fields: NewImportFields<'_>, policy: SourceUrlPolicy) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let source_url = SourceUrl::parse(fields.source_url, policy)
            .map_err(|e| errors.push(FieldError::new("sourceUrl", e.code(), e.to_string())))
            .ok();
        let viewport = Viewport::parse(fields.width, fields.height, fields.device_scale_factor)
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
        match (source_url, viewport, errors.is_empty()) {
            (Some(source_url), Some(viewport), true) => Ok(Self {
                organization_id: fields.organization_id,
                project_id: fields.project_id,
                source_url,
                viewport,
                ready_selector,
            }),
            _ => Err(errors),
        }
    }
}
