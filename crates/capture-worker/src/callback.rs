//! Sending the signed callback (SPEC §7, §10): one `webhook-id` per callback,
//! reused on every retry; 2xx done, 410 stop, other 4xx final, 5xx, 429 and
//! transport errors retried with exponential backoff and jitter for up to
//! ten minutes.

use page_import_contract::job::TRACEPARENT;
use page_import_platform::telemetry::trace_context;
use std::time::{Duration, Instant};

use page_import_contract::callback::CallbackBody;
use page_import_contract::webhook::WebhookSecret;
use rand::Rng;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the service recorded it (or recognised a replay).
    Accepted(u16),
    /// 410: the import was deleted; nothing more to do.
    Gone,
    /// Any other 4xx: the service will never accept this callback.
    Refused(u16),
    /// Still failing when the retry budget ran out.
    GaveUp,
}

impl Answer {
    /// Whether the queue message is finished with.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::GaveUp)
    }
}

pub struct CallbackClient {
    http: reqwest::Client,
    secret: WebhookSecret,
    budget: Duration,
}

impl CallbackClient {
    pub fn new(secret: WebhookSecret, budget: Duration) -> Self {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("reqwest client with rustls");
        Self { http, secret, budget }
    }

    /// Sends the callback, with the `traceparent` of its span (SPEC §9),
    /// until it gets a final answer or the budget runs out.
    #[tracing::instrument(name = "step", fields(otel.name = "callback"), skip_all)]
    pub async fn send(&self, url: &str, body: &CallbackBody) -> Answer {
        let traceparent = trace_context::of(&tracing::Span::current());
        let raw = serde_json::to_vec(body).expect("a callback body serializes");
        let msg_id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut tries = 0u32;
        loop {
            tries += 1;
            let timestamp = chrono::Utc::now().timestamp();
            let mut request = self.http.post(url);
            if let Some(traceparent) = &traceparent {
                request = request.header(TRACEPARENT, traceparent);
            }
            let result = request
                .header("content-type", "application/json")
                .header("webhook-id", &msg_id)
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", self.secret.sign(&msg_id, timestamp, &raw))
                .body(raw.clone())
                .send()
                .await;
            let status = match result {
                Ok(response) => response.status().as_u16(),
                Err(e) => {
                    tracing::warn!(tries, error = %e, "callback not delivered");
                    0
                }
            };
            match status {
                200..=299 => return Answer::Accepted(status),
                410 => return Answer::Gone,
                400..=499 if status != 429 => {
                    tracing::warn!(status, page_import_id = %body.page_import_id, "callback refused");
                    return Answer::Refused(status);
                }
                _ => {}
            }
            let jittered = backoff.mul_f64(rand::rng().random_range(0.5..1.5));
            if started.elapsed() + jittered > self.budget {
                tracing::error!(tries, status, page_import_id = %body.page_import_id, "callback gave up");
                return Answer::GaveUp;
            }
            tokio::time::sleep(jittered).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}
