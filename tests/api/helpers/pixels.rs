//! Screenshots compared pixel by pixel: a capture's against what a plain
//! headless Chromium shows of the same page.

use std::time::Duration;

use base64::Engine as _;
use serde_json::json;

use super::chromium::Browser;

/// PNG bytes as RGBA rows.
pub fn rgba(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let pixels = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf.chunks(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect(),
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    (info.width, info.height, pixels)
}

/// The share of `reference`'s pixels that the top-left of `shot` shows
/// otherwise (any channel off by more than anti-aliasing's few levels).
pub fn mismatch(shot: &[u8], reference: &[u8]) -> f64 {
    mismatch_at(shot, reference, (0, 0))
}

/// The share of `reference`'s pixels that `shot` shows otherwise in the
/// box of `reference`'s size at `(left, top)`.
pub fn mismatch_at(shot: &[u8], reference: &[u8], (left, top): (u32, u32)) -> f64 {
    let (sw, sh, s) = rgba(shot);
    let (rw, rh, r) = rgba(reference);
    assert!(
        sw >= left + rw && sh >= top + rh,
        "the screenshot {sw}x{sh} holds {rw}x{rh} at ({left}, {top})"
    );
    let mut off = 0u64;
    for y in 0..rh {
        for x in 0..rw {
            let a = (((top + y) * sw + left + x) * 4) as usize;
            let b = ((y * rw + x) * 4) as usize;
            if (0..3).any(|c| s[a + c].abs_diff(r[b + c]) > 24) {
                off += 1;
            }
        }
    }
    off as f64 / f64::from(rw * rh)
}

/// What a plain `Page.captureScreenshot` of the viewport shows of `url`:
/// no clip, no `captureBeyondViewport`, in a browser of its own.
pub async fn plain_viewport_screenshot(url: &str, width: i32, height: i32, scale: f64) -> Vec<u8> {
    plain_viewport_screenshot_after(url, width, height, scale, None).await
}

/// [`plain_viewport_screenshot`] after `script` ran on the loaded page
/// (a reader's click, say) and the page settled for `settle`.
pub async fn plain_viewport_screenshot_after(
    url: &str,
    width: i32,
    height: i32,
    scale: f64,
    after: Option<(&str, Duration)>,
) -> Vec<u8> {
    let mut browser = plain_browser(url, width, height, scale, false).await;
    if let Some((script, settle)) = after {
        let answer = browser.eval(script).await;
        assert!(!answer.is_null() && answer != "no button", "{script} answered {answer}");
        tokio::time::sleep(settle).await;
    }
    viewport_screenshot(&mut browser).await
}

/// A plain headless Chromium of its own showing `url` at `width`×`height`
/// and `scale` (as a phone, with touch, when `mobile`), loaded and its
/// fonts ready: a reader's browser, to act in before
/// [`viewport_screenshot`].
pub async fn plain_browser(url: &str, width: i32, height: i32, scale: f64, mobile: bool) -> Browser {
    let mut browser = Browser::open("about:blank").await;
    browser
        .call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile}),
        )
        .await;
    if mobile {
        browser
            .call(
                "Emulation.setTouchEmulationEnabled",
                json!({"enabled": true, "maxTouchPoints": 5}),
            )
            .await;
    }
    // As the worker's browser (`--hide-scrollbars`): a scrollbar is no part
    // of the page.
    browser
        .call("Emulation.setScrollbarsHidden", json!({"hidden": true}))
        .await;
    browser.call("Page.navigate", json!({"url": url})).await;
    browser
        .until(
            "document.readyState === 'complete' && document.fonts.status === 'loaded'",
            Duration::from_secs(20),
        )
        .await;
    browser
}

/// What a plain `Page.captureScreenshot` of the viewport shows now, after
/// two animation frames.
pub async fn viewport_screenshot(browser: &mut Browser) -> Vec<u8> {
    browser
        .eval("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))")
        .await;
    let shot = browser.call("Page.captureScreenshot", json!({"format": "png"})).await;
    base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap()
}
