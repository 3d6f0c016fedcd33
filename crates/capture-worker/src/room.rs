//! A browser context and the egress proxy its traffic goes through: one
//! capture's own, or an import set's, whose members are captured one after
//! another in it (SPEC §15), in one tab navigated again for each, so that
//! what the first loaded is in the HTTP cache for the next and the CMP's
//! stored choice holds for them all.

use std::sync::Arc;

use crate::browser::{Browser, Contexts};
use crate::cdp::Connection;
use crate::egress::{EgressPolicy, EgressProxy};
use crate::failure::{Cause, Failure};
use crate::page::{Tab, COMMAND_TIMEOUT};

pub struct Room {
    cdp: Connection,
    contexts: Contexts,
    context_id: String,
    proxy: EgressProxy,
    /// An import set's: a member's tab is kept for the next.
    keeps_tabs: bool,
    tab: std::sync::Mutex<Option<Tab>>,
}

impl Room {
    /// A new browser context in `browser` behind a proxy of its own that
    /// lets `max_bytes` in per capture ([`Room::next_capture`]).
    pub async fn open(browser: &Browser, policy: Arc<EgressPolicy>, max_bytes: u64) -> Result<Self, Failure> {
        let proxy = EgressProxy::start(policy, max_bytes).await.map_err(|e| {
            tracing::error!(error = %e, "egress proxy did not start");
            Failure::from(Cause::InternalError)
        })?;
        let context_id = browser.cdp.open_context(&proxy.url(), COMMAND_TIMEOUT).await?;
        Ok(Self {
            cdp: browser.cdp.clone(),
            contexts: browser.contexts.clone(),
            context_id,
            proxy,
            keeps_tabs: false,
            tab: std::sync::Mutex::new(None),
        })
    }

    /// An import set's room: each member's tab, once captured, is kept and
    /// navigated again by the next (decision 0048: a fresh tab costs a new
    /// renderer, bench V).
    pub fn keeping_tabs(mut self) -> Self {
        self.keeps_tabs = true;
        self
    }

    pub fn keeps_tabs(&self) -> bool {
        self.keeps_tabs
    }

    /// The tab an earlier member left, if any.
    pub fn take_tab(&self) -> Option<Tab> {
        self.tab.lock().expect("room tab lock").take()
    }

    pub fn keep_tab(&self, tab: Tab) {
        *self.tab.lock().expect("room tab lock") = Some(tab);
    }

    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// The proxy's ledger, fresh for the capture about to start: what it
    /// refused, could not reach and let in is that capture's alone.
    pub fn next_capture(&self) -> &EgressProxy {
        self.proxy.next_capture();
        &self.proxy
    }

    /// Disposes of the context, with every tab and worker still in it.
    pub async fn close(self) {
        self.contexts.forget(&self.context_id);
        if let Some(tab) = self.take_tab() {
            self.cdp.forget_session(&tab.session);
        }
        if let Err(e) = self.cdp.dispose_context(&self.context_id, COMMAND_TIMEOUT).await {
            // Disposed with the browser's connection at the latest.
            tracing::debug!(error = %e, "a browser context could not be disposed");
        }
    }
}
