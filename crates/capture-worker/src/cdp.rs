//! A small Chrome DevTools Protocol client over Chromium's
//! `--remote-debugging-pipe`: the browser reads commands from its fd 3 and
//! writes answers and events to its fd 4, each message one JSON text ended by
//! a NUL byte. No browser process listens on a port (SPEC §10 Isolation).
//!
//! Commands are JSON objects `{id, method, params, sessionId?}`; answers carry
//! the same `id`. Events of a flattened target session (`sessionId`) go to that
//! session's channel; browser-level events go to the browser channel. When the
//! pipe closes (the browser exited or crashed), every pending command fails
//! with [`CdpError::Closed`] and every channel ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{Attached, CreatedContext, CreatedTarget, Event};

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
/// so a call site cannot pair a method with another command's reply.
pub trait Command: serde::Serialize {
    const METHOD: &'static str;
    type Reply: DeserializeOwned;
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

    /// A new browser context behind `proxy_url` (disposed with its last
    /// page) and one blank page in it, attached: the context's id and the
    /// page's session id. The context is disposed again if the page cannot
    /// be opened.
    pub async fn open_page(&self, proxy_url: &str, timeout: Duration) -> Result<(String, String), CdpError> {
        let context: CreatedContext = self
            .ask(
                None,
                "Target.createBrowserContext",
                json!({"disposeOnDetach": true, "proxyServer": proxy_url, "proxyBypassList": "<-loopback>"}),
                timeout,
            )
            .await?;
        let context_id = context.browser_context_id;
        let page = async {
            // Nothing a page offers as a download is written anywhere
            // (SPEC §10).
            self.call(
                None,
                "Browser.setDownloadBehavior",
                json!({"behavior": "deny", "browserContextId": context_id}),
                timeout,
            )
            .await?;
            let target: CreatedTarget = self
                .ask(
                    None,
                    "Target.createTarget",
                    json!({"url": "about:blank", "browserContextId": context_id}),
                    timeout,
                )
                .await?;
            let attached: Attached = self
                .ask(
                    None,
                    "Target.attachToTarget",
                    json!({"targetId": target.target_id, "flatten": true}),
                    timeout,
                )
                .await?;
            Ok(attached.session_id)
        }
        .await;
        match page {
            Ok(session) => Ok((context_id, session)),
            Err(e) => {
                let _ = self.dispose_context(&context_id, timeout).await;
                Err(e)
            }
        }
    }

    /// Closes a browser context and every page in it.
    pub async fn dispose_context(&self, context_id: &str, timeout: Duration) -> Result<Value, CdpError> {
        self.call(
            None,
            "Target.disposeBrowserContext",
            json!({"browserContextId": context_id}),
            timeout,
        )
        .await
    }

    /// Sends a command and waits at most `timeout` for its `result`.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.ask(session, method, params, timeout).await
    }

    /// [`Connection::call`], its `result` read as `T` ([`Reply::answer`]).
    pub async fn ask<T: DeserializeOwned>(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<T, CdpError> {
        self.call_raw(session, method, params, timeout).await?.answer(method)
    }

    /// Sends a typed [`Command`] and reads its answer as its `Reply`.
    pub async fn send<C: Command>(
        &self,
        session: Option<&str>,
        command: &C,
        timeout: Duration,
    ) -> Result<C::Reply, CdpError> {
        let params = serde_json::to_value(command).map_err(|e| CdpError::Protocol {
            method: C::METHOD.to_owned(),
            message: format!("its parameters do not serialize: {e}"),
        })?;
        self.ask(session, C::METHOD, params, timeout).await
    }

    /// Like [`Connection::call`], returning the answer's text for the caller
    /// to parse into its own types.
    pub async fn call_raw(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Reply, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.shared.pending.lock().expect("cdp pending lock").as_mut() {
            Some(pending) => pending.insert(id, tx),
            None => return Err(CdpError::Closed),
        };
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            command["sessionId"] = Value::String(session.to_owned());
        }
        if self.outgoing.send(command.to_string()).is_err() {
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
        let Ok(envelope) = serde_json::from_str::<Envelope>(&text) else {
            return;
        };
        if let Some(id) = envelope.id {
            let waiter = self
                .pending
                .lock()
                .expect("cdp pending lock")
                .as_mut()
                .and_then(|p| p.remove(&id));
            if let Some(waiter) = waiter {
                let answer = match envelope.error {
                    Some(error) => Err(error.message),
                    None => Ok(text),
                };
                let _ = waiter.send(answer);
            }
            return;
        }
        let Some(method) = envelope.method else { return };
        let params = serde_json::from_str::<EventParams>(&text)
            .map(|e| e.params)
            .unwrap_or(Value::Null);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_typed_answer_without_a_field_it_always_has_fails_as_the_command_would() {
        let (to_browser, mut browser_reads) = tokio::io::duplex(1024);
        let (mut browser_writes, from_browser) = tokio::io::duplex(1024);
        let (cdp, _browser_events) = Connection::over_pipe(to_browser, from_browser);
        let browser = tokio::spawn(async move {
            let mut reader = BufReader::new(&mut browser_reads);
            for result in [json!({"browserContextId": "C1"}), json!({})] {
                let command: Value = serde_json::from_str(&read_message(&mut reader).await.unwrap()).unwrap();
                let answer = json!({"id": command["id"], "result": result}).to_string() + "\0";
                browser_writes.write_all(answer.as_bytes()).await.unwrap();
            }
            browser_writes
        });
        let ask = || cdp.ask::<CreatedContext>(None, "Target.createBrowserContext", json!({}), Duration::from_secs(5));
        assert_eq!(ask().await.unwrap().browser_context_id, "C1");
        // Before, a missing id was a silent "".
        let missing = ask().await;
        assert!(
            matches!(&missing, Err(CdpError::Protocol { message, .. }) if message.contains("browserContextId")),
            "{missing:?}"
        );
        drop(browser.await.unwrap());
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
        let result = cdp
            .call(Some("S1"), "Target.getTargets", json!({}), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(result, json!({"targetInfos": []}));
        assert_eq!(session_events.recv().await.unwrap().method, "Page.loadEventFired");
        let event = browser_events.recv().await.unwrap();
        assert_eq!(
            (event.method.as_str(), &event.params),
            ("Target.targetCreated", &json!({"x": 1}))
        );

        // The browser closing its end fails what waits.
        drop(browser.await.unwrap());
        let closed = cdp
            .call(None, "Browser.getVersion", json!({}), Duration::from_secs(5))
            .await;
        assert!(matches!(closed, Err(CdpError::Closed)), "{closed:?}");
        assert!(cdp.is_closed());
    }
}
