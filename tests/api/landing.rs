//! Real landing pages (issue 58, SPEC §11): the styles a rebuild needs to
//! draw them, what did not load said in `failedRequests`, and the navbar
//! captured in its at-top look.

use std::collections::HashSet;
use std::net::SocketAddr;

use sqlx::PgPool;

use crate::fidelity::{capture_allowing, capture_page, png, PNG_RED};
use crate::helpers::capture::{fresh_loopback, Page, Site, Tripwire};

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
    let captured = capture_allowing(pool, &site, &allow).await;
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
