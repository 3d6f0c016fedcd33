//! The wait for a still page trusts the page's signals instead of a fixed
//! quiet interval (issue 52, `page/motion.rs` `Stillness`): the cases a
//! faster wait could miss, each captured for real.

use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;

use crate::fidelity::{capture, png, PNG_RED, WEB_FONT};
use crate::helpers::capture::{Page, Site};

/// A change the page's own timer makes 300 ms after load, and one that
/// waits on a request answered 300 ms late, are both in the capture.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_that_changes_300_ms_after_load_is_captured_after_the_change(pool: PgPool) {
    let site = Site::start(vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><head><meta charset="utf-8"></head><body>
                <h1>Loaded</h1>
                <script>
                window.addEventListener('load', () => {
                  setTimeout(() => {
                    const p = document.createElement('p');
                    p.id = 'timer';
                    p.textContent = 'Set by a timer';
                    document.body.appendChild(p);
                  }, 300);
                  setTimeout(() => {
                    fetch('/late.txt').then(r => r.text()).then(text => {
                      const p = document.createElement('p');
                      p.id = 'fetched';
                      p.textContent = text;
                      document.body.appendChild(p);
                    });
                  }, 50);
                });
                </script></body></html>"#,
            ),
        ),
        (
            "/late.txt",
            Page::of("text/plain", b"Answered late".to_vec()).delayed(Duration::from_millis(300)),
        ),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;
    assert_eq!(m.text_node("Set by a timer")["parent"], m.element("timer")["id"]);
    assert_eq!(m.text_node("Answered late")["parent"], m.element("fetched")["id"]);
}

/// Text the page adds after load in a web font that arrives 700 ms later
/// is drawn in that font, not in the fallback.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_font_that_arrives_late_draws_the_text_it_was_asked_for(pool: PgPool) {
    let font = std::fs::read(WEB_FONT).unwrap_or_else(|e| panic!("{WEB_FONT} (fonts-dejavu-core): {e}"));
    let site = Site::start(vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><head><meta charset="utf-8"><style>
                @font-face { font-family: "Late Serif"; src: url("/late.ttf") format("truetype"); }
                #late { font-family: "Late Serif", Arial; }
                </style></head><body><h1>Loaded</h1>
                <script>
                window.addEventListener('load', () => setTimeout(() => {
                  const p = document.createElement('p');
                  p.id = 'late';
                  p.textContent = 'Set in a late font';
                  document.body.appendChild(p);
                }, 200));
                </script></body></html>"#,
            ),
        ),
        (
            "/late.ttf",
            Page::of("font/ttf", font).delayed(Duration::from_millis(700)),
        ),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;
    let text = m.text_node("Set in a late font");
    let drawn: Vec<&Value> = text["fonts"]
        .as_array()
        .unwrap_or_else(|| panic!("no fonts on {text}"))
        .iter()
        .map(|i| &m["dom"]["fonts"][i.as_u64().unwrap() as usize])
        .collect();
    assert_eq!(drawn.len(), 1, "{drawn:?}");
    assert_eq!(drawn[0]["postScriptName"], "DejaVuSerif", "{drawn:?}");
}

/// An image the page asks for from its scroll listener once it comes into
/// view (the lazy loaders that predate `loading=lazy`), on a page not two
/// viewports tall, answered 300 ms late: the scroll pass reveals it and
/// the capture waits for it.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_image_loaded_when_scrolled_to_is_captured(pool: PgPool) {
    let site = Site::start(vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><head><meta charset="utf-8"><style>
                body { margin: 0; }
                #spacer { height: 900px; }
                </style></head><body><div id="spacer">Top</div>
                <img id="lazy" data-src="/seen.png" width="20" height="20" alt="">
                <script>
                const img = document.getElementById('lazy');
                const load = () => {
                  if (!img.getAttribute('src') && img.getBoundingClientRect().top < innerHeight) {
                    img.src = img.dataset.src;
                  }
                };
                window.addEventListener('scroll', load);
                load();
                </script></body></html>"#,
            ),
        ),
        (
            "/seen.png",
            Page::of("image/png", png(PNG_RED)).delayed(Duration::from_millis(300)),
        ),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;
    assert!(
        m["page"]["contentHeight"].as_u64().unwrap() < 2 * 600,
        "not two viewports tall: {}",
        m["page"]
    );
    assert_eq!(site.hits("/seen.png"), 1, "asked for once scrolled to");
    let stored = m.assets_from(&site.url("/seen.png"));
    assert_eq!(stored.len(), 1, "{:?}", m.assets());
    assert_eq!(
        captured.app.object(stored[0]["key"].as_str().unwrap()).await,
        png(PNG_RED)
    );
}
