//! Real landing pages (issue 58, SPEC §11): the styles a rebuild needs to
//! draw them, what did not load said in `failedRequests`, and the navbar
//! captured in its at-top look.

use std::collections::HashSet;
use std::net::SocketAddr;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::fidelity::{capture_allowing, capture_page, png, Captured, PNG_RED};
use crate::helpers::capture::{files_under, fresh_loopback, Page, Site, Tripwire};
use crate::helpers::manifest::attribute;
use crate::helpers::repo_path;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn gradients_individual_transforms_fixed_backgrounds_and_variable_fonts_are_in_the_manifest(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><style>
          .stop-a { stop-color: #fed136; stop-opacity: 0.5 }
          .stop-b { stop-color: rgb(0, 128, 255) }
          #turned { rotate: 15deg; translate: 10px 20px; scale: 1.5; width: 50px; height: 20px; background: red }
          #fixed { background: url(data:image/gif;base64,R0lGODlhAQABAAAAACw=) fixed; height: 40px;
                   background-origin: content-box; background-blend-mode: multiply }
          #variable { font-variation-settings: "wght" 650, "wdth" 80; font-feature-settings: "smcp";
                      text-decoration: underline; text-decoration-thickness: 3px; text-underline-offset: 4px;
                      -webkit-text-stroke: 1px rgb(255, 0, 0); text-wrap: balance }
          #columns { column-count: 2; column-rule: 2px dashed rgb(0, 0, 255); border-image: linear-gradient(red, blue) 10 }
          #dashed { stroke: black; stroke-dasharray: 4 2; stroke-linecap: round; fill-opacity: 0.25; paint-order: stroke }
        </style></head><body>
          <svg width="120" height="40"><defs><linearGradient id="g">
            <stop id="a" class="stop-a" offset="0"></stop><stop id="b" class="stop-b" offset="1"></stop>
          </linearGradient></defs><rect width="120" height="20" fill="url(#g)"></rect>
          <rect id="dashed" y="20" width="120" height="20"></rect></svg>
          <div id="turned"></div>
          <div id="fixed">fixed</div>
          <p id="variable">Variable type</p>
          <div id="columns">one two three four</div>
        </body></html>"#,
    )
    .await;
    let m = &captured.manifest;
    let style = |id: &str, property: &str| m.style(m.element(id), property).to_owned();

    assert_eq!(style("a", "stop-color"), "rgb(254, 209, 54)");
    assert_eq!(style("a", "stop-opacity"), "0.5");
    assert_eq!(style("b", "stop-color"), "rgb(0, 128, 255)");
    assert_eq!(style("turned", "rotate"), "15deg");
    assert_eq!(style("turned", "translate"), "10px 20px");
    assert_eq!(style("turned", "scale"), "1.5");
    assert_eq!(
        style("turned", "transform"),
        "none",
        "the individual transforms are not in `transform`"
    );
    assert_eq!(style("fixed", "background-attachment"), "fixed");
    assert_eq!(style("fixed", "background-origin"), "content-box");
    assert_eq!(style("fixed", "background-blend-mode"), "multiply");
    assert_eq!(style("variable", "font-variation-settings"), r#""wdth" 80, "wght" 650"#);
    assert_eq!(style("variable", "font-feature-settings"), r#""smcp""#);
    assert_eq!(style("variable", "text-decoration-thickness"), "3px");
    assert_eq!(style("variable", "text-underline-offset"), "4px");
    assert_eq!(style("variable", "-webkit-text-stroke-width"), "1px");
    assert_eq!(style("variable", "-webkit-text-stroke-color"), "rgb(255, 0, 0)");
    assert_eq!(style("variable", "text-wrap"), "balance");
    assert_eq!(style("columns", "column-count"), "2");
    assert_eq!(style("columns", "column-rule-style"), "dashed");
    assert_eq!(
        style("columns", "border-image-source"),
        "linear-gradient(rgb(255, 0, 0), rgb(0, 0, 255))"
    );
    assert_eq!(style("dashed", "stroke-dasharray"), "4px, 2px");
    assert_eq!(style("dashed", "stroke-linecap"), "round");
    assert_eq!(style("dashed", "fill-opacity"), "0.25");
    assert_eq!(style("dashed", "paint-order"), "stroke");
}

/// A loopback address with nothing listening on port 80: a connection to it
/// is refused.
fn nobody_listening() -> SocketAddr {
    SocketAddr::from((fresh_loopback(), 80))
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn what_did_not_load_is_said_with_its_reason_and_refusals_stay_blocked_requests(pool: PgPool) {
    let reset = Tripwire::bind(&[SocketAddr::from((fresh_loopback(), 80))]).await;
    let refused = nobody_listening();
    let (reset_url, refused_url) = (
        format!("http://{}/photo.png", reset.addrs[0].ip()),
        format!("http://{}/app.js", refused.ip()),
    );
    let unresolved = "http://fonts.no-such-name.invalid/site.css";
    let private = "http://127.0.0.1/private.png";
    let site = Site::start(vec![
        (
            "/",
            Page::html(&format!(
                r#"<!doctype html><html><head>
                <link rel="stylesheet" href="{unresolved}">
                <style>@font-face {{ font-family: Brand; src: url(/missing.woff2) format("woff2") }}
                  body {{ font-family: Brand, serif }}</style>
                <script src="{refused_url}"></script></head>
                <body><h1>Fonts, scripts and images that never came</h1>
                <img src="{reset_url}" width="10" height="10" alt="">
                <img src="{private}" width="10" height="10" alt="">
                <img src="/ok.png" width="10" height="10" alt=""></body></html>"#
            )),
        ),
        ("/ok.png", Page::of("image/png", png(PNG_RED))),
    ])
    .await;
    let allow = [reset.addrs[0], refused];
    let captured = capture_allowing(pool, &site, &allow, json!({})).await;
    let m = &captured.manifest;

    let failed = m["failedRequests"].as_array().expect("failedRequests");
    let told: HashSet<(String, String, String)> = failed
        .iter()
        .map(|f| {
            let reason = match f["status"].as_u64() {
                Some(status) => format!("{} {status}", f["reason"].as_str().unwrap()),
                None => f["reason"].as_str().unwrap().to_owned(),
            };
            (
                f["url"].as_str().unwrap().to_owned(),
                f["kind"].as_str().unwrap().to_owned(),
                reason,
            )
        })
        .collect();
    let expected: HashSet<(String, String, String)> = [
        (unresolved.to_owned(), "stylesheet", "dns_failure"),
        (site.url("/missing.woff2"), "font", "http_status 404"),
        (refused_url, "script", "connection_refused"),
        (reset_url, "image", "connection_reset"),
    ]
    .into_iter()
    .map(|(url, kind, reason)| (url, kind.to_owned(), reason.to_owned()))
    .collect();
    assert_eq!(told, expected, "{failed:#?}");
    assert_eq!(m["page"]["failedRequestsOmitted"], 0);

    let blocked: Vec<&str> = m["blockedRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        blocked,
        [private],
        "only the egress rules' refusal is a blocked request"
    );
}

/// A desktop wide enough for the templates' navbar to be its desktop self
/// (Bootstrap's `lg`, 992 px), as bench R captures them.
fn desktop() -> Value {
    json!({"viewport": {"width": 1440, "height": 900, "deviceScaleFactor": 1}})
}

/// The RGB of the screenshot's pixel at `(x, y)`.
fn pixel(png: &[u8], (x, y): (u32, u32)) -> [u8; 3] {
    let (width, _, rgba) = crate::helpers::pixels::rgba(png);
    let at = ((y * width + x) * 4) as usize;
    [rgba[at], rgba[at + 1], rgba[at + 2]]
}

async fn screenshot(captured: &Captured) -> Vec<u8> {
    let key = captured.manifest["screenshot"]["key"].as_str().unwrap().to_owned();
    captured.app.object(&key).await
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_screenshot_shows_the_instant_the_snapshot_does_whatever_its_own_layout_starts(pool: PgPool) {
    let site = Site::start(vec![(
        "/",
        Page::html(
            r#"<!doctype html><html><head><style>
              body { margin: 0; background: rgb(0, 0, 0); height: 3000px }
              #nav { position: fixed; top: 0; left: 0; right: 0; height: 60px; background: rgb(255, 255, 255) }
              @media (min-width: 992px) {
                #nav { background: transparent; transition: background-color 0.3s }
                #nav.scrolled { background: rgb(255, 255, 255) }
              }
              #flag { display: none; position: absolute; top: 200px; left: 0; width: 100px; height: 100px;
                      background: rgb(255, 0, 0) }
              #sized { position: absolute; top: 400px; left: 0; width: 100px; height: 100px; background: rgb(0, 0, 255) }
            </style></head><body>
              <div id="nav"></div><div id="flag"></div><div id="sized"></div>
              <script>
                const nav = document.getElementById('nav');
                addEventListener('scroll', () => nav.classList.toggle('scrolled', scrollY !== 0));
                matchMedia('(max-width: 991px)').addEventListener('change', () => {
                  document.getElementById('flag').style.display = 'block';
                });
                let heard = 0;
                new ResizeObserver(() => {
                  heard += 1;
                  if (heard > 1) document.getElementById('sized').style.background = 'rgb(255, 0, 0)';
                }).observe(document.documentElement);
              </script>
            </body></html>"#,
        ),
    )])
    .await;
    let captured = capture_allowing(pool, &site, &[], desktop()).await;
    let m = &captured.manifest;
    assert_eq!(m.style(m.element("nav"), "background-color"), "rgba(0, 0, 0, 0)");
    assert!(m.element("flag").get("box").is_none(), "the flag is not laid out");
    assert_eq!(m.style(m.element("sized"), "background-color"), "rgb(0, 0, 255)");

    let png = screenshot(&captured).await;
    assert_eq!(
        pixel(&png, (700, 30)),
        [0, 0, 0],
        "the navbar at the top is transparent, as the manifest says"
    );
    assert_eq!(
        pixel(&png, (50, 250)),
        [0, 0, 0],
        "no media query listener ran for the screenshot"
    );
    assert_eq!(
        pixel(&png, (50, 450)),
        [0, 0, 255],
        "no ResizeObserver ran for the screenshot"
    );
}

/// A Start Bootstrap template's `dist/` from tests/fixtures/landing, at `/`.
async fn template(name: &str) -> Site {
    let dist = repo_path(&format!(
        "tests/fixtures/landing/node_modules/startbootstrap-{name}/dist"
    ));
    let pages: Vec<(String, Page)> = files_under(&dist, "", |_| true)
        .into_iter()
        .map(|(path, page)| match path.as_str() {
            "/index.html" => ("/".to_owned(), page),
            _ => (path, page),
        })
        .collect();
    Site::start(pages.iter().map(|(p, page)| (p.as_str(), page.clone())).collect()).await
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn grayscales_navbar_is_captured_transparent_at_the_top_as_its_reader_sees_it(pool: PgPool) {
    let site = template("grayscale").await;
    let captured = capture_allowing(pool, &site, &[], desktop()).await;
    let m = &captured.manifest;
    let nav = m.element("mainNav");
    assert!(!attribute(nav, "class").unwrap().contains("navbar-shrink"));
    assert_eq!(m.style(nav, "background-color"), "rgba(0, 0, 0, 0)");

    // The masthead's photograph shows through the bar: the navbar's middle
    // is as dark as the masthead just below it, not the scrolled bar's white.
    let png = screenshot(&captured).await;
    let [r, g, b] = pixel(&png, (720, 40));
    assert!(
        r < 200 && g < 200 && b < 200,
        "the navbar is drawn in its scrolled white: {:?}",
        [r, g, b]
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn freelancers_navbar_is_captured_at_its_at_top_height_as_the_manifest_says(pool: PgPool) {
    let site = template("freelancer").await;
    let captured = capture_allowing(pool, &site, &[], desktop()).await;
    let m = &captured.manifest;
    let nav = m.element("mainNav");
    let height = nav["box"][3].as_f64().unwrap().round() as u32;
    let colour = |css: &str| -> [u8; 3] {
        let n: Vec<u8> = css
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(", ")
            .map(|c| c.parse().unwrap())
            .collect();
        [n[0], n[1], n[2]]
    };
    let bar = colour(m.style(nav, "background-color"));

    // Where the bar ends in the screenshot, down its left edge: at the
    // height the manifest records for it, not the shrunk one.
    let png = screenshot(&captured).await;
    let drawn = (0..400).take_while(|y| pixel(&png, (5, *y)) == bar).count() as u32;
    assert!(height > 80, "the at-top navbar is the tall one: {height} px");
    assert!(
        drawn.abs_diff(height) <= 1,
        "the screenshot's bar is {drawn} px tall, the manifest's {height} px"
    );
}
