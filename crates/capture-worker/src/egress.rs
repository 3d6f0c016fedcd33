//! The egress proxy every browser request goes through (SPEC §10).
//!
//! It resolves the host itself, refuses ports other than 80/443 and every
//! address that is not globally reachable (the contract's rules, the same code
//! the service validates source URLs with), and connects to the address it
//! checked, so a second DNS answer cannot point the browser elsewhere.
//! `EGRESS_ALLOW` names exact `ip:port` pairs let through anyway (development
//! and tests). Plain `http://` requests arrive in absolute form; everything
//! else (HTTPS, `ws://`, `wss://`) arrives as `CONNECT host:port`.
//!
//! Each capture gets a proxy of its own, so what it blocked, what failed
//! upstream and how many bytes it let in are that capture's alone.
//!
//! What a proxy records is bounded whatever the page does: the requests it
//! refused are [`Refused`]'s first [`MAX_BLOCKED_REQUESTS`] and a count of
//! the rest (SPEC §10).
//!
//! The browser only ever sees the proxy's own answer (a `502` or a failed
//! tunnel) when the page's server cannot be reached, so the proxy records
//! why ([`Upstream`]): the worker reports a refused connection as refused,
//! not as the proxy's status.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use page_import_contract::capture::{BlockedRequest, MAX_BLOCKED_REQUESTS};
use page_import_contract::ip;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

const MAX_HEAD_BYTES: usize = 32 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// The `host:port`s whose refusals past the list [`Refused`] counts one by
/// one; the refusals for others past them are counted together.
const MAX_OMITTED_AUTHORITIES: usize = 256;

/// Which destinations may be reached.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    allow: HashSet<SocketAddr>,
}

/// Why a destination was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Port(u16),
    NonPublic(&'static str),
    Unresolved,
    BadTarget,
}

impl Refusal {
    pub fn reason(&self) -> String {
        match self {
            Self::Port(p) => format!("port {p} is not allowed"),
            Self::NonPublic(range) => format!("non-public address ({range})"),
            Self::Unresolved => "the host did not resolve".into(),
            Self::BadTarget => "malformed request target".into(),
        }
    }
}

impl EgressPolicy {
    pub fn new(allow: impl IntoIterator<Item = SocketAddr>) -> Self {
        Self {
            allow: allow.into_iter().collect(),
        }
    }

    /// Whether one resolved address may be reached.
    pub fn check(&self, addr: SocketAddr) -> Result<(), Refusal> {
        // An IPv4-mapped IPv6 address is the IPv4 address for the allow-list.
        let canonical = SocketAddr::new(addr.ip().to_canonical(), addr.port());
        if self.allow.contains(&addr) || self.allow.contains(&canonical) {
            return Ok(());
        }
        if !matches!(addr.port(), 80 | 443) {
            return Err(Refusal::Port(addr.port()));
        }
        ip::check_public(addr.ip()).map_err(|ip::NonPublic(range)| Refusal::NonPublic(range))
    }

    /// Resolves `host` and returns the addresses to connect to: every answer
    /// must pass, or the destination is refused (a name with one private
    /// answer is treated as private).
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(literal) = bare.parse::<IpAddr>() {
            let addr = SocketAddr::new(literal, port);
            self.check(addr)?;
            return Ok(vec![addr]);
        }
        if bare.is_empty() || bare.len() > 253 {
            return Err(Refusal::BadTarget);
        }
        let answers: Vec<SocketAddr> = match tokio::net::lookup_host((bare, port)).await {
            Ok(answers) => answers.collect(),
            Err(_) => return Err(Refusal::Unresolved),
        };
        if answers.is_empty() {
            return Err(Refusal::Unresolved);
        }
        for addr in &answers {
            self.check(*addr)?;
        }
        Ok(answers)
    }
}

/// Why the proxy could not reach a permitted destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// The host name did not resolve.
    Unresolved,
    /// The server refused the connection.
    Refused,
    /// The connection was reset or closed before any answer (or failed in
    /// another way than refused or timed out, e.g. no route).
    Reset,
    /// The connection was not accepted within the connect timeout.
    TimedOut,
}

impl Upstream {
    fn of_connect_error(e: &std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::ConnectionRefused => Self::Refused,
            std::io::ErrorKind::TimedOut => Self::TimedOut,
            _ => Self::Reset,
        }
    }
}

/// One destination the proxy could not reach, by `host:port`.
#[derive(Debug, Clone)]
struct UpstreamFailure {
    authority: String,
    kind: Upstream,
}

/// The requests a proxy refused, bounded where they are recorded (SPEC
/// §10): the first [`MAX_BLOCKED_REQUESTS`] refused, each URL cut to
/// `MAX_BLOCKED_URL_CHARS` characters ([`BlockedRequest::new`]), and the
/// number of those past them, so nothing a page does grows the worker's
/// memory without bound.
///
/// Each is kept with the `host:port` it was for, which is how
/// [`Refused::asked_by`] tells the page's requests from Chromium's own
/// (the page's `Network` events name what it asked for, and may arrive
/// after the proxy refused it, so the telling waits for the capture's
/// end). The ones past the list are counted by `host:port` too, so that
/// the count of those left out goes through the same filter as the list
/// and `blockedRequests` plus `blockedRequestsOmitted` is every refused
/// request the page made. Only a page that is refused at more than
/// [`MAX_OMITTED_AUTHORITIES`] `host:port`s past the list has the rest of
/// them counted without their `host:port`, as its own: the count is then
/// an upper bound (by Chromium's background requests at most, a handful).
/// Chromium's own requests among the first refused take places in the
/// list that the filter then leaves empty: the list is the page's
/// requests among the first 1 000 refused.
#[derive(Debug, Clone, Default)]
pub struct Refused {
    /// The first refused, each with its `host:port`.
    listed: Vec<(String, BlockedRequest)>,
    /// How many more were refused, by `host:port` (at most
    /// [`MAX_OMITTED_AUTHORITIES`] of them).
    omitted: HashMap<String, u64>,
    /// How many more were refused at a `host:port` past those.
    omitted_elsewhere: u64,
}

/// What `blockedRequests` lists and `blockedRequestsOmitted` counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockedRequests {
    pub listed: Vec<BlockedRequest>,
    pub omitted: u64,
}

impl BlockedRequests {
    /// One refused request.
    pub fn one(request: BlockedRequest) -> Self {
        Self {
            listed: vec![request],
            omitted: 0,
        }
    }
}

impl Refused {
    /// Records that the proxy refused `url` (a plain-HTTP request's URL, a
    /// tunnel's `host:port`), which is for `authority` (`host:port`,
    /// lowercase).
    pub(crate) fn record(&mut self, authority: String, url: &str, reason: String) {
        if self.listed.len() < MAX_BLOCKED_REQUESTS {
            self.listed.push((authority, BlockedRequest::new(url, reason)));
        } else if let Some(count) = self.omitted.get_mut(&authority) {
            *count += 1;
        } else if self.omitted.len() < MAX_OMITTED_AUTHORITIES {
            self.omitted.insert(authority, 1);
        } else {
            self.omitted_elsewhere += 1;
        }
    }

    /// The refused requests for a `host:port` that `asked` says the page
    /// asked for, listed and counted (see the type).
    pub fn asked_by(&self, asked: impl Fn(&str) -> bool) -> BlockedRequests {
        let omitted: u64 = self
            .omitted
            .iter()
            .filter(|(authority, _)| asked(authority))
            .map(|(_, count)| count)
            .sum();
        BlockedRequests {
            listed: self
                .listed
                .iter()
                .filter(|(authority, _)| asked(authority))
                .map(|(_, request)| request.clone())
                .collect(),
            omitted: omitted + self.omitted_elsewhere,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// Whether a request for `authority` was refused. The proxy refuses by
    /// `host:port` (the address it resolves to and the port), so any
    /// request refused there means every one would be.
    fn refused_at(&self, authority: &str) -> bool {
        self.listed.iter().any(|(a, _)| a == authority) || self.omitted.contains_key(authority)
    }
}

#[derive(Default)]
struct Ledger {
    blocked: Mutex<Refused>,
    upstream: Mutex<Vec<UpstreamFailure>>,
    bytes_in: AtomicU64,
    over_budget: AtomicBool,
}

/// A running proxy on a loopback port; stops when dropped.
pub struct EgressProxy {
    addr: SocketAddr,
    ledger: Arc<Ledger>,
    tasks: JoinSet<()>,
}

impl EgressProxy {
    /// Starts a proxy. `max_bytes` caps what it lets in from the network in
    /// total; past it every connection is cut.
    pub async fn start(policy: Arc<EgressPolicy>, max_bytes: u64) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let ledger = Arc::new(Ledger::default());
        let mut tasks = JoinSet::new();
        let accept_ledger = ledger.clone();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((client, _)) = accepted else { continue };
                        let policy = policy.clone();
                        let ledger = accept_ledger.clone();
                        connections.spawn(async move {
                            let _ = serve(client, &policy, &ledger, max_bytes).await;
                        });
                    }
                    Some(_) = connections.join_next() => {}
                }
            }
        });
        Ok(Self { addr, ledger, tasks })
    }

    /// `http://127.0.0.1:PORT`, as Chromium's proxy setting wants it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests refused so far.
    pub fn blocked(&self) -> Refused {
        self.ledger.blocked.lock().expect("egress ledger lock").clone()
    }

    pub fn over_budget(&self) -> bool {
        self.ledger.over_budget.load(Ordering::Relaxed)
    }

    /// A fresh ledger for the next capture behind this proxy (an import
    /// set's next member, SPEC §15): nothing refused or unreachable yet,
    /// and the whole byte budget again.
    pub fn next_capture(&self) {
        *self.ledger.blocked.lock().expect("egress ledger lock") = Refused::default();
        self.ledger.upstream.lock().expect("egress ledger lock").clear();
        self.ledger.bytes_in.store(0, Ordering::Relaxed);
        self.ledger.over_budget.store(false, Ordering::Relaxed);
    }

    /// What the proxy refused and could not reach so far.
    pub fn report(&self) -> EgressReport {
        EgressReport {
            blocked: self.blocked(),
            upstream: self.ledger.upstream.lock().expect("egress ledger lock").clone(),
        }
    }
}

/// What one capture's proxy refused, and which servers it could not reach.
#[derive(Debug, Default)]
pub struct EgressReport {
    pub blocked: Refused,
    upstream: Vec<UpstreamFailure>,
}

impl EgressReport {
    /// Whether the proxy refused `url`: a request for its `host:port`
    /// (plain HTTP or a tunnel) was refused.
    pub fn is_blocked(&self, url: &str) -> bool {
        authority_of(url).is_some_and(|authority| self.blocked.refused_at(&authority))
    }

    /// Why the proxy could not reach `url`'s server, when it could not.
    pub fn upstream_failure(&self, url: &str) -> Option<Upstream> {
        let authority = authority_of(url)?;
        self.upstream
            .iter()
            .rev()
            .find(|f| f.authority == authority)
            .map(|f| f.kind)
    }

    /// The most recent server the proxy could not reach.
    pub fn last_upstream_failure(&self) -> Option<Upstream> {
        self.upstream.last().map(|f| f.kind)
    }

    #[cfg(test)]
    pub fn with_upstream_failure(mut self, authority: &str, kind: Upstream) -> Self {
        self.upstream.push(UpstreamFailure {
            authority: authority.into(),
            kind,
        });
        self
    }
}

/// `host:port` of an http(s) or ws(s) URL, as a tunnel names it.
pub fn authority_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    Some(format!(
        "{}:{}",
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default()?
    ))
}

impl Ledger {
    fn upstream_failed(&self, host: &str, port: u16, kind: Upstream) {
        tracing::debug!(target_host = %host, port, ?kind, "egress could not reach the server");
        self.upstream.lock().expect("egress ledger lock").push(UpstreamFailure {
            authority: format!("{}:{port}", host.to_ascii_lowercase()),
            kind,
        });
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection.
        self.tasks.abort_all();
    }
}

/// The parsed head of one proxy request.
struct Head {
    method: String,
    target: String,
    version: String,
    /// Header lines after the request line, without the final blank line.
    headers: Vec<String>,
    /// Bytes read past the head (the start of a body or of a TLS handshake).
    rest: Vec<u8>,
}

async fn read_head(client: &mut TcpStream) -> Option<Head> {
    let mut buf = Vec::with_capacity(4096);
    let end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return None;
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(HEAD_TIMEOUT, client.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, target, version) = (request_line.next()?, request_line.next()?, request_line.next()?);
    Some(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers: lines.map(str::to_owned).collect(),
        rest: buf[end + 4..].to_vec(),
    })
}

async fn refuse(client: &mut TcpStream, status: &str) {
    let response = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let _ = client.write_all(response.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn serve(mut client: TcpStream, policy: &EgressPolicy, ledger: &Ledger, max_bytes: u64) -> std::io::Result<()> {
    let Some(head) = read_head(&mut client).await else {
        refuse(&mut client, "400 Bad Request").await;
        return Ok(());
    };
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    let (host, port, shown) = if connect {
        match split_authority(&head.target) {
            Some((host, port)) => (host, port, head.target.clone()),
            None => {
                refuse(&mut client, "400 Bad Request").await;
                return Ok(());
            }
        }
    } else {
        match url::Url::parse(&head.target) {
            Ok(url) if url.scheme() == "http" && url.host_str().is_some() => (
                url.host_str().unwrap_or_default().to_owned(),
                url.port_or_known_default().unwrap_or(80),
                head.target.clone(),
            ),
            _ => {
                refuse(&mut client, "400 Bad Request").await;
                return Ok(());
            }
        }
    };
    let addrs = match policy.resolve(&host, port).await {
        Ok(addrs) => addrs,
        Err(Refusal::Unresolved) => {
            ledger.upstream_failed(&host, port, Upstream::Unresolved);
            refuse(&mut client, "502 Bad Gateway").await;
            return Ok(());
        }
        Err(refusal) => {
            tracing::debug!(target_host = %host, port, reason = %refusal.reason(), "egress refused");
            ledger.blocked.lock().expect("egress ledger lock").record(
                format!("{}:{port}", host.to_ascii_lowercase()),
                &shown,
                refusal.reason(),
            );
            refuse(&mut client, "403 Forbidden").await;
            return Ok(());
        }
    };
    let mut upstream = Err(Upstream::TimedOut);
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                upstream = Ok(stream);
                break;
            }
            Ok(Err(e)) => upstream = Err(Upstream::of_connect_error(&e)),
            Err(_) => upstream = Err(Upstream::TimedOut),
        }
    }
    let mut upstream = match upstream {
        Ok(stream) => stream,
        Err(kind) => {
            ledger.upstream_failed(&host, port, kind);
            refuse(&mut client, "502 Bad Gateway").await;
            return Ok(());
        }
    };
    if connect {
        client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
    } else {
        upstream.write_all(origin_form_head(&head).as_bytes()).await?;
    }
    upstream.write_all(&head.rest).await?;
    if relay(client, upstream, ledger, max_bytes).await == Relayed::ResetBeforeAnswer {
        ledger.upstream_failed(&host, port, Upstream::Reset);
    }
    Ok(())
}

/// The request head rewritten for the origin server: origin-form target,
/// no proxy headers, one request per connection.
fn origin_form_head(head: &Head) -> String {
    let path = url::Url::parse(&head.target)
        .map(|u| {
            let mut p = u.path().to_owned();
            if let Some(q) = u.query() {
                p.push('?');
                p.push_str(q);
            }
            p
        })
        .unwrap_or_else(|_| "/".into());
    let mut out = format!("{} {} {}\r\n", head.method, path, head.version);
    for line in &head.headers {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
        ) {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("connection: close\r\n\r\n");
    out
}

fn split_authority(target: &str) -> Option<(String, u16)> {
    let (host, port) = target.rsplit_once(':')?;
    let port = port.parse().ok()?;
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port))
}

#[derive(Debug, PartialEq, Eq)]
enum Relayed {
    Done,
    /// The server reset the connection before sending a byte.
    ResetBeforeAnswer,
}

/// Copies both ways until either side closes, counting what comes in.
async fn relay(client: TcpStream, upstream: TcpStream, ledger: &Ledger, max_bytes: u64) -> Relayed {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    // The client finishing its request half-closes upstream; the exchange
    // ends when the answer does.
    let outbound = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
        std::future::pending::<()>().await
    };
    let inbound = copy_counted(&mut upstream_read, &mut client_write, ledger, max_bytes);
    tokio::select! {
        relayed = inbound => relayed,
        () = outbound => Relayed::Done,
    }
}

async fn copy_counted(
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    ledger: &Ledger,
    max_bytes: u64,
) -> Relayed {
    let mut buf = vec![0u8; 16 * 1024];
    let mut relayed = Relayed::Done;
    let mut answered = false;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) => break,
            Err(e) => {
                if !answered && e.kind() == std::io::ErrorKind::ConnectionReset {
                    relayed = Relayed::ResetBeforeAnswer;
                }
                break;
            }
            Ok(n) => n,
        };
        answered = true;
        let total = ledger.bytes_in.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if total > max_bytes {
            ledger.over_budget.store(true, Ordering::Relaxed);
            break;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
    relayed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_and_other_ports_are_refused_unless_allowed() {
        let allowed: SocketAddr = "127.0.0.9:8080".parse().unwrap();
        let policy = EgressPolicy::new([allowed]);
        assert_eq!(policy.check(allowed), Ok(()));
        assert_eq!(
            policy.check("127.0.0.9:80".parse().unwrap()),
            Err(Refusal::NonPublic("loopback"))
        );
        assert_eq!(policy.check("8.8.8.8:22".parse().unwrap()), Err(Refusal::Port(22)));
        assert_eq!(policy.check("8.8.8.8:443".parse().unwrap()), Ok(()));
        assert!(policy.check("[::1]:80".parse().unwrap()).is_err());
        assert!(policy.check("[::ffff:127.0.0.1]:80".parse().unwrap()).is_err());
        assert!(policy.check("[::ffff:127.0.0.9]:8080".parse().unwrap()).is_ok());
        assert!(policy.check("169.254.169.254:80".parse().unwrap()).is_err());
    }

    #[tokio::test]
    async fn literals_and_names_resolve_through_the_same_rules() {
        let policy = EgressPolicy::default();
        assert_eq!(policy.resolve("[::1]", 80).await, Err(Refusal::NonPublic("loopback")));
        assert_eq!(
            policy.resolve("localhost", 80).await,
            Err(Refusal::NonPublic("loopback"))
        );
        assert_eq!(
            policy.resolve("1.1.1.1", 443).await,
            Ok(vec!["1.1.1.1:443".parse().unwrap()])
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_recorded_as_refused_not_as_the_proxy_s_502() {
        // A port with nothing listening on it, let through by the allow-list.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let proxy = EgressProxy::start(Arc::new(EgressPolicy::new([closed])), u64::MAX)
            .await
            .unwrap();
        let mut client = TcpStream::connect(proxy.addr).await.unwrap();
        let request = format!("GET http://{closed}/ HTTP/1.1\r\nHost: {closed}\r\n\r\n");
        client.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
        let report = proxy.report();
        assert_eq!(
            report.upstream_failure(&format!("http://{closed}/page")),
            Some(Upstream::Refused)
        );
        assert_eq!(report.last_upstream_failure(), Some(Upstream::Refused));
        assert!(report.blocked.is_empty(), "not a blocked request: {:?}", report.blocked);
        assert_eq!(report.upstream_failure("http://127.0.0.1:1/"), None);
    }

    #[test]
    fn the_ledger_keeps_the_first_thousand_refused_cut_and_counts_the_rest_through_the_page_s_filter() {
        use page_import_contract::capture::MAX_BLOCKED_URL_CHARS;
        let mut refused = Refused::default();
        let long = "é".repeat(3_000);
        for i in 0..3_000 {
            // Chromium's own, now and then: not the page's.
            if i % 500 == 0 {
                refused.record(
                    "update.googleapis.com:443".into(),
                    "update.googleapis.com:443",
                    "r".into(),
                );
            }
            refused.record("10.0.0.1:80".into(), &format!("http://10.0.0.1/{i}?{long}"), "r".into());
        }
        assert_eq!(
            refused.listed.len(),
            MAX_BLOCKED_REQUESTS,
            "bounded where it is recorded"
        );
        let page = refused.asked_by(|authority| authority == "10.0.0.1:80");
        // Two of Chromium's requests were among the first 1 000 refused.
        assert_eq!(page.listed.len(), MAX_BLOCKED_REQUESTS - 2);
        assert_eq!(
            page.listed.len() as u64 + page.omitted,
            3_000,
            "listed and omitted are every request the page made"
        );
        assert!(page.listed[0].url.starts_with("http://10.0.0.1/0?é"));
        assert!(page
            .listed
            .iter()
            .all(|b| b.url.chars().count() == MAX_BLOCKED_URL_CHARS));
        assert_eq!(refused.asked_by(|a| a == "update.googleapis.com:443").omitted, 4);
        assert_eq!(refused.asked_by(|_| false), BlockedRequests::default());
        let report = EgressReport {
            blocked: refused,
            ..Default::default()
        };
        assert!(report.is_blocked("http://10.0.0.1/another"));
        assert!(!report.is_blocked("http://10.0.0.2/"));
    }

    #[test]
    fn past_the_list_only_so_many_host_ports_are_kept_and_the_rest_count_as_the_page_s() {
        let mut refused = Refused::default();
        for i in 0..MAX_BLOCKED_REQUESTS {
            refused.record("page:80".into(), &format!("http://page/{i}"), "r".into());
        }
        for i in 0..MAX_OMITTED_AUTHORITIES + 44 {
            refused.record(format!("h{i}:80"), &format!("http://h{i}/"), "r".into());
            refused.record(format!("h{i}:80"), &format!("http://h{i}/again"), "r".into());
        }
        assert_eq!(refused.omitted.len(), MAX_OMITTED_AUTHORITIES);
        assert_eq!(refused.omitted_elsewhere, 88);
        let page = refused.asked_by(|a| a == "page:80" || a == "h0:80");
        assert_eq!((page.listed.len(), page.omitted), (MAX_BLOCKED_REQUESTS, 2 + 88));
    }

    #[tokio::test]
    async fn the_proxy_refuses_past_the_list_and_only_counts_those() {
        let proxy = EgressProxy::start(Arc::new(EgressPolicy::default()), u64::MAX)
            .await
            .unwrap();
        for i in 0..MAX_BLOCKED_REQUESTS + 3 {
            let mut client = TcpStream::connect(proxy.addr).await.unwrap();
            // A private address: refused when checked, never connected to.
            let request = format!("GET http://10.255.255.1/{i} HTTP/1.1\r\nHost: 10.255.255.1\r\n\r\n");
            client.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            client.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        }
        let page = proxy.blocked().asked_by(|a| a == "10.255.255.1:80");
        assert_eq!((page.listed.len(), page.omitted), (MAX_BLOCKED_REQUESTS, 3));
        assert_eq!(page.listed[0].url, "http://10.255.255.1/0");
    }

    #[test]
    fn the_origin_server_sees_an_origin_form_request_without_proxy_headers() {
        let head = Head {
            method: "GET".into(),
            target: "http://example.com/a/b?c=1".into(),
            version: "HTTP/1.1".into(),
            headers: vec![
                "Host: example.com".into(),
                "Proxy-Connection: keep-alive".into(),
                "Connection: keep-alive".into(),
                "Accept: */*".into(),
            ],
            rest: Vec::new(),
        };
        assert_eq!(
            origin_form_head(&head),
            "GET /a/b?c=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nconnection: close\r\n\r\n"
        );
    }
}
