//! The capture as a reader sees it (SPEC §10 Capture, §11): the screenshot
//! is the page as Chromium shows it, left-to-right and right-to-left, at
//! every height; the page at one instant, back at its top.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::chromium::Browser;
use crate::helpers::manifest::{attribute, Manifest};
use crate::helpers::pixels::{mismatch, mismatch_at, plain_viewport_screenshot};
use crate::helpers::{Tenant, TestApp};

/// A page whose every region is told apart by colour, laid out from its
/// start edge: a shift sideways moves whole blocks.
fn page(dir: &str, body_height: &str) -> String {
    format!(
        r#"<!doctype html><html dir="{dir}" lang="ar"><head><meta charset="utf-8"><style>
        html, body {{ margin: 0; }}
        body {{ height: {body_height}; font: 16px sans-serif; }}
        header {{ display: flex; gap: 12px; padding: 12px; background: #123; color: white; }}
        .brand {{ width: 180px; height: 40px; background: #c33; }}
        main {{ display: grid; grid-template-columns: 260px 1fr; gap: 16px; padding: 16px; }}
        .card {{ height: 200px; background: #3a7; }}
        .table {{ height: 200px; background: repeating-linear-gradient(90deg, #fc3 0 40px, #36c 40px 80px); }}
        </style></head><body>
        <header><div class="brand"></div><h1 style="margin:0">حسابي</h1></header>
        <main><div class="card">البطاقة الأولى</div><div class="table">الجدول</div></main>
        </body></html>"#
    )
}

/// Imports `url` at 800x600 and `scale`, waits for it, and returns its id.
async fn completed_capture(app: &TestApp, tenant: &Tenant, worker: &WorkerProcess, url: &str, scale: f64) -> String {
    let body = json!({
        "organizationId": tenant.organization_id,
        "projectId": tenant.project_id,
        "sourceUrl": url,
        "viewport": {"width": 800, "height": 600, "deviceScaleFactor": scale},
    });
    let response = app.post_json("/page-imports", &tenant.token, &body).await;
    assert_eq!(response.status(), 202);
    let id = response.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let import = app.finished(tenant, &id, worker).await;
    assert_eq!(import["status"], "completed", "{url}: {import}\n{}", worker.log_text());
    id
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_first_viewport_is_the_page_as_chromium_shows_it_right_to_left_too_at_every_height(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let (width, height) = (800, 600);
    let cases = [
        ("rtl", "300px", 1.0, "right-to-left, shorter than the viewport"),
        (
            "rtl",
            "600px",
            3.0,
            "right-to-left, exactly the viewport's height, dsf 3",
        ),
        ("rtl", "300px", 3.0, "right-to-left, shorter than the viewport, dsf 3"),
        ("rtl", "2600px", 1.0, "right-to-left, taller than the viewport"),
        ("ltr", "300px", 1.0, "left-to-right, shorter than the viewport"),
    ];
    let paths: Vec<String> = (0..cases.len()).map(|i| format!("/{i}")).collect();
    let pages = paths
        .iter()
        .zip(&cases)
        .map(|(path, (dir, h, _, _))| (path.as_str(), Page::html(&page(dir, h))))
        .collect();
    let site = Site::start(pages).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    for (i, (_, _, scale, what)) in cases.iter().enumerate() {
        let url = site.url(&format!("/{i}"));
        let id = completed_capture(&app, &tenant, &worker, &url, *scale).await;
        let shot = app.object(&format!("page-imports/{id}/1/screenshot.png")).await;
        let reference = plain_viewport_screenshot(&url, width, height, *scale).await;
        let off = mismatch(&shot, &reference);
        assert!(
            off < 0.005,
            "{what}: {:.1} % of the first viewport differs from Chromium's own screenshot",
            off * 100.0
        );
    }
}

/// A bar turning a little on every animation frame of `canvas#spinner`,
/// forever; a timer turns it further every 50 ms too.
const SPINNER_2D: &str = r#"
const ctx = document.getElementById('spinner').getContext('2d');
let turn = 0;
setInterval(() => { turn += 0.5; }, 50);
const draw = () => {
    turn += 0.3;
    ctx.fillStyle = 'white';
    ctx.fillRect(0, 0, 200, 200);
    ctx.save();
    ctx.translate(100, 100);
    ctx.rotate(turn);
    ctx.fillStyle = 'rgb(20, 90, 200)';
    ctx.fillRect(-70, -20, 140, 40);
    ctx.restore();
    requestAnimationFrame(draw);
};
requestAnimationFrame(draw);
"#;

/// The same on the WebGL `canvas#gl`, three.js's way: a render loop, no
/// `preserveDrawingBuffer`.
const SPINNER_GL: &str = r#"
const gl = document.getElementById('gl').getContext('webgl');
const shader = (type, source) => {
    const s = gl.createShader(type);
    gl.shaderSource(s, source);
    gl.compileShader(s);
    return s;
};
const program = gl.createProgram();
gl.attachShader(program, shader(gl.VERTEX_SHADER,
    'attribute vec2 p; uniform float t; void main() { float c = cos(t), s = sin(t); gl_Position = vec4(c * p.x - s * p.y, s * p.x + c * p.y, 0.0, 1.0); }'));
gl.attachShader(program, shader(gl.FRAGMENT_SHADER,
    'precision mediump float; void main() { gl_FragColor = vec4(0.1, 0.6, 0.2, 1.0); }'));
gl.linkProgram(program);
gl.useProgram(program);
gl.bindBuffer(gl.ARRAY_BUFFER, gl.createBuffer());
gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([-0.7, -0.2, 0.7, -0.2, 0.7, 0.2, -0.7, -0.2, 0.7, 0.2, -0.7, 0.2]), gl.STATIC_DRAW);
const p = gl.getAttribLocation(program, 'p');
gl.enableVertexAttribArray(p);
gl.vertexAttribPointer(p, 2, gl.FLOAT, false, 0, 0);
const t = gl.getUniformLocation(program, 't');
let angle = 0;
const render = () => {
    angle += 0.3;
    gl.clearColor(1, 1, 1, 1);
    gl.clear(gl.COLOR_BUFFER_BIT);
    gl.uniform1f(t, angle);
    gl.drawArrays(gl.TRIANGLES, 0, 6);
    requestAnimationFrame(render);
};
requestAnimationFrame(render);
"#;

/// A render loop whose every frame takes 150 ms (a scene rendered in
/// software at a high scale).
const SLOW_LOOP: &str = r#"
const slow = document.getElementById('spinner').getContext('2d');
const frame = (t) => {
    const started = performance.now();
    while (performance.now() - started < 150) {}
    slow.fillStyle = `hsl(${t % 360}, 70%, 50%)`;
    slow.fillRect(0, 0, 200, 200);
    requestAnimationFrame(frame);
};
requestAnimationFrame(frame);
"#;

/// A carousel turning every 2.5 s.
const CAROUSEL: &str =
    "setInterval(() => document.querySelectorAll('.slide').forEach(s => s.classList.toggle('on')), 2500);";

/// A page of things that can move, side by side, 200x200 each: a 2-D
/// canvas, a WebGL canvas, a muted looping video (playing on its own when
/// `autoplay`) of `/clip.webm`, and slides; `scripts` set them moving.
fn stage(scripts: &[&str], autoplay: bool) -> String {
    format!(
        r#"<!doctype html><html><body style="margin:0; display:flex; align-items:flex-start">
        <canvas id="spinner" width="200" height="200" style="display:block"></canvas>
        <canvas id="gl" width="200" height="200" style="display:block"></canvas>
        <video id="clip" src="/clip.webm" width="200" height="200" muted loop playsinline {autoplay} style="display:block"></video>
        <div id="slides"><div class="slide on">One</div><div class="slide">Two</div></div>
        <script>{scripts}</script></body></html>"#,
        autoplay = if autoplay { "autoplay" } else { "" },
        scripts = scripts.join("\n"),
    )
}

/// A WebM of a bar turning a little on every frame (`seconds` long, 200x200),
/// recorded by Chromium's own MediaRecorder from a canvas (no encoder
/// needed on the machine).
async fn turning_bar_webm(seconds: f64) -> Vec<u8> {
    let mut browser = Browser::open("about:blank").await;
    let data = browser
        .eval(&format!(
            r#"new Promise((done, fail) => {{
                const c = document.createElement('canvas');
                c.width = 200; c.height = 200;
                const ctx = c.getContext('2d');
                const recorder = new MediaRecorder(c.captureStream(30), {{ mimeType: 'video/webm;codecs=vp8' }});
                const chunks = [];
                recorder.ondataavailable = e => chunks.push(e.data);
                recorder.onerror = fail;
                recorder.onstop = () => {{
                    const reader = new FileReader();
                    reader.onload = () => done(reader.result.split(',')[1]);
                    reader.readAsDataURL(new Blob(chunks, {{ type: 'video/webm' }}));
                }};
                let turn = 0;
                const draw = () => {{
                    turn += 0.2;
                    ctx.fillStyle = 'white';
                    ctx.fillRect(0, 0, 200, 200);
                    ctx.save(); ctx.translate(100, 100); ctx.rotate(turn);
                    ctx.fillStyle = 'rgb(200, 40, 40)';
                    ctx.fillRect(-80, -25, 160, 50);
                    ctx.restore();
                }};
                draw();
                recorder.start();
                const timer = setInterval(draw, 33);
                setTimeout(() => {{ clearInterval(timer); recorder.stop(); }}, {ms});
            }})"#,
            ms = (seconds * 1000.0) as u64
        ))
        .await;
    base64::engine::general_purpose::STANDARD
        .decode(data.as_str().expect("a recording"))
        .unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_canvas_and_video_is_read_at_the_screenshot_s_instant(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // Side by side, 200x200 each: a 2-D canvas and a WebGL canvas, each
    // with a bar turning on every animation frame, and an autoplaying
    // muted looping video of a turning bar.
    let video = turning_bar_webm(2.0).await;
    let site = Site::start(vec![
        ("/", Page::html(&stage(&[SPINNER_2D, SPINNER_GL], true))),
        ("/clip.webm", Page::of("video/webm", video)),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = completed_capture(&app, &tenant, &worker, &site.url("/"), 1.0).await;
    let manifest = Manifest(app.object_json(&format!("page-imports/{id}/1/capture.json")).await);
    let shot = app.object(&format!("page-imports/{id}/1/screenshot.png")).await;
    let mut differing = Vec::new();
    for (element, left) in [("spinner", 0), ("gl", 200), ("clip", 400)] {
        let node = manifest.element(element);
        let asset = manifest.asset_with_key(&node["image"]);
        let pixels = app.object(asset["key"].as_str().unwrap()).await;
        let off = mismatch_at(&shot, &pixels, (left, 0));
        if off >= 0.002 {
            differing.push(format!("{element}: {:.1} %", off * 100.0));
        }
    }
    assert!(
        differing.is_empty(),
        "assets that differ from the screenshot at their box, read at another instant: {differing:?}"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn motion_does_not_hold_the_capture_once_the_dom_is_still(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let video = turning_bar_webm(2.0).await;
    let pages = [
        ("/still", stage(&[], false)),
        ("/2d", stage(&[SPINNER_2D], false)),
        ("/webgl", stage(&[SPINNER_GL], false)),
        ("/slow-2d", stage(&[SLOW_LOOP], false)),
        ("/carousel", stage(&[CAROUSEL], false)),
        ("/video", stage(&[], true)),
    ];
    let mut routes: Vec<_> = pages.iter().map(|(path, html)| (*path, Page::html(html))).collect();
    // Streamed as a long video is: its request never ends while it plays.
    routes.push((
        "/clip.webm",
        Page::of("video/webm", video).held_open(Duration::from_secs(60)),
    ));
    let site = Site::start(routes).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let mut quiet = Vec::new();
    for (path, _) in &pages {
        let id = completed_capture(&app, &tenant, &worker, &site.url(path), 1.0).await;
        let m = app.object_json(&format!("page-imports/{id}/1/capture.json")).await;
        let timings = &m["timings"];
        let ms = timings["quietMs"].as_u64().unwrap() - timings["readyMs"].as_u64().unwrap();
        quiet.push((*path, ms));
    }
    // From the page ready to the page frozen (settle, reveal, quiet). The
    // waits are bounded at 10 s (network) and 5 s (stillness): a page whose
    // motion held them would reach a bound. They end by their rules
    // instead: a loop's first 600 ms of frames count as change, then half a
    // second of stillness; a timer or a video's stream is no change at all.
    assert!(
        quiet.iter().all(|(_, ms)| *ms < 2_500),
        "the waits, per page (ms): {quiet:?}"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_page_is_brought_back_to_the_top_as_a_reader_scrolls_back_and_what_was_revealed_stays(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // A header that is compact below the top and hides while the page
    // scrolls down (headroom.js's way: on the next animation frame); a
    // back-to-top button shown below 400 px; a section revealed by an
    // IntersectionObserver; two a debounced scroll listener shows once
    // 120 px in view and hides again while not (AOS's way, `once: false`):
    // one far below, one at the fold (its top 100 px above it, so hidden at
    // the top of the page).
    let site = Site::start(vec![(
        "/",
        Page::html(
            r#"<!doctype html><html><head><style>
            body { margin: 0; }
            #header { position: fixed; top: 0; left: 0; right: 0; height: 56px; background: rgb(20, 60, 160); }
            #header.unpinned { transform: translateY(-100%); }
            #hero { height: 100vh; }
            #page { position: relative; height: 5000px; }
            section { position: absolute; left: 0; width: 400px; height: 200px; opacity: 0; }
            #lazy { top: 1800px; }
            #lazy.revealed { opacity: 1; }
            #aos { top: 3200px; }
            #fold { top: 500px; }
            .aos-animate { opacity: 1 !important; }
            #back { position: fixed; right: 16px; bottom: 16px; }
            </style></head><body>
            <header id="header" class="top pinned"></header>
            <div id="page"><div id="hero"></div>
            <section id="lazy"></section>
            <section id="aos"></section>
            <section id="fold"></section></div>
            <button id="back" hidden>Back to top</button>
            <script>
            const header = document.getElementById('header');
            let last = scrollY, ticking = false;
            addEventListener('scroll', () => {
                if (ticking) return;
                ticking = true;
                requestAnimationFrame(() => {
                    ticking = false;
                    const y = scrollY;
                    header.classList.toggle('top', y <= 0);
                    header.classList.toggle('not-top', y > 0);
                    const down = y > last;
                    header.classList.toggle('unpinned', down);
                    header.classList.toggle('pinned', !down);
                    last = y;
                });
            });
            const back = document.getElementById('back');
            addEventListener('scroll', () => { back.hidden = scrollY < 400; });
            const lazy = document.getElementById('lazy');
            new IntersectionObserver((entries, observer) => {
                if (entries.some(e => e.isIntersecting)) {
                    lazy.classList.add('revealed');
                    observer.disconnect();
                }
            }).observe(lazy);
            let debounce;
            addEventListener('scroll', () => {
                clearTimeout(debounce);
                debounce = setTimeout(() => {
                    for (const section of document.querySelectorAll('#aos, #fold')) {
                        const r = section.getBoundingClientRect();
                        section.classList.toggle('aos-animate', r.top < innerHeight - 120);
                    }
                }, 50);
            });
            </script></body></html>"#,
        ),
    )])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = completed_capture(&app, &tenant, &worker, &site.url("/"), 1.0).await;
    let m = Manifest(app.object_json(&format!("page-imports/{id}/1/capture.json")).await);
    let classes = |id: &str| -> Vec<String> {
        attribute(m.element(id), "class")
            .unwrap_or("")
            .split(' ')
            .map(str::to_owned)
            .collect()
    };

    let header = classes("header");
    assert!(
        header.contains(&"top".into()) && header.contains(&"pinned".into()),
        "the header is in its at-top state: {header:?}"
    );
    assert_eq!(m.element("header")["box"][1], 0.0, "and shown: {}", m.element("header"));
    assert!(
        attribute(m.element("back"), "hidden").is_some(),
        "the back-to-top button is hidden at the top: {}",
        m.element("back")
    );
    assert!(classes("lazy").contains(&"revealed".into()), "{:?}", classes("lazy"));
    assert!(
        classes("aos").contains(&"aos-animate".into()),
        "the section shown on the way down stays shown: {:?}",
        classes("aos")
    );
    assert_eq!(m.style(m.element("aos"), "opacity"), "1");
    assert!(
        classes("fold").contains(&"aos-animate".into()),
        "the section at the fold shown on the way down stays shown: {:?}",
        classes("fold")
    );
}

/// A tall page whose script only polls how far the page was scrolled, into
/// its title: it hears no scroll event and observes no intersection, unless
/// `listens` adds a way to.
fn polled(listens: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>scrolled 0</title><style>
        body, h1 {{ margin: 0; }} #page {{ position: relative; height: 5000px; }}
        #far {{ position: absolute; top: 4000px; }}
        </style></head><body><div id="page"><h1 id="top">Top</h1><p id="far">Far below</p></div><script>
        let most = 0;
        setInterval(() => {{
          if (scrollY > most) {{ most = scrollY; document.title = 'scrolled ' + most; }}
        }}, 5);
        {listens}
        </script></body></html>"#
    )
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_nothing_hears_scroll_has_no_scroll_pass_and_is_captured_from_its_top(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = Site::start(vec![
        ("/unheard", Page::html(&polled(""))),
        (
            "/listener",
            Page::html(&polled("document.addEventListener('scroll', () => {});")),
        ),
        ("/handler", Page::html(&polled("window.onscroll = () => {};"))),
        (
            "/observer",
            Page::html(&polled(
                "new IntersectionObserver(() => {}).observe(document.getElementById('far'));",
            )),
        ),
        ("/self-scrolled", Page::html(&polled("scrollTo(0, 4000);"))),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let title = |m: &Manifest| m["source"]["title"].as_str().unwrap().to_owned();
    let scroll = |m: &Manifest| -> Vec<f64> {
        let scroll = m["dom"]["documents"][0]["scroll"].as_array().unwrap();
        scroll.iter().map(|v| v.as_f64().unwrap()).collect()
    };

    let id = completed_capture(&app, &tenant, &worker, &site.url("/unheard"), 1.0).await;
    let m = app.manifest(&id, 1).await;
    assert_eq!(
        title(&m),
        "scrolled 0",
        "nothing heard the page scroll, so it was not scrolled"
    );
    assert_eq!(m["page"]["contentHeight"], 5000);

    // Each way of hearing the page scroll gets the scroll pass: the page is
    // scrolled down and brought back to the top.
    for path in ["/listener", "/handler", "/observer"] {
        let id = completed_capture(&app, &tenant, &worker, &site.url(path), 1.0).await;
        let m = app.manifest(&id, 1).await;
        let most: u32 = title(&m).trim_start_matches("scrolled ").parse().unwrap();
        assert!(
            most >= 4000,
            "{path}: the scroll pass went down the page: {}",
            title(&m)
        );
        assert_eq!(scroll(&m), [0.0, 0.0], "{path}");
    }

    // A page nobody listens to that scrolled itself is captured from its top
    // all the same.
    let id = completed_capture(&app, &tenant, &worker, &site.url("/self-scrolled"), 1.0).await;
    let m = app.manifest(&id, 1).await;
    assert_eq!(title(&m), "scrolled 4000", "the page scrolled itself, and nothing more");
    assert_eq!(scroll(&m), [0.0, 0.0]);
}
