//! The page's motion before its one instant (SPEC §11): the scroll pass
//! that reveals what a reader scrolling would, the scroll back to the top
//! as a reader scrolls back, and the wait for a still page, which ends
//! with the page frozen.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Page, NETWORK_IDLE_PERIOD, POLL, SETTLE_TIMEOUT};
use crate::failure::Failure;

/// The scroll pass (SPEC §11): at most this long, this long at each step.
pub const REVEAL_BUDGET: Duration = Duration::from_secs(3);
const REVEAL_PAUSE: Duration = Duration::from_millis(100);
/// How long the page may react to the scroll back to the top.
const TOP_BUDGET: Duration = Duration::from_millis(1000);
/// The page has stopped changing: no mutation, drawing or layout change
/// for this long, waited for at most `QUIET_TIMEOUT`.
pub const PAGE_STILL_PERIOD: Duration = Duration::from_millis(500);
pub const QUIET_TIMEOUT: Duration = Duration::from_secs(5);

impl Page {
    /// The scroll pass (SPEC §11): the page scrolled from top to bottom in
    /// viewport steps, up to `max_height` CSS px and [`REVEAL_BUDGET`];
    /// then back to the top as a reader scrolls back
    /// ([`Page::back_to_top`]), and the network waited for again
    /// (bounded). The
    /// worker drives each step and does its own waiting: a page that breaks
    /// its own `scrollTo` or timers only shortens the pass, which improves
    /// a capture and never fails it.
    ///
    /// A page that nothing on it could hear scrolling (no scroll listener
    /// on the window or document, no IntersectionObserver, no frames whose
    /// scripts `page.js` does not see) has no pass: its lazy images were
    /// made eager at [`Page::settle`], and there is nothing else for a
    /// scroll to reveal.
    ///
    /// At each step the page gets two animation frames, in which Chromium
    /// delivers scroll events and IntersectionObserver callbacks, and so
    /// reacts: a section revealed, an image asked for (which the network
    /// wait after the pass waits for), a chart set drawing (which the quiet
    /// wait waits for). A step is held longer, up to [`REVEAL_PAUSE`] in
    /// all, only while a reaction is still due: a short timeout the page
    /// set (a debounced scroll handler), or everything when the page has
    /// frames.
    pub async fn reveal(&self, max_height: u32) -> Result<(), Failure> {
        let started = Instant::now();
        let listened = self
            .probe(
                "(s => {
                    if (!s) return true;
                    s.hold = true;
                    const d = document;
                    return s.scrollHeard || window.frames.length > 0
                        || !!(window.onscroll || window.onscrollend || d.onscroll || d.onscrollend);
                })(window.__pageImportCapture)",
            )
            .await?;
        if listened == Some(Value::Bool(false)) {
            // A page that scrolled itself is captured from the top all
            // the same.
            self.probe("(scrollY || scrollX) ? (scrollTo({ top: 0, left: 0, behavior: 'instant' }), true) : true")
                .await?;
            return Ok(());
        }
        let mut steps = 0;
        while started.elapsed() < REVEAL_BUDGET {
            let step_started = Instant::now();
            let step = format!(
                "(async () => {{
                    const y = Math.max(innerHeight, 100) * {next};
                    if (y >= Math.min(document.documentElement.scrollHeight, {max_height})) return 'end';
                    const s = window.__pageImportCapture;
                    const t = performance.now();
                    scrollTo({{ top: y, left: 0, behavior: 'instant' }});
                    if (!s) return 'blind';
                    await new Promise(done => {{ s.setTimeout(done, {pause}); s.raf(() => s.raf(done)); }});
                    while (performance.now() - t < {pause} && performance.now() < s.timerDue) {{
                        await new Promise(done => s.setTimeout(done, Math.max(1, s.timerDue - performance.now())));
                    }}
                    return window.frames.length > 0 ? 'blind' : 'seen';
                }})()",
                next = steps + 1,
                pause = REVEAL_PAUSE.as_millis(),
            );
            let blind = match self.probe_awaiting(&step).await?.as_ref().and_then(Value::as_str) {
                Some("seen") => false,
                Some("blind") => true,
                // The end of the page, or a step the page broke.
                _ => break,
            };
            steps += 1;
            if blind {
                tokio::time::sleep(REVEAL_PAUSE.saturating_sub(step_started.elapsed())).await;
            }
        }
        if steps > 0 {
            self.back_to_top().await?;
            self.network_quiet(Instant::now() + SETTLE_TIMEOUT).await;
        }
        Ok(())
    }

    /// Back to the top as a reader scrolls back (SPEC §11): the page hears
    /// it, and gets two animation frames and until the timeouts it set in
    /// reaction are due and its DOM has been still for [`REVEAL_PAUSE`],
    /// within [`TOP_BUDGET`]. What reacts to scrolling ends in its at-top
    /// state; an element that starts in the lower half of the first
    /// viewport or below it, not fixed to the viewport, whose attributes
    /// the page changed on the way back gets back the ones the reader saw
    /// (see `page.js`). `instant`: a page's `scroll-behavior: smooth` would
    /// still be moving when the page is read.
    async fn back_to_top(&self) -> Result<(), Failure> {
        let back = format!(
            "(async () => {{
                const s = window.__pageImportCapture;
                if (!s) {{ scrollTo({{ top: 0, left: 0, behavior: 'instant' }}); return 0; }}
                const t = performance.now();
                s.backToTop();
                await new Promise(done => {{ s.setTimeout(done, {budget}); s.raf(() => s.raf(done)); }});
                while (performance.now() - t < {budget}) {{
                    const now = performance.now();
                    if (now >= s.timerDue && now - s.lastChange >= {pause}) break;
                    await new Promise(done => s.setTimeout(done, {poll}));
                }}
                return s.keepRevealed();
            }})()",
            budget = TOP_BUDGET.as_millis(),
            pause = REVEAL_PAUSE.as_millis(),
            poll = POLL.as_millis(),
        );
        let kept = self.probe_awaiting(&back).await?;
        tracing::debug!(kept = ?kept, "back at the top");
        Ok(())
    }

    /// Runs finite CSS animations and transitions to their end and pauses
    /// infinite ones and playing media where they are (a player's time
    /// display would otherwise change the DOM for as long as its video
    /// plays), until the page has stopped changing for
    /// [`PAGE_STILL_PERIOD`] (no DOM mutation, no change of the document's
    /// size, the network idle, no drawing animation frame in a run's first 600 ms;
    /// a render loop's later frames and a playing video's stream are
    /// motion, which does not hold it) or
    /// [`QUIET_TIMEOUT`] has passed. A probe the page breaks counts as
    /// "still changing". Asked again when nothing changed since, it ends
    /// at its first look.
    pub async fn quiet(&self) -> Result<(), Failure> {
        const PROBE: &str = r#"(() => {
            for (const a of document.getAnimations()) {
                try {
                    if (a.playState !== 'running') continue;
                    const t = a.effect && a.effect.getComputedTiming();
                    if (t && Number.isFinite(t.endTime)) a.finish(); else a.pause();
                } catch (e) {}
            }
            for (const m of document.querySelectorAll('video, audio')) {
                try { if (!m.paused) m.pause(); } catch (e) {}
            }
            const s = window.__pageImportCapture;
            const d = document.documentElement;
            if (!s || !d) return 0;
            const size = d.scrollWidth + 'x' + d.scrollHeight;
            if (size !== s.size) { s.size = size; s.lastChange = performance.now(); }
            return performance.now() - s.lastChange;
        })()"#;
        let deadline = Instant::now() + QUIET_TIMEOUT;
        loop {
            let still_ms = self.probe(PROBE).await?.and_then(|v| v.as_f64()).unwrap_or(0.0);
            let still =
                still_ms >= PAGE_STILL_PERIOD.as_millis() as f64 && self.state().network_idle(NETWORK_IDLE_PERIOD);
            if still || Instant::now() >= deadline {
                break;
            }
            // Asked again when the page will have been still long enough
            // if nothing changes meanwhile, at most a poll away.
            let left = Duration::from_millis((PAGE_STILL_PERIOD.as_millis() as f64 - still_ms).max(0.0) as u64);
            tokio::time::sleep(left.clamp(Duration::from_millis(10), POLL)).await;
        }
        Ok(())
    }

    /// Freezes the page at this instant: its animation frames, timers,
    /// animations and media stop, its scroll and resize listeners, media
    /// query listeners, ResizeObservers and IntersectionObservers hear
    /// nothing more, and no transition starts (see `page.js`): the
    /// full-page screenshot lays the page out anew, and the page must not
    /// change between the snapshot and it.
    pub async fn freeze(&self) -> Result<(), Failure> {
        // One instant from here on (SPEC §11): the page's frames and timers
        // stop (`page.js`), and so do its animations and media, before the
        // content height, the snapshot, the screenshot and the pixels of
        // its canvases and videos are read.
        self.probe(
            r#"(s => {
                if (s) s.frozen = true;
                for (const m of document.querySelectorAll('video, audio')) { try { m.pause(); } catch (e) {} }
                try { for (const a of document.getAnimations()) a.pause(); } catch (e) {}
                if (s) s.still();
                return true;
            })(window.__pageImportCapture)"#,
        )
        .await?;
        Ok(())
    }
}
