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
/// No mutation, drawing or layout change for this long, with nothing else
/// pending, and the page is still.
pub const STILL_GAP: Duration = Duration::from_millis(100);
/// No change for this long, and the page is still even with a timer due
/// (a page that polls with short timeouts forever never changes).
pub const PAGE_STILL_PERIOD: Duration = Duration::from_millis(500);
pub const QUIET_TIMEOUT: Duration = Duration::from_secs(5);

/// What the page says of its motion (issue 52): instead of a fixed quiet
/// interval after the last change, the signals that something is still
/// to come are trusted. The page is still once it has not changed for
/// [`STILL_GAP`], no web font is loading, and no short timeout it set is
/// still due (a reaction scheduled for later: a menu that opens 300 ms
/// after load); a timer holds it only until [`PAGE_STILL_PERIOD`] without
/// change. The network's part (nothing in flight, none started or ended
/// for `NETWORK_IDLE_PERIOD`) is the event task's, read beside it.
/// Running animations and transitions are not waited for: the probe runs
/// finite ones to their end and pauses the rest.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stillness {
    /// Since the last mutation, drawing frame or change of the document's size.
    still_ms: f64,
    /// Until the last short timeout the page set is due (≤ 0: none due).
    timer_due_in_ms: f64,
    fonts_loading: bool,
}

impl Stillness {
    /// The probe's `[stillMs, timerDueInMs, fontsLoading]`; a page
    /// without the worker's script, or a probe it broke, is changing.
    fn read(value: Option<Value>) -> Self {
        let parsed = value
            .as_ref()
            .and_then(Value::as_array)
            .and_then(|a| match a.as_slice() {
                [still, due, fonts] => Some(Self {
                    still_ms: still.as_f64()?,
                    timer_due_in_ms: due.as_f64()?,
                    fonts_loading: fonts.as_bool()?,
                }),
                _ => None,
            });
        parsed.unwrap_or(Self {
            still_ms: 0.0,
            timer_due_in_ms: 0.0,
            fonts_loading: false,
        })
    }

    /// How long until the page is still if nothing changes meanwhile:
    /// zero when it is.
    fn left(&self) -> Duration {
        let ms = |ms: f64| Duration::from_millis(ms.max(0.0).ceil() as u64);
        let gap = ms(STILL_GAP.as_millis() as f64 - self.still_ms);
        let whole = ms(PAGE_STILL_PERIOD.as_millis() as f64 - self.still_ms);
        let timer = ms(self.timer_due_in_ms).min(whole);
        let fonts = if self.fonts_loading {
            whole.max(POLL)
        } else {
            Duration::ZERO
        };
        gap.max(timer).max(fonts)
    }
}

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
    /// plays), until the page is known to be still ([`Stillness`]) or
    /// [`QUIET_TIMEOUT`] has passed. A probe the page breaks counts as
    /// "still changing". Asked again when nothing changed since, it ends
    /// at its first look.
    pub async fn quiet(&self) -> Result<(), Failure> {
        const PROBE: &str = r#"(() => {
            const s = window.__pageImportCapture;
            for (const a of (s ? s.animations() : document.getAnimations())) {
                try {
                    if (a.playState !== 'running') continue;
                    const t = a.effect && a.effect.getComputedTiming();
                    if (t && Number.isFinite(t.endTime)) a.finish(); else a.pause();
                } catch (e) {}
            }
            for (const m of document.querySelectorAll('video, audio')) {
                try { if (!m.paused) m.pause(); } catch (e) {}
            }
            const d = document.documentElement;
            if (!s || !d) return null;
            const size = d.scrollWidth + 'x' + d.scrollHeight;
            const now = performance.now();
            if (size !== s.size) { s.size = size; s.lastChange = now; }
            const fonts = document.fonts && document.fonts.status === 'loading';
            return [now - s.lastChange, s.timerDue - now, !!fonts];
        })()"#;
        let deadline = Instant::now() + QUIET_TIMEOUT;
        loop {
            let page = Stillness::read(self.probe(PROBE).await?);
            let network = self.state().network_idle_in(NETWORK_IDLE_PERIOD);
            let left = page.left().max(network);
            if left.is_zero() || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(left.clamp(Duration::from_millis(5), POLL)).await;
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
                try { for (const a of (s ? s.animations() : document.getAnimations())) a.pause(); } catch (e) {}
                if (s) s.still();
                return true;
            })(window.__pageImportCapture)"#,
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn page(still_ms: f64, timer_due_in_ms: f64, fonts_loading: bool) -> Stillness {
        Stillness::read(Some(json!([still_ms, timer_due_in_ms, fonts_loading])))
    }

    #[test]
    fn a_page_with_nothing_pending_is_still_after_the_gap_not_the_period() {
        assert_eq!(page(150.0, -2_000.0, false).left(), Duration::ZERO);
        assert_eq!(page(40.0, -2_000.0, false).left(), Duration::from_millis(60));
    }

    #[test]
    fn a_timer_due_holds_the_page_until_it_is_due_within_the_period() {
        assert_eq!(page(150.0, 300.0, false).left(), Duration::from_millis(300));
        // Polling forever with short timeouts while nothing changes.
        assert_eq!(page(450.0, 300.0, false).left(), Duration::from_millis(50));
        assert_eq!(page(500.0, 300.0, false).left(), Duration::ZERO);
    }

    #[test]
    fn a_font_loading_holds_the_page() {
        assert!(page(150.0, 0.0, true).left() >= Duration::from_millis(350));
        assert!(!page(900.0, 0.0, true).left().is_zero(), "as long as it loads");
    }

    #[test]
    fn a_probe_the_page_broke_reads_as_changing() {
        for broken in [
            None,
            Some(json!(null)),
            Some(json!([1.0, 2.0])),
            Some(json!(["a", 0, false])),
        ] {
            assert_eq!(Stillness::read(broken).left(), STILL_GAP);
        }
    }
}
