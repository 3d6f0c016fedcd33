//! A set's tab passed from member to member (SPEC §15, decision 0048):
//! left at `about:blank` by one, taken by the next.

use std::time::{Duration, Instant};

use crate::commands::Navigate;

use super::{Page, COMMAND_TIMEOUT};

/// A tab kept for the next member of an import set: its target and the
/// worker's session on it.
pub struct Tab {
    pub target_id: String,
    pub session: String,
}

impl Page {
    /// The tab, left at `about:blank` for the next member of a set (its
    /// load event seen here, so none of it reaches the next page's state);
    /// closed instead, and `None`, when it does not get there.
    pub async fn release(self) -> Option<Tab> {
        for frame in &self.state().frames {
            self.cdp.forget_session(&frame.session);
        }
        self.state().load_fired = false;
        let blank = self.send(&Navigate { url: "about:blank" }).await;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        while blank.is_ok() && !self.state().load_fired && !self.crashed() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if blank.is_err() || !self.state().load_fired || self.crashed() {
            tracing::debug!("a set's tab did not go blank; the next member gets a new one");
            self.close().await;
            return None;
        }
        Some(Tab {
            target_id: self.target_id.clone(),
            session: self.session.clone(),
        })
    }
}
