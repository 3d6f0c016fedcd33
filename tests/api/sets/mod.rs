//! Import sets (SPEC §15): the routes and what each answers (`routes`),
//! their dispatch as one message holding one slot (`dispatch`), and races
//! against admission and against a member's callback (`races`).

mod dispatch;
mod routes;

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::worker::Job;
use crate::helpers::*;

/// Desktop, tablet and phone.
pub fn three_variants() -> Value {
    json!([
        {"viewport": {"width": 1440, "height": 900}},
        {"viewport": {"width": 820, "height": 1180, "deviceScaleFactor": 2, "mobile": true}},
        {"viewport": {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true}, "colorScheme": "dark"},
    ])
}

pub fn set_body(tenant: &Tenant, variants: Value) -> Value {
    json!({
        "organizationId": tenant.organization_id,
        "projectId": tenant.project_id,
        "sourceUrl": "https://Example.COM:443/a/../pricing#plans",
        "readySelector": "#app",
        "locale": "ja-jp",
        "variants": variants,
    })
}

impl TestApp {
    /// Creates a set of `variants`; its 202 body.
    pub async fn create_set(&self, tenant: &Tenant, variants: Value) -> Value {
        let response = self
            .post_json("/page-import-sets", &tenant.token, &set_body(tenant, variants))
            .await;
        assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
        response.json().await.unwrap()
    }

    /// The messages on the capture queue within `timeout` (at most `n`).
    pub async fn messages_within(&self, n: usize, timeout: Duration) -> Vec<Value> {
        self.receive_within(&self.page_import_queue_url, n, timeout).await
    }

    /// Ends a member's attempt as a worker that failed it (not retryable).
    pub async fn fail_job(&self, job: &Job) {
        let response = self.callback(&self.failed_body(job, "played worker")).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }

    /// Completes a member's attempt with a stored capture.
    pub async fn complete_job(&self, job: &Job) {
        let body = self.upload_capture(job, worker::manifest(job)).await;
        let response = self.callback(&body).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }
}

/// The jobs of a set's message, in order.
pub fn jobs_of_set(message: &Value) -> Vec<Job> {
    message["jobs"].as_array().unwrap().iter().map(job_of).collect()
}

pub fn job_of(message: &Value) -> Job {
    Job {
        id: message["pageImportId"].as_str().unwrap().to_owned(),
        attempt: message["attempt"].as_i64().unwrap(),
        nonce: message["nonce"].as_str().unwrap().to_owned(),
    }
}

/// The ids of a set's members, in order.
pub fn member_ids(set: &Value) -> Vec<String> {
    set["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}
