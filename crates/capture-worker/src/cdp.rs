//! A small Chrome DevTools Protocol client over Chromium's
//! `--remote-debugging-pipe`: the browser reads commands from its fd 3 and
//! writes answers and events to its fd 4, each message one JSON text ended by
//! a NUL byte. No browser process listens on a port (SPEC §10 Isolation).
//!
//! Commands are JSON objects `{id, method, params, sessionId?}`, each sent as
//! a typed [`Command`]; answers carry the same `id`. Events of a flattened target session (`sessionId`) go to that
//! session's channel; browser-level events go to the browser channel. When the
//! pipe closes (the browser exited or crashed), every pending command fails
//! with [`CdpError::Closed`] and every channel ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{Attached, BrowserVersion, CreatedContext, CreatedTarget, Event};

/// A DOMSnapshot of a large page or a tall screenshot is tens of MiB of JSON.
const MAX_MESSAGE_BYTES: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum CdpError {
    #[error("the browser connection is closed")]
    Closed,
    #[error("{method} timed out")]
    Timeout { method: String },
    #[error("{method} failed: {message}")]
    Protocol { method: String, message: String },
}

/// One CDP command: its method, its parameters (the value itself,
/// serialized) and the type of its answer, bound once where it is defined,
/// so a call site cannot pair a method with another command's reply. The
/// answer is a typed `result` ([`Connection::send`]), or, for an answer of
/// tens of MiB that its caller parses itself, its text: [`Reply`]
/// ([`Connection::send_for_text`]).
pub trait Command: Serialize {
    const METHOD: &'static str;
    type Reply;
}

/// A command as it goes down the pipe.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outgoing<'a, P> {
    id: u64,
    method: &'a str,
    params: &'a P,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
}

/// The answer of a command that answers nothing (`{}`).
#[derive(Debug, Deserialize)]
pub struct Done {}

/// What a waiting command gets: the whole answer's text, or the error message.
type Pending = HashMap<u64, oneshot::Sender<Result<String, String>>>;

struct Shared {
    pending: Mutex<Option<Pending>>,
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>,
}

/// A connection to one browser; cheap to clone.
#[derive(Clone)]
pub struct Connection {
    outgoing: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
    next_id: Arc<AtomicU64>,
}

/// The routing fields of a message. Parsing it skips `result` and `params`
/// without building them, so a large answer (a DOM snapshot, a screenshot)
/// is parsed once, by its caller, into its own types.
#[derive(Deserialize)]
struct Envelope {
    id: Option<u64>,
    method: Option<String>,
    error: Option<ProtocolError>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct EventParams {
    #[serde(default)]
    params: Value,
}

/// The raw text of a command's answer.
pub struct Reply(String);

impl Reply {
    #[cfg(test)]
    pub fn from_text(text: String) -> Self {
        Self(text)
    }

    /// The answer's `result`, parsed into `T` (which may borrow from it).
    pub fn result<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        #[derive(Deserialize)]
        struct Answer<T> {
            result: T,
        }
        serde_json::from_str::<Answer<T>>(&self.0).map(|a| a.result)
    }

    /// The answer's `result` read as `T` (see `protocol.rs`): one without a
    /// field Chromium always sends fails as `method` would, never as a
    /// silent default.
    pub fn answer<T: DeserializeOwned>(&self, method: &str) -> Result<T, CdpError> {
        self.result().map_err(|e| CdpError::Protocol {
            method: method.to_owned(),
            message: format!("an answer without what it always has: {e}"),
        })
    }
}

/// Commands as Chromium gets them, and answers as the connection reads
/// them, for the unit tests of each module's commands.
#[cfg(test)]
pub mod testing {
    use serde_json::{json, Value};

    use super::*;

    /// The method and parameters Chromium gets.
    pub fn sent<C: Command>(command: C) -> (&'static str, Value) {
        (C::METHOD, serde_json::to_value(command).unwrap())
    }

    /// The command's answer read from `result` as the connection reads it.
    pub fn answer<C: Command>(result: Value) -> Result<C::Reply, CdpError>
    where
        C::Reply: DeserializeOwned,
    {
        Reply::from_text(json!({"id": 1, "result": result}).to_string()).answer(C::METHOD)
    }
}

#[derive(Deserialize)]
struct ProtocolError {
    message: String,
}

impl Connection {
    /// Speaks CDP over the two ends of the browser's debugging pipe: `to`
    /// is what the browser reads as fd 3, `from` what it writes as fd 4.
    /// Browser-level events arrive on the returned receiver.
    pub fn over_pipe(
        to: impl AsyncWrite + Send + Unpin + 'static,
        from: impl AsyncRead + Send + Unpin + 'static,
    ) -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (outgoing, mut outgoing_rx) = mpsc::unbounded_channel::<String>();
        let (browser_tx, browser_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            pending: Mutex::new(Some(HashMap::new())),
            sessions: Mutex::new(HashMap::new()),
        });

        let mut to = to;
        tokio::spawn(async move {
            while let Some(message) = outgoing_rx.recv().await {
                let sent = async {
                    to.write_all(message.as_bytes()).await?;
                    to.write_all(b"\0").await?;
                    to.flush().await
                };
                if sent.await.is_err() {
                    break;
                }
            }
        });
        let reader_shared = shared.clone();
        tokio::spawn(async move {
            let mut from = BufReader::with_capacity(64 * 1024, from);
            while let Some(text) = read_message(&mut from).await {
                reader_shared.dispatch(text, &browser_tx);
            }
            // The browser is gone: fail what waits, end every event stream.
            reader_shared.pending.lock().expect("cdp pending lock").take();
            reader_shared.sessions.lock().expect("cdp sessions lock").clear();
        });

        (
            Self {
                outgoing,
                shared,
                next_id: Arc::new(AtomicU64::new(1)),
            },
            browser_rx,
        )
    }

    /// A new browser context behind `proxy_url`, disposed when the worker's
    /// connection ends at the latest, where nothing is downloaded (SPEC
    /// §10). Disposed again if downloads cannot be denied.
    pub async fn open_context(&self, proxy_url: &str, timeout: Duration) -> Result<String, CdpError> {
        let create = CreateBrowserContext {
            dispose_on_detach: true,
            proxy_server: proxy_url,
            proxy_bypass_list: "<-loopback>",
        };
        let context_id = self.send(None, &create, timeout).await?.browser_context_id;
        let deny = SetDownloadBehavior {
            behavior: "deny",
            browser_context_id: &context_id,
        };
        match self.send(None, &deny, timeout).await {
            Ok(Done {}) => Ok(context_id),
            Err(e) => {
                self.dispose_failed(&context_id, timeout).await;
                Err(e)
            }
        }
    }

    /// One blank page in the browser context `context_id`, attached: its
    /// target id and session id.
    pub async fn open_target(&self, context_id: &str, timeout: Duration) -> Result<(String, String), CdpError> {
        let blank = CreateTarget {
            url: "about:blank",
            browser_context_id: context_id,
        };
        let target_id = self.send(None, &blank, timeout).await?.target_id;
        let attach = AttachToTarget {
            target_id: &target_id,
            flatten: true,
        };
        let session = self.send(None, &attach, timeout).await?.session_id;
        Ok((target_id, session))
    }

    /// Closes one page (its context stays).
    pub async fn close_target(&self, target_id: &str, timeout: Duration) -> Result<(), CdpError> {
        let close = CloseTarget { target_id };
        self.send(None, &close, timeout).await.map(|_| ())
    }

    async fn dispose_failed(&self, context_id: &str, timeout: Duration) {
        if let Err(disposed) = self.dispose_context(context_id, timeout).await {
            tracing::warn!(error = %disposed, "a browser context whose page did not open could not be disposed");
        }
    }

    /// Closes a browser context and every page in it.
    pub async fn dispose_context(&self, context_id: &str, timeout: Duration) -> Result<(), CdpError> {
        let dispose = DisposeBrowserContext {
            browser_context_id: context_id,
        };
        self.send(None, &dispose, timeout).await.map(|Done {}| ())
    }

    /// The browser's product (`Browser.getVersion`), e.g.
    /// `HeadlessChrome/156.0.8078.114`: also a browser that answers.
    pub async fn version(&self, timeout: Duration) -> Result<String, CdpError> {
        Ok(self.send(None, &GetVersion {}, timeout).await?.product)
    }

    /// Sends a typed [`Command`] and waits at most `timeout` for its
    /// answer, read as its `Reply` ([`Reply::answer`]).
    pub async fn send<C: Command>(
        &self,
        session: Option<&str>,
        command: &C,
        timeout: Duration,
    ) -> Result<C::Reply, CdpError>
    where
        C::Reply: DeserializeOwned,
    {
        self.request(session, C::METHOD, command, timeout)
            .await?
            .answer(C::METHOD)
    }

    /// Sends a [`Command`] whose answer its caller parses from the text
    /// into its own types (a DOM snapshot, a screenshot).
    pub async fn send_for_text<C: Command<Reply = Reply>>(
        &self,
        session: Option<&str>,
        command: &C,
        timeout: Duration,
    ) -> Result<Reply, CdpError> {
        self.request(session, C::METHOD, command, timeout).await
    }

    /// Sends `method` with `params` and waits at most `timeout` for the
    /// answer's text.
    async fn request<P: Serialize>(
        &self,
        session: Option<&str>,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<Reply, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = Outgoing {
            id,
            method,
            params,
            session_id: session,
        };
        let message = serde_json::to_string(&message).map_err(|e| CdpError::Protocol {
            method: method.to_owned(),
            message: format!("its parameters do not serialize: {e}"),
        })?;
        let (tx, rx) = oneshot::channel();
        match self.shared.pending.lock().expect("cdp pending lock").as_mut() {
            Some(pending) => pending.insert(id, tx),
            None => return Err(CdpError::Closed),
        };
        if self.outgoing.send(message).is_err() {
            return Err(CdpError::Closed);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(text))) => Ok(Reply(text)),
            Ok(Ok(Err(message))) => Err(CdpError::Protocol {
                method: method.to_owned(),
                message,
            }),
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => {
                if let Some(pending) = self.shared.pending.lock().expect("cdp pending lock").as_mut() {
                    pending.remove(&id);
                }
                Err(CdpError::Timeout {
                    method: method.to_owned(),
                })
            }
        }
    }

    /// Routes the events of `session` to the returned receiver until
    /// [`Connection::forget_session`] or the connection closes.
    pub fn subscribe(&self, session: &str) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared
            .sessions
            .lock()
            .expect("cdp sessions lock")
            .insert(session.to_owned(), tx);
        rx
    }

    pub fn forget_session(&self, session: &str) {
        self.shared.sessions.lock().expect("cdp sessions lock").remove(session);
    }

    pub fn is_closed(&self) -> bool {
        self.shared.pending.lock().expect("cdp pending lock").is_none()
    }
}

impl Shared {
    fn dispatch(&self, text: String, browser: &mpsc::UnboundedSender<Event>) {
        let envelope = match serde_json::from_str::<Envelope>(&text) {
            Ok(envelope) => envelope,
            Err(error) => {
                tracing::warn!(%error, "the browser sent a message that is not CDP; it is dropped");
                return;
            }
        };
        if let Some(id) = envelope.id {
            let waiter = self
                .pending
                .lock()
                .expect("cdp pending lock")
                .as_mut()
                .and_then(|p| p.remove(&id));
            let Some(waiter) = waiter else {
                tracing::debug!(id, "an answer came after its command stopped waiting");
                return;
            };
            let answer = match envelope.error {
                Some(error) => Err(error.message),
                None => Ok(text),
            };
            if waiter.send(answer).is_err() {
                tracing::debug!(id, "an answer came after its caller went away");
            }
            return;
        }
        let Some(method) = envelope.method else {
            tracing::warn!("the browser sent a message that is neither an answer nor an event; it is dropped");
            return;
        };
        let params = match serde_json::from_str::<EventParams>(&text) {
            Ok(event) => event.params,
            Err(error) => {
                tracing::warn!(%method, %error, "an event's parameters do not read; it is dropped");
                return;
            }
        };
        let event = Event { method, params };
        match envelope.session_id {
            Some(session) => {
                if let Some(tx) = self.sessions.lock().expect("cdp sessions lock").get(&session) {
                    let _ = tx.send(event);
                }
            }
            None => {
                let _ = browser.send(event);
            }
        }
    }
}

/// One NUL-terminated message, or `None` when the pipe ended, broke, or sent
/// more than [`MAX_MESSAGE_BYTES`] or text that is not UTF-8 (the browser is
/// then treated as gone).
async fn read_message(from: &mut (impl AsyncBufReadExt + Unpin)) -> Option<String> {
    let mut message = Vec::new();
    loop {
        let available = from.fill_buf().await.ok()?;
        if available.is_empty() {
            return None;
        }
        let (taken, done) = match available.iter().position(|b| *b == 0) {
            Some(end) => {
                message.extend_from_slice(&available[..end]);
                (end + 1, true)
            }
            None => {
                message.extend_from_slice(available);
                (available.len(), false)
            }
        };
        from.consume(taken);
        if message.len() > MAX_MESSAGE_BYTES {
            return None;
        }
        if done {
            return String::from_utf8(message).ok();
        }
    }
}

// ---- The commands of the browser, and of a page's browser context and target.

/// `Browser.getVersion`.
#[derive(Serialize)]
struct GetVersion {}

impl Command for GetVersion {
    const METHOD: &'static str = "Browser.getVersion";
    type Reply = BrowserVersion;
}

/// `Target.createBrowserContext`: a context of its own, behind the
/// capture's proxy, disposed when the worker's connection ends.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateBrowserContext<'a> {
    dispose_on_detach: bool,
    proxy_server: &'a str,
    proxy_bypass_list: &'a str,
}

impl Command for CreateBrowserContext<'_> {
    const METHOD: &'static str = "Target.createBrowserContext";
    type Reply = CreatedContext;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SetDownloadBehavior<'a> {
    behavior: &'a str,
    browser_context_id: &'a str,
}

impl Command for SetDownloadBehavior<'_> {
    const METHOD: &'static str = "Browser.setDownloadBehavior";
    type Reply = Done;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateTarget<'a> {
    url: &'a str,
    browser_context_id: &'a str,
}

impl Command for CreateTarget<'_> {
    const METHOD: &'static str = "Target.createTarget";
    type Reply = CreatedTarget;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AttachToTarget<'a> {
    target_id: &'a str,
    flatten: bool,
}

impl Command for AttachToTarget<'_> {
    const METHOD: &'static str = "Target.attachToTarget";
    type Reply = Attached;
}

/// `Target.closeTarget`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CloseTarget<'a> {
    target_id: &'a str,
}

impl Command for CloseTarget<'_> {
    const METHOD: &'static str = "Target.closeTarget";
    type Reply = Value;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DisposeBrowserContext<'a> {
    browser_context_id: &'a str,
}

impl Command for DisposeBrowserContext<'_> {
    const METHOD: &'static str = "Target.disposeBrowserContext";
    type Reply = Done;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The far end of the pipe, playing the browser: reads each command,
    /// checks its method, session and parameters, and answers it with its
    /// `result` (or its `error`, for a result that is a string).
    fn browser(
        script: Vec<(&'static str, Option<&'static str>, Value, Value)>,
    ) -> (
        Connection,
        mpsc::UnboundedReceiver<Event>,
        tokio::task::JoinHandle<tokio::io::DuplexStream>,
    ) {
        let (to_browser, mut browser_reads) = tokio::io::duplex(1024);
        let (mut browser_writes, from_browser) = tokio::io::duplex(1024);
        let (cdp, events) = Connection::over_pipe(to_browser, from_browser);
        let browser = tokio::spawn(async move {
            let mut reader = BufReader::new(&mut browser_reads);
            for (method, session, params, result) in script {
                let command: Value = serde_json::from_str(&read_message(&mut reader).await.unwrap()).unwrap();
                assert_eq!(command["method"], method);
                assert_eq!(command["sessionId"].as_str(), session, "{method}");
                assert_eq!(command["params"], params, "{method}");
                let answer = match result {
                    Value::String(message) => {
                        json!({"id": command["id"], "error": {"code": -32000, "message": message}})
                    }
                    result => json!({"id": command["id"], "result": result}),
                };
                browser_writes
                    .write_all((answer.to_string() + "\0").as_bytes())
                    .await
                    .unwrap();
            }
            browser_writes
        });
        (cdp, events, browser)
    }

    const T: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_context_is_opened_with_downloads_denied_and_a_page_in_it() {
        let (cdp, _events, browser) = browser(vec![
            (
                "Target.createBrowserContext",
                None,
                json!({"disposeOnDetach": true, "proxyServer": "http://127.0.0.1:9", "proxyBypassList": "<-loopback>"}),
                json!({"browserContextId": "C1"}),
            ),
            (
                "Browser.setDownloadBehavior",
                None,
                json!({"behavior": "deny", "browserContextId": "C1"}),
                json!({}),
            ),
            (
                "Target.createTarget",
                None,
                json!({"url": "about:blank", "browserContextId": "C1"}),
                json!({"targetId": "T1"}),
            ),
            (
                "Target.attachToTarget",
                None,
                json!({"targetId": "T1", "flatten": true}),
                json!({"sessionId": "S1"}),
            ),
        ]);
        let context = cdp.open_context("http://127.0.0.1:9", T).await.unwrap();
        assert_eq!(context, "C1");
        let opened = cdp.open_target(&context, T).await.unwrap();
        assert_eq!(opened, ("T1".to_owned(), "S1".to_owned()));
        drop(browser.await.unwrap());
    }

    #[tokio::test]
    async fn a_context_where_downloads_could_not_be_denied_is_disposed() {
        let (cdp, _events, browser) = browser(vec![
            (
                "Target.createBrowserContext",
                None,
                json!({"disposeOnDetach": true, "proxyServer": "http://p", "proxyBypassList": "<-loopback>"}),
                json!({"browserContextId": "C1"}),
            ),
            (
                "Browser.setDownloadBehavior",
                None,
                json!({"behavior": "deny", "browserContextId": "C1"}),
                json!("Browser context management is not supported"),
            ),
            (
                "Target.disposeBrowserContext",
                None,
                json!({"browserContextId": "C1"}),
                json!({}),
            ),
        ]);
        let failed = cdp.open_context("http://p", T).await;
        assert!(
            matches!(&failed, Err(CdpError::Protocol { method, .. }) if method == "Browser.setDownloadBehavior"),
            "{failed:?}"
        );
        drop(browser.await.unwrap());
    }

    #[tokio::test]
    async fn a_target_without_an_id_is_an_error_not_a_page() {
        let (cdp, _events, browser) = browser(vec![(
            "Target.createTarget",
            None,
            json!({"url": "about:blank", "browserContextId": "C1"}),
            json!({}),
        )]);
        let failed = cdp.open_target("C1", T).await;
        assert!(
            matches!(&failed, Err(CdpError::Protocol { method, message }) if method == "Target.createTarget" && message.contains("targetId")),
            "{failed:?}"
        );
        drop(browser.await.unwrap());
    }

    #[tokio::test]
    async fn a_typed_answer_without_a_field_it_always_has_fails_as_the_command_would() {
        let params = json!({"disposeOnDetach": true, "proxyServer": "p", "proxyBypassList": "<-loopback>"});
        let (cdp, _events, browser) = browser(vec![
            (
                "Target.createBrowserContext",
                None,
                params.clone(),
                json!({"browserContextId": "C1"}),
            ),
            ("Target.createBrowserContext", None, params.clone(), json!({})),
            (
                "Target.createBrowserContext",
                None,
                params,
                json!("Failed to create context"),
            ),
        ]);
        let create = CreateBrowserContext {
            dispose_on_detach: true,
            proxy_server: "p",
            proxy_bypass_list: "<-loopback>",
        };
        let ask = || cdp.send(None, &create, T);
        assert_eq!(ask().await.unwrap().browser_context_id, "C1");
        // Before, a missing id was a silent "".
        let missing = ask().await;
        assert!(
            matches!(&missing, Err(CdpError::Protocol { message, .. }) if message.contains("browserContextId")),
            "{missing:?}"
        );
        let refused = ask().await;
        assert!(
            matches!(&refused, Err(CdpError::Protocol { method, message }) if method == "Target.createBrowserContext" && message == "Failed to create context"),
            "{refused:?}"
        );
        drop(browser.await.unwrap());
    }

    #[tokio::test]
    async fn the_browser_s_version_is_its_product_which_it_always_sends() {
        let (cdp, _events, browser) = browser(vec![
            (
                "Browser.getVersion",
                None,
                json!({}),
                json!({"product": "HeadlessChrome/156.0.8078.114", "protocolVersion": "1.3"}),
            ),
            ("Browser.getVersion", None, json!({}), json!({"protocolVersion": "1.3"})),
        ]);
        assert_eq!(cdp.version(T).await.unwrap(), "HeadlessChrome/156.0.8078.114");
        let missing = cdp.version(T).await;
        assert!(
            matches!(&missing, Err(CdpError::Protocol { message, .. }) if message.contains("product")),
            "{missing:?}"
        );
        drop(browser.await.unwrap());
    }

    /// A command of the tests' own, sent on a session.
    #[derive(Serialize)]
    struct GetTargets {}

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Targets {
        target_infos: Vec<String>,
    }

    impl Command for GetTargets {
        const METHOD: &'static str = "Target.getTargets";
        type Reply = Targets;
    }

    #[tokio::test]
    async fn commands_and_answers_are_nul_terminated_json_matched_by_id() {
        // The far ends play the browser: read one command, answer it, then
        // send a session event and a browser event.
        let (to_browser, mut browser_reads) = tokio::io::duplex(1024);
        let (mut browser_writes, from_browser) = tokio::io::duplex(1024);
        let (cdp, mut browser_events) = Connection::over_pipe(to_browser, from_browser);
        let mut session_events = cdp.subscribe("S1");
        let browser = tokio::spawn(async move {
            let mut reader = BufReader::new(&mut browser_reads);
            let command = read_message(&mut reader).await.unwrap();
            let command: Value = serde_json::from_str(&command).unwrap();
            assert_eq!(command["method"], "Target.getTargets");
            assert_eq!(command["sessionId"], "S1");
            assert_eq!(command["params"], json!({}));
            let answer = json!({"id": command["id"], "result": {"targetInfos": []}});
            // Split across writes: the reader must join the pieces.
            let text = answer.to_string();
            let (a, b) = text.split_at(5);
            browser_writes.write_all(a.as_bytes()).await.unwrap();
            browser_writes.flush().await.unwrap();
            browser_writes.write_all(b.as_bytes()).await.unwrap();
            browser_writes
                .write_all(b"\0{\"method\":\"Page.loadEventFired\",\"sessionId\":\"S1\",\"params\":{}}\0")
                .await
                .unwrap();
            browser_writes
                .write_all(b"{\"method\":\"Target.targetCreated\",\"params\":{\"x\":1}}\0")
                .await
                .unwrap();
            browser_writes
        });
        let result = cdp.send(Some("S1"), &GetTargets {}, T).await.unwrap();
        assert_eq!(result, Targets { target_infos: vec![] });
        assert_eq!(session_events.recv().await.unwrap().method, "Page.loadEventFired");
        let event = browser_events.recv().await.unwrap();
        assert_eq!(
            (event.method.as_str(), &event.params),
            ("Target.targetCreated", &json!({"x": 1}))
        );

        // The browser closing its end fails what waits.
        drop(browser.await.unwrap());
        let closed = cdp.send(None, &GetTargets {}, T).await;
        assert!(matches!(closed, Err(CdpError::Closed)), "{closed:?}");
        assert!(cdp.is_closed());
    }
}
