//! A small Chrome DevTools Protocol client over one WebSocket.
//!
//! Commands are JSON objects `{id, method, params, sessionId?}`; answers carry
//! the same `id`. Events of a flattened target session (`sessionId`) go to that
//! session's channel; browser-level events go to the browser channel. When the
//! socket closes (the browser exited or crashed), every pending command fails
//! with [`CdpError::Closed`] and every channel ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

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

/// One event: its method and parameters.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
}

/// What a waiting command gets: the whole answer's text, or the error message.
type Pending = HashMap<u64, oneshot::Sender<Result<Utf8Bytes, String>>>;

struct Shared {
    pending: Mutex<Option<Pending>>,
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>,
}

/// A connection to one browser; cheap to clone.
#[derive(Clone)]
pub struct Connection {
    outgoing: mpsc::UnboundedSender<Message>,
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
pub struct Reply(Utf8Bytes);

impl Reply {
    #[cfg(test)]
    pub fn from_text(text: String) -> Self {
        Self(text.into())
    }

    /// The answer's `result`, parsed into `T` (which may borrow from it).
    pub fn result<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        #[derive(Deserialize)]
        struct Answer<T> {
            result: T,
        }
        serde_json::from_str::<Answer<T>>(self.0.as_str()).map(|a| a.result)
    }
}

#[derive(Deserialize)]
struct ProtocolError {
    message: String,
}

impl Connection {
    /// Connects to the browser's DevTools WebSocket. Browser-level events
    /// arrive on the returned receiver.
    pub async fn connect(ws_url: &str) -> anyhow::Result<(Self, mpsc::UnboundedReceiver<Event>)> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        let (socket, _) = tokio_tungstenite::connect_async_with_config(ws_url, Some(config), false).await?;
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut outgoing_rx) = mpsc::unbounded_channel::<Message>();
        let (browser_tx, browser_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            pending: Mutex::new(Some(HashMap::new())),
            sessions: Mutex::new(HashMap::new()),
        });

        tokio::spawn(async move {
            while let Some(message) = outgoing_rx.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
        });
        let reader_shared = shared.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let text = match message {
                    Message::Text(text) => text,
                    Message::Close(_) => break,
                    _ => continue,
                };
                reader_shared.dispatch(text, &browser_tx);
            }
            // The browser is gone: fail what waits, end every event stream.
            reader_shared.pending.lock().expect("cdp pending lock").take();
            reader_shared.sessions.lock().expect("cdp sessions lock").clear();
        });

        Ok((
            Self {
                outgoing,
                shared,
                next_id: Arc::new(AtomicU64::new(1)),
            },
            browser_rx,
        ))
    }

    /// Sends a command and waits at most `timeout` for its `result`.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        let reply = self.call_raw(session, method, params, timeout).await?;
        reply.result().map_err(|e| CdpError::Protocol {
            method: method.to_owned(),
            message: e.to_string(),
        })
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
        if self.outgoing.send(Message::text(command.to_string())).is_err() {
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
    fn dispatch(&self, text: Utf8Bytes, browser: &mpsc::UnboundedSender<Event>) {
        let Ok(envelope) = serde_json::from_str::<Envelope>(text.as_str()) else {
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
        let params = serde_json::from_str::<EventParams>(text.as_str())
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
