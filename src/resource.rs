//! The resources as users see them (SPEC §6, §8): what every route answers
//! with, built from rows. Shared by the handlers and the services that record
//! a response with its `Idempotency-Key`.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::db::code2des::Code2Des;
use crate::db::page_import::PageImport;
use crate::domain::reader::{ColorScheme, Consent};
use crate::domain::{timestamp, JobStatus};

/// The resource as users see it (SPEC §6). It has no nonce field at all.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageImportView {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub source_kind: String,
    pub source_url: String,
    pub viewport: ViewportView,
    pub ready_selector: Option<String>,
    /// The reader the capture shows the page to (SPEC §14), defaults filled in.
    pub color_scheme: ColorScheme,
    #[schema(example = "ja-JP")]
    pub locale: String,
    #[schema(example = "Asia/Tokyo")]
    pub time_zone: String,
    pub consent: Consent,
    pub status: JobStatus,
    pub attempt: i32,
    /// When SQS accepted the current attempt's message; `null` while the
    /// attempt waits for a capture slot (SPEC §12).
    pub dispatched_at: Option<String>,
    pub result_url: Option<String>,
    pub capture_hash: Option<String>,
    pub screenshot_url: Option<String>,
    pub error_message: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: String,
    /// The import set it belongs to (SPEC §15); `null` for an import of its own.
    pub set_id: Option<String>,
    pub links: Links,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewportView {
    pub width: i32,
    pub height: i32,
    pub device_scale_factor: f32,
    pub mobile: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Links {
    #[serde(rename = "self")]
    pub self_: String,
    pub capture: Option<String>,
    pub screenshot: Option<String>,
}

impl From<PageImport> for PageImportView {
    fn from(row: PageImport) -> Self {
        let self_ = format!("/page-imports/{}", row.id);
        let links = Links {
            capture: row.result_url.as_ref().map(|_| format!("{self_}/capture")),
            screenshot: row.screenshot_url.as_ref().map(|_| format!("{self_}/screenshot")),
            self_,
        };
        Self {
            id: row.id,
            organization_id: row.organization_id,
            project_id: row.project_id,
            source_kind: row.source_kind,
            source_url: row.source_url,
            viewport: ViewportView {
                width: row.viewport_width,
                height: row.viewport_height,
                device_scale_factor: row.device_scale_factor,
                mobile: row.viewport_mobile,
            },
            ready_selector: row.ready_selector,
            color_scheme: row.color_scheme,
            locale: row.locale,
            time_zone: row.time_zone,
            consent: row.consent,
            status: row.status,
            attempt: row.attempt,
            dispatched_at: row.dispatched_at.map(timestamp),
            result_url: row.result_url,
            capture_hash: row.capture_hash,
            screenshot_url: row.screenshot_url,
            error_message: row.error_message,
            created_at: timestamp(row.created_at),
            updated_at: timestamp(row.updated_at),
            created_by: row.created_by,
            set_id: row.set_id,
            links,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Code2DesView {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub page_import_id: String,
    pub capture_hash: String,
    pub status: JobStatus,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: String,
    pub links: Code2DesLinks,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Code2DesLinks {
    #[serde(rename = "self")]
    pub self_: String,
    pub page_import: String,
}

impl From<Code2Des> for Code2DesView {
    fn from(row: Code2Des) -> Self {
        Self {
            links: Code2DesLinks {
                self_: format!("/code2des/{}", row.id),
                page_import: format!("/page-imports/{}", row.page_import_id),
            },
            id: row.id,
            organization_id: row.organization_id,
            project_id: row.project_id,
            page_import_id: row.page_import_id,
            capture_hash: row.capture_hash,
            status: row.status,
            created_at: timestamp(row.created_at),
            updated_at: timestamp(row.updated_at),
            created_by: row.created_by,
        }
    }
}

/// The resource's JSON and its strong ETag: the first 128 bits of the
/// SHA-256 of exactly those bytes, so the tag changes whenever any field does.
pub struct Tagged {
    pub tag: String,
    pub body: Vec<u8>,
    pub terminal: bool,
}

impl Tagged {
    pub fn of(view: &PageImportView) -> Self {
        Self::of_json(view, view.status != JobStatus::Processing)
    }

    /// Any resource, `terminal` when it can change no more.
    pub fn of_json(view: &impl Serialize, terminal: bool) -> Self {
        let body = serde_json::to_vec(view).expect("the resource serializes");
        let tag = format!("\"{}\"", hex::encode(&Sha256::digest(&body)[..16]));
        Self { tag, body, terminal }
    }

    /// 200 with the body, or 304 without one when `If-None-Match` names the tag.
    pub fn respond(self, request: &HeaderMap) -> Response {
        let etag = HeaderValue::from_str(&self.tag).expect("a hex tag is a valid header value");
        if request
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| none_match_names(v, &self.tag))
        {
            return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
        }
        (
            [
                (header::ETAG, etag),
                (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            ],
            self.body,
        )
            .into_response()
    }
}

/// RFC 9110 §13.1.2: `*`, or a list of tags compared weakly.
fn none_match_names(header: &str, tag: &str) -> bool {
    header.trim() == "*"
        || header
            .split(',')
            .map(|t| t.trim())
            .any(|t| t.strip_prefix("W/").unwrap_or(t) == tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_names_the_tag_weakly_or_by_star() {
        let tag = "\"abc\"";
        assert!(none_match_names("\"abc\"", tag));
        assert!(none_match_names("W/\"abc\"", tag));
        assert!(none_match_names("\"x\", \"abc\"", tag));
        assert!(none_match_names(" * ", tag));
        assert!(!none_match_names("\"abd\"", tag));
        assert!(!none_match_names("abc", tag));
        assert!(!none_match_names("", tag));
    }
}
