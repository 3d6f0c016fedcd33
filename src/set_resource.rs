//! The import set as users see it (SPEC §15): its shared settings, its
//! status and its members' resources (SPEC §6) in order.

use serde::Serialize;

use crate::db::page_import::PageImport;
use crate::db::sets::{set_status, PageImportSet, SetStatus};
use crate::domain::reader::Consent;
use crate::domain::timestamp;
use crate::resource::{PageImportView, Tagged};

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageImportSetView {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub source_url: String,
    pub ready_selector: Option<String>,
    #[schema(example = "en-US")]
    pub locale: String,
    #[schema(example = "UTC")]
    pub time_zone: String,
    pub consent: Consent,
    /// `processing` while any member is; then `completed` (all completed),
    /// `failed` (all failed) or `partial`.
    pub status: SetStatus,
    /// Each live member's resource, in the set's order.
    pub imports: Vec<PageImportView>,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: String,
    pub links: SetLinks,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SetLinks {
    #[serde(rename = "self")]
    pub self_: String,
    pub events: String,
}

impl PageImportSetView {
    /// The set and its live members, in order.
    pub fn new(set: PageImportSet, members: Vec<PageImport>) -> Self {
        let self_ = format!("/page-import-sets/{}", set.id);
        let status = set_status(members.iter().map(|m| m.status));
        Self {
            links: SetLinks {
                events: format!("{self_}/events"),
                self_,
            },
            id: set.id,
            organization_id: set.organization_id,
            project_id: set.project_id,
            source_url: set.source_url,
            ready_selector: set.ready_selector,
            locale: set.locale,
            time_zone: set.time_zone,
            consent: set.consent,
            status,
            imports: members.into_iter().map(PageImportView::from).collect(),
            created_at: timestamp(set.created_at),
            updated_at: timestamp(set.updated_at),
            created_by: set.created_by,
        }
    }

    /// Its JSON and strong ETag; terminal once its status is.
    pub fn tagged(&self) -> Tagged {
        Tagged::of_json(self, self.status.is_terminal())
    }
}
