//! A stand-in capture worker: writes artifacts to S3 and calls the signed
//! webhook, the way a real worker would (it knows only the queue message).

use aws_sdk_s3::primitives::ByteStream;
use page_import::webhook::WebhookSecret;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{TestApp, WEBHOOK_SECRET};

/// The job as the worker learns it from the queue message.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub attempt: i64,
    pub nonce: String,
}

pub fn sha256_hash(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

pub fn manifest(job: &Job) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 1,
        "pageImportId": job.id,
        "attempt": job.attempt,
        "nonce": job.nonce,
        "dom": "<html><body><div id=\"app\">Pricing</div></body></html>",
        "computedStyles": {"#app": {"display": "block"}},
        "assets": [{"url": "https://example.com/logo.png", "key": "assets/logo.png"}],
        "screenshot": "screenshot.png",
    }))
    .unwrap()
}

pub const SCREENSHOT: &[u8] = b"\x89PNG\r\n\x1a\nnot really a png";

impl TestApp {
    /// Creates an import and returns the job the worker would receive.
    pub async fn job(&self, tenant: &super::Tenant) -> Job {
        let created = self.create_import(tenant).await;
        let id = created["id"].as_str().unwrap().to_owned();
        // What a worker receives is a dispatched attempt (SPEC §12).
        self.wait_dispatched(&id).await;
        Job {
            nonce: self.nonce_of(&id).await,
            id,
            attempt: 1,
        }
    }

    pub fn artifact_url(&self, job: &Job, name: &str) -> String {
        format!("s3://{}/page-imports/{}/{}/{name}", self.bucket, job.id, job.attempt)
    }

    pub async fn put_object(&self, key: &str, bytes: Vec<u8>) {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .unwrap();
    }

    /// Uploads `manifest_bytes` and a screenshot under the job's prefix and
    /// returns the matching `completed` callback body.
    pub async fn upload_capture(&self, job: &Job, manifest_bytes: Vec<u8>) -> Value {
        let prefix = format!("page-imports/{}/{}", job.id, job.attempt);
        let hash = sha256_hash(&manifest_bytes);
        self.put_object(&format!("{prefix}/capture.json"), manifest_bytes).await;
        self.put_object(&format!("{prefix}/screenshot.png"), SCREENSHOT.to_vec())
            .await;
        self.completed_body(job, &hash)
    }

    pub fn completed_body(&self, job: &Job, capture_hash: &str) -> Value {
        json!({
            "pageImportId": job.id,
            "attempt": job.attempt,
            "nonce": job.nonce,
            "outcome": "completed",
            "resultUrl": self.artifact_url(job, "capture.json"),
            "captureHash": capture_hash,
            "screenshotUrl": self.artifact_url(job, "screenshot.png"),
        })
    }

    pub fn failed_body(&self, job: &Job, message: &str) -> Value {
        json!({
            "pageImportId": job.id,
            "attempt": job.attempt,
            "nonce": job.nonce,
            "outcome": "failed",
            "errorMessage": message,
        })
    }

    /// Sends a callback signed with the configured secret, timestamped now.
    pub async fn callback(&self, body: &Value) -> reqwest::Response {
        let raw = serde_json::to_vec(body).unwrap();
        self.callback_raw(raw, WEBHOOK_SECRET, chrono::Utc::now().timestamp())
            .await
    }

    pub async fn callback_raw(&self, raw: Vec<u8>, secret: &str, timestamp: i64) -> reqwest::Response {
        let msg_id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        self.callback_signed(raw, secret, &msg_id, timestamp).await
    }

    /// Signed with the configured secret under a given `webhook-id` (a retry
    /// of the same callback reuses its id).
    pub async fn callback_with_id(&self, raw: Vec<u8>, msg_id: &str, timestamp: i64) -> reqwest::Response {
        self.callback_signed(raw, WEBHOOK_SECRET, msg_id, timestamp).await
    }

    async fn callback_signed(&self, raw: Vec<u8>, secret: &str, msg_id: &str, timestamp: i64) -> reqwest::Response {
        let base_url = self.url("");
        self.callback_signed_to(&base_url, raw, secret, msg_id, timestamp, None)
            .await
    }

    /// Sends a callback signed with the configured secret, timestamped now,
    /// to the service at `base_url` (a service process of the test's own),
    /// with the `traceparent` header a worker sends, when given.
    pub async fn callback_to(&self, base_url: &str, body: &Value, traceparent: Option<&str>) -> reqwest::Response {
        let raw = serde_json::to_vec(body).unwrap();
        let msg_id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        let now = chrono::Utc::now().timestamp();
        self.callback_signed_to(base_url, raw, WEBHOOK_SECRET, &msg_id, now, traceparent)
            .await
    }

    async fn callback_signed_to(
        &self,
        base_url: &str,
        raw: Vec<u8>,
        secret: &str,
        msg_id: &str,
        timestamp: i64,
        traceparent: Option<&str>,
    ) -> reqwest::Response {
        let signature = WebhookSecret::parse(secret).unwrap().sign(msg_id, timestamp, &raw);
        let mut request = self.http.post(format!("{base_url}/webhooks/page-imports"));
        if let Some(tp) = traceparent {
            request = request.header("traceparent", tp);
        }
        request
            .header("content-type", "application/json")
            .header("webhook-id", msg_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(raw)
            .send()
            .await
            .unwrap()
    }

    /// The row's lifecycle columns, for checking that nothing changed.
    pub async fn lifecycle(&self, id: &str) -> Value {
        sqlx::query_scalar(
            "select json_build_object('status', status, 'attempt', attempt, 'resultUrl', result_url,
                    'captureHash', capture_hash, 'screenshotUrl', screenshot_url, 'errorMessage', error_message,
                    'updatedAt', updated_at, 'updatedBy', updated_by, 'deleted', deleted_at is not null)
             from page_import where id = $1",
        )
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }
}
