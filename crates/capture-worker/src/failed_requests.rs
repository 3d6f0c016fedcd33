//! The capture's requests that did not load (SPEC §11 "What did not load"):
//! [`Failures`] is fed the page's network events as they come, and
//! [`Failures::list`] says, once the capture is taken, which failed and why.
//!
//! Why is told last, with the egress proxy's ledger beside it: the browser
//! only saw the proxy's answer (a `403` or a `502`, or a tunnel that did not
//! open). A request the egress rules refused is `blockedRequests`'s, not
//! ours; one whose server the proxy could not reach failed the way the
//! proxy met it (a name that did not resolve, a refused, reset or
//! timed-out connection), not with the proxy's status.

use std::collections::HashMap;

use page_import_contract::capture::{FailedRequest, FailureReason, RequestKind, MAX_FAILED_REQUESTS};

use crate::egress::{EgressReport, Upstream};
use crate::protocol::LoadingFailed;

/// How many failures are kept to be told apart from refusals at the end: a
/// page can be refused more than the list holds, so twice the list. Past
/// it, failures are counted as omitted without that check.
const MAX_SEEN: usize = 2 * MAX_FAILED_REQUESTS;

/// What the page's requests met so far.
#[derive(Debug, Default)]
pub struct Failures {
    /// Requests sent and not yet ended: their URL (after redirects) and
    /// resource type.
    pending: HashMap<String, (String, Option<String>)>,
    seen: Vec<Seen>,
    /// Failures past [`MAX_SEEN`].
    overflow: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    url: String,
    kind: RequestKind,
    how: How,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum How {
    Status(u16),
    Net(String),
    BlockedByBrowser(String),
}

/// The list `capture.json` carries, and the count of those left out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailedRequests {
    pub listed: Vec<FailedRequest>,
    pub omitted: u64,
}

impl Failures {
    /// A request was sent (or redirected: the URL is the new one).
    pub fn sent(&mut self, request_id: &str, url: &str, kind: Option<&str>) {
        if url.starts_with("http") || url.starts_with("ws") {
            self.pending
                .insert(request_id.to_owned(), (url.to_owned(), kind.map(str::to_owned)));
        }
    }

    /// A request was answered; one of 400 or more did not load what it was
    /// for, whatever its body.
    pub fn answered(&mut self, request_id: &str, url: &str, kind: &str, status: u16) {
        if status >= 400 && self.pending.remove(request_id).is_some() {
            self.push(url, Some(kind), How::Status(status));
        }
    }

    pub fn finished(&mut self, request_id: &str) {
        self.pending.remove(request_id);
    }

    /// A request ended without loading. One the page or the browser
    /// cancelled (`canceled`, `net::ERR_ABORTED`: an image replaced, a frame
    /// removed, a navigation superseded) is not a failure.
    pub fn failed(&mut self, ended: &LoadingFailed) {
        let Some((url, kind)) = self.pending.remove(&ended.request_id) else {
            return;
        };
        if ended.canceled || ended.error_text == "net::ERR_ABORTED" {
            return;
        }
        let how = match &ended.blocked_reason {
            Some(reason) => How::BlockedByBrowser(reason.clone()),
            None => How::Net(ended.error_text.clone()),
        };
        self.push(&url, ended.kind.as_deref().or(kind.as_deref()), how);
    }

    fn push(&mut self, url: &str, kind: Option<&str>, how: How) {
        if self.seen.len() >= MAX_SEEN {
            self.overflow += 1;
            return;
        }
        self.seen.push(Seen {
            url: url.to_owned(),
            kind: kind.map_or(RequestKind::Other, RequestKind::of_resource_type),
            how,
        });
    }

    /// The failures, in the order they happened, each with its reason, and
    /// none the egress rules refused: the first [`MAX_FAILED_REQUESTS`] and
    /// a count of the rest.
    pub fn list(&self, egress: &EgressReport) -> FailedRequests {
        let mut failed = self.seen.iter().filter_map(|seen| told(seen, egress));
        let listed: Vec<FailedRequest> = failed.by_ref().take(MAX_FAILED_REQUESTS).collect();
        FailedRequests {
            listed,
            omitted: failed.count() as u64 + self.overflow,
        }
    }
}

/// What `seen` was, told with the proxy's ledger; `None` for a request the
/// egress rules refused.
fn told(seen: &Seen, egress: &EgressReport) -> Option<FailedRequest> {
    if egress.is_blocked(&seen.url) {
        return None;
    }
    let through_proxy = || egress.upstream_failure(&seen.url).map(reason_of_upstream);
    let mut request = FailedRequest::new(&seen.url, seen.kind, FailureReason::NetworkError);
    match &seen.how {
        How::Status(502) if through_proxy().is_some() => request.reason = through_proxy()?,
        How::Status(status) => {
            request.reason = FailureReason::HttpStatus;
            request.status = Some(*status);
        }
        How::BlockedByBrowser(why) => {
            request.reason = FailureReason::BlockedByBrowser;
            request.error = Some(why.chars().take(100).collect());
        }
        How::Net(error) => match (reason_of_net_error(error), through_proxy()) {
            (Some(reason), _) | (None, Some(reason)) => request.reason = reason,
            (None, None) => request.error = Some(error.chars().take(100).collect()),
        },
    }
    Some(request)
}

fn reason_of_upstream(upstream: Upstream) -> FailureReason {
    match upstream {
        Upstream::Unresolved => FailureReason::DnsFailure,
        Upstream::Refused => FailureReason::ConnectionRefused,
        Upstream::Reset => FailureReason::ConnectionReset,
        Upstream::TimedOut => FailureReason::ConnectionTimeout,
    }
}

/// Chromium's errors that say what happened on their own (the others, a
/// tunnel that did not open among them, are told by the proxy's ledger).
fn reason_of_net_error(error: &str) -> Option<FailureReason> {
    Some(match error {
        "net::ERR_NAME_NOT_RESOLVED" | "net::ERR_NAME_RESOLUTION_FAILED" => FailureReason::DnsFailure,
        "net::ERR_CONNECTION_REFUSED" => FailureReason::ConnectionRefused,
        "net::ERR_CONNECTION_RESET"
        | "net::ERR_CONNECTION_CLOSED"
        | "net::ERR_CONNECTION_ABORTED"
        | "net::ERR_EMPTY_RESPONSE" => FailureReason::ConnectionReset,
        "net::ERR_TIMED_OUT" | "net::ERR_CONNECTION_TIMED_OUT" => FailureReason::ConnectionTimeout,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(id: &str, error: &str) -> LoadingFailed {
        serde_json::from_value(serde_json::json!({"requestId": id, "type": "Font", "errorText": error})).unwrap()
    }

    fn refused_at(authority: &str) -> EgressReport {
        let mut report = EgressReport::default();
        report
            .blocked
            .record(authority.into(), authority, "non-public address".into());
        report
    }

    #[test]
    fn each_way_of_failing_has_its_reason_and_refusals_are_left_to_blocked_requests() {
        let mut failures = Failures::default();
        failures.sent("1", "https://fonts.example/a.woff2", Some("Font"));
        failures.failed(&ended("1", "net::ERR_TUNNEL_CONNECTION_FAILED"));
        failures.sent("2", "http://cdn.example/b.css", Some("Stylesheet"));
        failures.answered("2", "http://cdn.example/b.css", "Stylesheet", 502);
        failures.sent("3", "http://img.example/c.png", Some("Image"));
        failures.answered("3", "http://img.example/c.png", "Image", 404);
        failures.failed(&ended("3", "net::ERR_FAILED"));
        failures.sent("4", "http://10.0.0.1/d.js", Some("Script"));
        failures.answered("4", "http://10.0.0.1/d.js", "Script", 403);
        failures.sent("5", "http://ok.example/e.png", Some("Image"));
        failures.answered("5", "http://ok.example/e.png", "Image", 200);
        failures.failed(&ended("5", "net::ERR_CONNECTION_RESET"));
        failures.sent("6", "http://ok.example/f.png", Some("Image"));
        failures.failed(&LoadingFailed {
            canceled: true,
            ..ended("6", "net::ERR_FAILED")
        });

        let egress = refused_at("10.0.0.1:80")
            .with_upstream_failure("fonts.example:443", Upstream::Unresolved)
            .with_upstream_failure("cdn.example:80", Upstream::Refused);
        let listed = failures.list(&egress).listed;
        let told: Vec<_> = listed
            .iter()
            .map(|f| (f.url.as_str(), f.kind, f.reason, f.status))
            .collect();
        assert_eq!(
            told,
            [
                (
                    "https://fonts.example/a.woff2",
                    RequestKind::Font,
                    FailureReason::DnsFailure,
                    None
                ),
                (
                    "http://cdn.example/b.css",
                    RequestKind::Stylesheet,
                    FailureReason::ConnectionRefused,
                    None
                ),
                (
                    "http://img.example/c.png",
                    RequestKind::Image,
                    FailureReason::HttpStatus,
                    Some(404)
                ),
                (
                    "http://ok.example/e.png",
                    RequestKind::Font,
                    FailureReason::ConnectionReset,
                    None
                ),
            ]
        );
    }

    #[test]
    fn a_502_of_the_server_itself_and_an_unknown_error_stay_what_they_were() {
        let mut failures = Failures::default();
        failures.sent("1", "http://a.example/x", Some("Fetch"));
        failures.answered("1", "http://a.example/x", "Fetch", 502);
        failures.sent("2", "http://b.example/y", None);
        failures.failed(&ended("2", "net::ERR_CERT_AUTHORITY_INVALID"));
        failures.sent("3", "http://b.example/z", Some("Script"));
        failures.failed(&LoadingFailed {
            blocked_reason: Some("csp".into()),
            ..ended("3", "net::ERR_BLOCKED_BY_CSP")
        });
        let listed = failures.list(&EgressReport::default()).listed;
        assert_eq!(
            (listed[0].reason, listed[0].status),
            (FailureReason::HttpStatus, Some(502))
        );
        assert_eq!(
            (listed[0].kind, listed[1].kind),
            (RequestKind::Fetch, RequestKind::Font)
        );
        assert_eq!(listed[1].reason, FailureReason::NetworkError);
        assert_eq!(listed[1].error.as_deref(), Some("net::ERR_CERT_AUTHORITY_INVALID"));
        assert_eq!(listed[2].reason, FailureReason::BlockedByBrowser);
        assert_eq!(listed[2].error.as_deref(), Some("csp"));
    }

    #[test]
    fn the_list_is_cut_at_a_thousand_and_the_rest_counted_also_past_what_is_kept() {
        let mut failures = Failures::default();
        let n = MAX_SEEN + 7;
        for i in 0..n {
            let id = i.to_string();
            failures.sent(&id, &format!("http://a.example/{i}"), Some("Image"));
            failures.answered(&id, &format!("http://a.example/{i}"), "Image", 404);
        }
        let told = failures.list(&EgressReport::default());
        assert_eq!(told.listed.len(), MAX_FAILED_REQUESTS);
        assert_eq!(told.listed[999].url, "http://a.example/999");
        assert_eq!(told.omitted, (n - MAX_FAILED_REQUESTS) as u64);
    }

    #[test]
    fn a_request_never_sent_or_already_ended_is_not_listed_twice() {
        let mut failures = Failures::default();
        failures.failed(&ended("9", "net::ERR_FAILED"));
        failures.sent("1", "data:image/png;base64,AAAA", Some("Image"));
        failures.failed(&ended("1", "net::ERR_FAILED"));
        failures.sent("2", "http://a.example/", Some("Image"));
        failures.finished("2");
        failures.failed(&ended("2", "net::ERR_FAILED"));
        assert_eq!(failures.list(&EgressReport::default()), FailedRequests::default());
    }
}
