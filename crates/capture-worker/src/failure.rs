//! Why a capture failed (SPEC §10): one [`Cause`] per kind of failure, which
//! owns its reason code (`failure.json`'s `reason`, the metrics label), its
//! message (safe to show the user) and whether another attempt might
//! succeed. Call sites say what happened; they never decide `retryable`.
//! The one `retryable` not decided here is a stored one: a callback repeated
//! from an earlier delivery's `failure.json` carries that record's, as it
//! was written (`job.rs`), even by an older worker.

use crate::egress::{BlockedRequests, Upstream};

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The source URL is not an http(s) URL with a host.
    InvalidSource,
    /// The source's host resolves to an address that is not public.
    BlockedSource,
    /// The page (or a redirect) led to an address that is not public.
    BlockedRedirect,
    /// The page's host name did not resolve.
    DnsFailure,
    /// The page's server refused the connection.
    ConnectionRefused,
    /// The page's server reset or closed the connection without an answer.
    ConnectionReset,
    /// The page's server did not accept the connection or answer in time.
    ConnectionTimeout,
    /// Navigation did not reach the load event within the timeout.
    NavigationTimeout { secs: u64 },
    /// Another transient network error Chromium reported (`net::ERR_…`).
    NetworkError { code: String },
    /// A network error that another attempt will not fix (a bad
    /// certificate, an unsupported scheme …).
    NavigationFailed { code: String },
    /// The main document answered with this status (≥ 400).
    HttpStatus(u16),
    /// The `readySelector` did not appear in time.
    ReadyTimeout { secs: u64 },
    /// The source is not a page (SPEC §10): a download, or a main document
    /// that is not HTML, XHTML, SVG or plain text.
    NotAPage { content_type: String, download: bool },
    /// The page's renderer crashed or ran out of memory
    /// (`CAPTURE_MAX_HEAP_MIB`) while the browser went on.
    PageCrashed,
    /// The page's script never yielded (`while (true) {}`).
    PageUnresponsive,
    /// The page downloaded more than `CAPTURE_MAX_BYTES`.
    PageTooLarge { mib: u64 },
    /// The renderer or the whole browser crashed.
    BrowserCrashed,
    /// The browser stopped answering commands.
    BrowserTimeout,
    /// No browser could be started for the capture.
    BrowserUnavailable,
    /// The browser answered, but not with a usable capture.
    CaptureError,
    /// The worker's own machinery failed (its egress proxy did not start).
    InternalError,
}

/// Chromium's network errors that another attempt may not meet.
const TRANSIENT_NET_ERRORS: &[&str] = &[
    "net::ERR_NETWORK_CHANGED",
    "net::ERR_CONNECTION_FAILED",
    "net::ERR_TUNNEL_CONNECTION_FAILED",
    "net::ERR_PROXY_CONNECTION_FAILED",
    "net::ERR_INTERNET_DISCONNECTED",
    "net::ERR_ADDRESS_UNREACHABLE",
    "net::ERR_NETWORK_IO_SUSPENDED",
];

impl Cause {
    /// The stable reason code.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidSource => "invalid_source",
            Self::BlockedSource | Self::BlockedRedirect => "blocked_address",
            Self::DnsFailure => "dns_failure",
            Self::ConnectionRefused => "connection_refused",
            Self::ConnectionReset => "connection_reset",
            Self::ConnectionTimeout => "connection_timeout",
            Self::NavigationTimeout { .. } => "navigation_timeout",
            Self::NetworkError { .. } => "network_error",
            Self::NavigationFailed { .. } => "navigation_failed",
            Self::HttpStatus(_) => "http_status",
            Self::ReadyTimeout { .. } => "ready_timeout",
            Self::NotAPage { .. } => "not_a_page",
            Self::PageUnresponsive => "page_unresponsive",
            Self::PageCrashed => "page_crashed",
            Self::PageTooLarge { .. } => "page_too_large",
            Self::BrowserCrashed => "browser_crashed",
            Self::BrowserTimeout => "browser_timeout",
            Self::BrowserUnavailable => "browser_unavailable",
            Self::CaptureError => "capture_error",
            Self::InternalError => "internal_error",
        }
    }

    /// What the user is told (it passes the contract's client-safe rule).
    pub fn message(&self) -> String {
        match self {
            Self::InvalidSource => "The source URL is not a valid http or https URL".into(),
            Self::BlockedSource => "The source address is not publicly reachable".into(),
            Self::BlockedRedirect => "The page redirected to an address that is not publicly reachable".into(),
            Self::DnsFailure => "The page's host name could not be resolved".into(),
            Self::ConnectionRefused => "The page's server refused the connection".into(),
            Self::ConnectionReset => "The page's server closed the connection without answering".into(),
            Self::ConnectionTimeout => "The page's server did not answer in time".into(),
            Self::NavigationTimeout { secs } => format!("Navigation timed out after {secs} s"),
            Self::NetworkError { code } | Self::NavigationFailed { code } => {
                format!("The page could not be loaded ({code})")
            }
            Self::HttpStatus(status) => format!("The page answered HTTP {status}"),
            Self::ReadyTimeout { secs } => format!("The ready selector did not appear within {secs} s"),
            Self::NotAPage {
                content_type,
                download: true,
            } => format!("The source is a download ({content_type}), not a page"),
            Self::NotAPage { content_type, .. } => {
                format!("The source is not a page: its content type is {content_type}")
            }
            Self::PageUnresponsive => "The page's script never yielded".into(),
            Self::PageCrashed => "The page crashed or ran out of memory".into(),
            Self::PageTooLarge { mib } => format!("The page downloaded more than {mib} MiB"),
            Self::BrowserCrashed => "The browser crashed during the capture".into(),
            Self::BrowserTimeout => "The browser stopped responding during the capture".into(),
            Self::BrowserUnavailable => "The browser could not be started".into(),
            Self::CaptureError => "The page could not be captured".into(),
            Self::InternalError => "The capture could not be started".into(),
        }
    }

    /// Whose fault the failure is, for alerts (`worker_captures_total`'s
    /// `class`): the page's (`site`), the network's between the worker and
    /// the page (`network`), or the worker's own (`worker`).
    pub fn class(&self) -> &'static str {
        match self {
            Self::InvalidSource
            | Self::BlockedSource
            | Self::BlockedRedirect
            | Self::NavigationFailed { .. }
            | Self::HttpStatus(_)
            | Self::ReadyTimeout { .. }
            | Self::NotAPage { .. }
            | Self::PageCrashed
            | Self::PageUnresponsive
            | Self::PageTooLarge { .. } => "site",
            Self::DnsFailure
            | Self::ConnectionRefused
            | Self::ConnectionReset
            | Self::ConnectionTimeout
            | Self::NavigationTimeout { .. }
            | Self::NetworkError { .. } => "network",
            Self::BrowserCrashed
            | Self::BrowserTimeout
            | Self::BrowserUnavailable
            | Self::CaptureError
            | Self::InternalError => "worker",
        }
    }

    /// One cause of each kind, so that every reason's series can be shown
    /// at 0 before its first failure (`metrics::install`).
    pub fn one_of_each() -> [Self; 21] {
        [
            Self::InvalidSource,
            Self::BlockedSource,
            Self::BlockedRedirect,
            Self::DnsFailure,
            Self::ConnectionRefused,
            Self::ConnectionReset,
            Self::ConnectionTimeout,
            Self::NavigationTimeout { secs: 0 },
            Self::NetworkError { code: String::new() },
            Self::NavigationFailed { code: String::new() },
            Self::HttpStatus(500),
            Self::ReadyTimeout { secs: 0 },
            Self::NotAPage {
                content_type: String::new(),
                download: false,
            },
            Self::PageCrashed,
            Self::PageUnresponsive,
            Self::PageTooLarge { mib: 0 },
            Self::BrowserCrashed,
            Self::BrowserTimeout,
            Self::BrowserUnavailable,
            Self::CaptureError,
            Self::InternalError,
        ]
    }

    /// Whether another attempt may succeed: only transient causes (SPEC §10).
    pub fn retryable(&self) -> bool {
        match self {
            Self::DnsFailure
            | Self::ConnectionRefused
            | Self::ConnectionReset
            | Self::ConnectionTimeout
            | Self::NavigationTimeout { .. }
            | Self::NetworkError { .. }
            | Self::BrowserCrashed
            | Self::PageCrashed
            | Self::BrowserTimeout
            | Self::BrowserUnavailable
            | Self::InternalError => true,
            Self::HttpStatus(status) => matches!(status, 429 | 502 | 503 | 504),
            Self::InvalidSource
            | Self::BlockedSource
            | Self::BlockedRedirect
            | Self::NavigationFailed { .. }
            | Self::ReadyTimeout { .. }
            | Self::NotAPage { .. }
            | Self::PageUnresponsive
            | Self::PageTooLarge { .. }
            | Self::CaptureError => false,
        }
    }

    /// A network error Chromium reported for the main document.
    pub fn from_net_error(code: &str) -> Self {
        match code {
            "net::ERR_NAME_NOT_RESOLVED" | "net::ERR_NAME_RESOLUTION_FAILED" => Self::DnsFailure,
            "net::ERR_CONNECTION_REFUSED" => Self::ConnectionRefused,
            "net::ERR_CONNECTION_RESET"
            | "net::ERR_CONNECTION_CLOSED"
            | "net::ERR_CONNECTION_ABORTED"
            | "net::ERR_EMPTY_RESPONSE" => Self::ConnectionReset,
            "net::ERR_TIMED_OUT" | "net::ERR_CONNECTION_TIMED_OUT" => Self::ConnectionTimeout,
            code if TRANSIENT_NET_ERRORS.contains(&code) => Self::NetworkError { code: code.into() },
            code => Self::NavigationFailed { code: code.into() },
        }
    }

    /// What the egress proxy met when it connected for the browser.
    pub fn from_upstream(upstream: Upstream) -> Self {
        match upstream {
            Upstream::Unresolved => Self::DnsFailure,
            Upstream::Refused => Self::ConnectionRefused,
            Upstream::Reset => Self::ConnectionReset,
            Upstream::TimedOut => Self::ConnectionTimeout,
        }
    }
}

/// A failed capture: its cause and the requests the egress rules refused.
#[derive(Debug, Clone)]
pub struct Failure {
    pub cause: Cause,
    pub blocked: BlockedRequests,
}

impl From<Cause> for Failure {
    fn from(cause: Cause) -> Self {
        Self {
            cause,
            blocked: BlockedRequests::default(),
        }
    }
}

impl From<crate::cdp::CdpError> for Failure {
    fn from(e: crate::cdp::CdpError) -> Self {
        use crate::cdp::CdpError;
        match e {
            CdpError::Closed => Cause::BrowserCrashed,
            CdpError::Timeout { method } => {
                tracing::warn!(%method, "browser command timed out");
                Cause::BrowserTimeout
            }
            CdpError::Protocol { method, message } => {
                tracing::warn!(%method, %message, "browser command failed");
                Cause::CaptureError
            }
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use page_import_contract::callback::client_safe_message;

    /// Each reason has one class, and the list that shows the series at 0
    /// has every reason once in it.
    #[test]
    fn one_of_each_lists_every_reason_and_a_reason_has_one_class() {
        let mut classes = std::collections::BTreeMap::new();
        for cause in Cause::one_of_each() {
            let class = cause.class();
            assert!(["site", "network", "worker"].contains(&class), "{cause:?}");
            assert_eq!(*classes.entry(cause.reason()).or_insert(class), class, "{cause:?}");
        }
        assert_eq!(classes.len(), 20, "{classes:?}");
        assert_eq!(classes["navigation_timeout"], "network");
        assert_eq!(classes["http_status"], "site");
        assert_eq!(classes["browser_crashed"], "worker");
    }

    /// Every cause SPEC §10 names, with its reason and `retryable`.
    #[test]
    fn every_cause_has_its_reason_a_safe_message_and_the_spec_s_retryable() {
        let code = |c: &str| c.to_owned();
        let table: Vec<(Cause, &str, bool)> = vec![
            // Transient: timeouts, refused or reset connections, DNS, 429/502/503/504, a crash.
            (Cause::NavigationTimeout { secs: 30 }, "navigation_timeout", true),
            (Cause::ConnectionTimeout, "connection_timeout", true),
            (Cause::ConnectionRefused, "connection_refused", true),
            (Cause::ConnectionReset, "connection_reset", true),
            (Cause::DnsFailure, "dns_failure", true),
            (Cause::HttpStatus(429), "http_status", true),
            (Cause::HttpStatus(502), "http_status", true),
            (Cause::HttpStatus(503), "http_status", true),
            (Cause::HttpStatus(504), "http_status", true),
            (Cause::BrowserCrashed, "browser_crashed", true),
            (Cause::PageCrashed, "page_crashed", true),
            (Cause::BrowserTimeout, "browser_timeout", true),
            (Cause::BrowserUnavailable, "browser_unavailable", true),
            (
                Cause::NetworkError {
                    code: code("net::ERR_NETWORK_CHANGED"),
                },
                "network_error",
                true,
            ),
            (Cause::InternalError, "internal_error", true),
            // Final: any other status ≥ 400, a blocked address, ready_timeout, a page too large.
            (Cause::HttpStatus(400), "http_status", false),
            (Cause::HttpStatus(404), "http_status", false),
            (Cause::HttpStatus(500), "http_status", false),
            (Cause::HttpStatus(501), "http_status", false),
            (Cause::BlockedSource, "blocked_address", false),
            (Cause::BlockedRedirect, "blocked_address", false),
            (Cause::ReadyTimeout { secs: 15 }, "ready_timeout", false),
            (Cause::PageTooLarge { mib: 50 }, "page_too_large", false),
            (
                Cause::NotAPage {
                    content_type: code("application/zip"),
                    download: true,
                },
                "not_a_page",
                false,
            ),
            (Cause::PageUnresponsive, "page_unresponsive", false),
            (Cause::InvalidSource, "invalid_source", false),
            (
                Cause::NavigationFailed {
                    code: code("net::ERR_CERT_DATE_INVALID"),
                },
                "navigation_failed",
                false,
            ),
            (Cause::CaptureError, "capture_error", false),
        ];
        for (cause, reason, retryable) in table {
            assert_eq!((cause.reason(), cause.retryable()), (reason, retryable), "{cause:?}");
            let message = cause.message();
            assert_eq!(client_safe_message(&message), message, "{cause:?}: not client-safe");
        }
    }

    #[test]
    fn chromium_s_network_errors_map_to_their_causes() {
        for (code, reason, retryable) in [
            ("net::ERR_NAME_NOT_RESOLVED", "dns_failure", true),
            ("net::ERR_CONNECTION_REFUSED", "connection_refused", true),
            ("net::ERR_CONNECTION_RESET", "connection_reset", true),
            ("net::ERR_EMPTY_RESPONSE", "connection_reset", true),
            ("net::ERR_CONNECTION_TIMED_OUT", "connection_timeout", true),
            ("net::ERR_TIMED_OUT", "connection_timeout", true),
            ("net::ERR_TUNNEL_CONNECTION_FAILED", "network_error", true),
            ("net::ERR_CERT_DATE_INVALID", "navigation_failed", false),
            ("net::ERR_HTTP_RESPONSE_CODE_FAILURE", "navigation_failed", false),
            ("net::ERR_BLOCKED_BY_CLIENT", "navigation_failed", false),
        ] {
            let cause = Cause::from_net_error(code);
            assert_eq!((cause.reason(), cause.retryable()), (reason, retryable), "{code}");
        }
        for (upstream, reason) in [
            (Upstream::Unresolved, "dns_failure"),
            (Upstream::Refused, "connection_refused"),
            (Upstream::Reset, "connection_reset"),
            (Upstream::TimedOut, "connection_timeout"),
        ] {
            let cause = Cause::from_upstream(upstream);
            assert_eq!((cause.reason(), cause.retryable()), (reason, true));
        }
    }
}
