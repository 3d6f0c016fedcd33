//! The whole lifecycle for real (SPEC §10): the service, the capture worker
//! binary, headless Chromium, PostgreSQL and the AWS emulator, with pages
//! served from loopback.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::helpers::capture::{alive, other_loopback, worker_metrics, Page, Site, Tripwire, WorkerProcess, BROWSER};
use crate::helpers::manifest::assert_valid_manifest;
use crate::helpers::{eventually, repo_path, TestApp};

const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";

fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(PNG_1X1).unwrap()
}

/// A page with a stylesheet, a web font and an image.
fn styled_site_pages() -> Vec<(&'static str, Page)> {
    vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><head><title>Pricing — 料金</title>
                <link rel="stylesheet" href="/style.css"></head>
                <body><div id="app"><h1 class="hero">Plans 料金 🎉</h1><img src="/logo.png" width="40" height="40" alt="logo">
                <p>Text in the web font.</p></div></body></html>"#,
            ),
        ),
        (
            "/style.css",
            Page::of(
                "text/css",
                br#"@font-face { font-family: "Brand"; src: url("/brand.ttf") format("truetype"); }
                body { margin: 0; background: rgb(250, 240, 230); }
                .hero { font-family: "Brand", sans-serif; color: rgb(10, 20, 30); font-size: 40px; }
                #app { padding: 16px; min-height: 1400px; }"#
                    .to_vec(),
            ),
        ),
        ("/logo.png", Page::of("image/png", png())),
        ("/brand.ttf", Page::of("font/ttf", std::fs::read(FONT).unwrap())),
    ]
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_styled_page_is_captured_and_completed_with_verified_artifacts(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(styled_site_pages()).await;
    let (worker, health) = WorkerProcess::start_with_metrics(&app, &[site.addr]);

    let id = app.import_url(&tenant, &site.url("/"), Some("#app")).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());

    let prefix = format!("page-imports/{id}/1/");
    let raw = app.object(&format!("{prefix}capture.json")).await;
    assert_eq!(
        import["captureHash"],
        format!("sha256:{}", sha256_hex(&raw)),
        "the hash covers exactly the stored bytes"
    );
    let text = String::from_utf8(raw.clone()).unwrap();
    assert!(
        text.starts_with(&format!(
            r#"{{"schemaVersion":1,"pageImportId":"{id}","attempt":1,"nonce":"{}""#,
            app.nonce_of(&id).await
        )),
        "identity first: {}",
        &text[..200]
    );
    let manifest: Value = serde_json::from_slice(&raw).unwrap();
    assert_valid_manifest(&manifest);
    assert_eq!(manifest["source"]["requestedUrl"], site.url("/"));
    assert_eq!(manifest["source"]["finalUrl"], site.url("/"));
    assert_eq!(manifest["source"]["httpStatus"], 200);
    assert_eq!(manifest["source"]["title"], "Pricing — 料金");
    assert_eq!(
        manifest["viewport"],
        json!({"width": 800, "height": 600, "deviceScaleFactor": 2.0, "mobile": false})
    );
    assert_eq!(manifest["readiness"], json!({"readySelector": "#app", "matched": true}));
    assert!(manifest["worker"]["browser"].as_str().unwrap().contains("Chrome"));
    assert_eq!(manifest["blockedRequests"], json!([]));

    // The page is taller than the viewport: the screenshot covers all of it.
    let content_height = manifest["page"]["contentHeight"].as_u64().unwrap();
    assert!(content_height > 1400, "{}", manifest["page"]);
    assert_eq!(manifest["page"]["capturedHeight"], content_height);
    assert_eq!(manifest["page"]["truncated"], false);
    let screenshot = app.object(&format!("{prefix}screenshot.png")).await;
    let (width, height) = png_size(&screenshot);
    assert_eq!(width, 800 * 2, "pixel width = viewport width × device scale factor");
    assert_eq!(height as u64, content_height * 2);
    assert_eq!(manifest["screenshot"]["pixelWidth"], width);
    assert_eq!(manifest["screenshot"]["pixelHeight"], height);
    assert_eq!(manifest["screenshot"]["sha256"], sha256_hex(&screenshot));
    assert_eq!(manifest["screenshot"]["key"], format!("{prefix}screenshot.png"));

    // Every asset is stored under its own hash.
    let assets = manifest["assets"].as_array().unwrap();
    for (path, kind) in [
        ("/style.css", "stylesheet"),
        ("/logo.png", "image"),
        ("/brand.ttf", "font"),
    ] {
        let asset = assets
            .iter()
            .find(|a| a["url"] == site.url(path))
            .unwrap_or_else(|| panic!("{path} missing from {assets:?}"));
        assert_eq!(asset["kind"], kind);
        let stored = app.object(asset["key"].as_str().unwrap()).await;
        assert_eq!(asset["sha256"], sha256_hex(&stored));
        assert_eq!(asset["bytes"], stored.len());
        assert!(asset["key"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{prefix}assets/{}", sha256_hex(&stored))));
    }
    assert!(manifest["fonts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["family"] == "Brand" && f["status"] == "loaded"));

    // The DOM: a flat list with parents, boxes, text boxes and styles.
    let dom = &manifest["dom"];
    let names: Vec<&str> = dom["styleNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let nodes = dom["nodes"].as_array().unwrap();
    let h1 = nodes.iter().find(|n| n["name"] == "H1").expect("an H1 node");
    let style = &dom["styles"][h1["style"].as_u64().unwrap() as usize];
    let prop = |name: &str| style[names.iter().position(|n| *n == name).unwrap()].clone();
    assert_eq!(prop("color"), "rgb(10, 20, 30)");
    assert_eq!(prop("font-size"), "40px");
    assert!(h1["box"].as_array().unwrap()[2].as_f64().unwrap() > 0.0);
    let app_div = nodes
        .iter()
        .find(|n| {
            n["attributes"]
                .as_array()
                .is_some_and(|a| a.contains(&json!(["id", "app"])))
        })
        .expect("div#app");
    assert_eq!(nodes[h1["parent"].as_u64().unwrap() as usize]["id"], app_div["id"]);
    let text = nodes
        .iter()
        .find(|n| n["value"].as_str().is_some_and(|v| v.contains("Plans")))
        .expect("the heading's text node");
    assert!(!text["textBoxes"].as_array().unwrap().is_empty());
    assert!(nodes
        .iter()
        .all(|n| n["paintOrder"].is_null() || n["paintOrder"].is_i64()));

    // The worker's own health and metrics listener.
    let healthz = reqwest::get(format!("http://{health}/healthz")).await.unwrap();
    assert_eq!(healthz.status(), 200);
    let metrics = worker_metrics(health).await;
    assert!(
        metrics.contains(r#"worker_captures_total{outcome="completed",class="none"} 1"#),
        "{metrics}"
    );
    let browser = manifest["worker"]["browser"].as_str().unwrap();
    assert!(
        metrics.contains(&format!(r#"worker_browser_info{{version="{browser}"}} 1"#)),
        "the running browser's version: {metrics}"
    );

    // The user downloads the real PNG through the presigned link.
    let redirect = app.get(&format!("/page-imports/{id}/screenshot"), &tenant.token).await;
    assert_eq!(redirect.status(), 302);
    let location = redirect.headers()["location"].to_str().unwrap().to_owned();
    let downloaded = reqwest::get(location).await.unwrap().bytes().await.unwrap();
    assert_eq!(downloaded.as_ref(), screenshot.as_slice());
}

fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_ready_selector_that_appears_late_is_waited_for_and_one_that_never_does_fails(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![(
        "/",
        Page::html(
            r#"<html><body><script>setTimeout(() => {
                 const d = document.createElement('div'); d.id = 'late'; d.textContent = 'ready';
                 document.body.appendChild(d); }, 500);</script></body></html>"#,
        ),
    )])
    .await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[("CAPTURE_READY_TIMEOUT_SECS", "2")]);

    let late = app.import_url(&tenant, &site.url("/"), Some("#late")).await;
    let import = app.finished(&tenant, &late, &worker).await;
    assert_eq!(import["status"], "completed", "{import}");
    let manifest = app.manifest(&late, 1).await;
    assert_eq!(manifest["readiness"]["matched"], true);
    let nodes = manifest["dom"]["nodes"].as_array().unwrap();
    assert!(
        nodes.iter().any(|n| n["value"] == "ready"),
        "captured after it appeared"
    );

    let never = app.import_url(&tenant, &site.url("/"), Some("#never")).await;
    let import = app.finished(&tenant, &never, &worker).await;
    assert_eq!(import["status"], "failed");
    assert_eq!(import["errorMessage"], "The ready selector did not appear within 2 s");
    assert_eq!(app.failure(&never, 1).await.cause(), ("ready_timeout", false));
    assert_eq!(
        import["resultUrl"],
        format!("s3://{}/page-imports/{never}/1/failure.json", app.bucket)
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_answering_404_fails_and_is_not_retryable(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![("/gone", Page::html("<h1>Not here</h1>").status(404))]).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_url(&tenant, &site.url("/gone"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "failed");
    assert_eq!(import["errorMessage"], "The page answered HTTP 404");
    let failure = app.failure(&id, 1).await;
    assert_eq!(failure.cause(), ("http_status", false));
    assert!(
        failure.0["message"] == import["errorMessage"],
        "the callback carries failure.json's message"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn private_addresses_are_unreachable_from_the_page_under_every_spelling(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    // Listeners on the addresses the page reaches for: 127.0.0.1:80 (what
    // `localhost` and the numeric spellings mean), [::1]:80, and another
    // loopback address. Any connection to them is a leak.
    let other = other_loopback(IpAddr::from([127, 0, 0, 1]));
    let tripwire = Tripwire::bind(&[
        "127.0.0.1:80".parse().unwrap(),
        "[::1]:80".parse().unwrap(),
        SocketAddr::new(other.into(), 80),
    ])
    .await;
    let targets = [
        "http://127.0.0.1/".to_owned(),
        "http://localhost/".to_owned(),
        "http://[::1]/".to_owned(),
        "http://2130706433/".to_owned(),
        "http://0x7f.0.0.1/".to_owned(),
        "http://0177.0.0.1/".to_owned(),
        "http://127.1/".to_owned(),
        "http://[::ffff:127.0.0.1]/".to_owned(),
        format!("http://{other}/"),
    ];
    let mut html = String::from("<html><head>");
    for (i, t) in targets.iter().enumerate() {
        html.push_str(&format!(
            "<style>.bg{i} {{ background-image: url('{t}css{i}.png'); }}</style>"
        ));
    }
    html.push_str("</head><body><h1>Reaching out</h1>");
    for (i, t) in targets.iter().enumerate() {
        html.push_str(&format!(
            "<img src='{t}img{i}.png'><div class='bg{i}'>x</div><iframe src='{t}frame{i}'></iframe>"
        ));
    }
    html.push_str("<img src='/redirect'><script>");
    for (i, t) in targets.iter().enumerate() {
        let ws = t.replacen("http://", "ws://", 1);
        html.push_str(&format!(
            "fetch('{t}fetch{i}').catch(() => {{}}); try {{ new WebSocket('{ws}ws{i}'); }} catch (e) {{}}\n"
        ));
    }
    html.push_str("</script></body></html>");
    let site = Site::start(vec![
        ("/", Page::html(&html)),
        ("/redirect", Page::redirect("http://127.0.0.1/redirected.png")),
    ])
    .await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);

    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}");
    // The worker closed the page before it reported: whatever the page
    // (iframes, sockets) sent a listener's way is counted once the
    // tripwire's own connections behind it are.
    tripwire.drain().await;
    assert_eq!(tripwire.hits(), 0, "a private address was reached");
    assert_eq!(site.hits("/redirect"), 1, "the redirect itself was served");

    let manifest = app.manifest(&id, 1).await;
    let blocked = manifest["blockedRequests"].as_array().unwrap();
    let listed = |needle: &str| blocked.iter().any(|b| b["url"].as_str().unwrap().contains(needle));
    for needle in ["img0.png", "/redirected.png", "fetch0", "[::1]", "localhost"] {
        assert!(listed(needle), "{needle} not in blockedRequests: {blocked:?}");
    }
    assert!(
        blocked
            .iter()
            .all(|b| b["reason"].as_str().unwrap().contains("non-public")),
        "{blocked:?}"
    );
    // Blocked frames are left empty: none of Chromium's error pages is
    // captured as the page's content.
    let nodes = manifest["dom"]["nodes"].as_array().unwrap();
    let texts: Vec<&str> = nodes.iter().filter_map(|n| n["value"].as_str()).collect();
    assert!(
        texts.iter().any(|t| t.contains("Reaching out")),
        "the page itself was captured"
    );
    let frame_texts: Vec<&str> = nodes
        .iter()
        .filter(|n| n["document"].as_u64().is_some_and(|d| d > 0))
        .filter_map(|n| n["value"].as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    assert!(
        nodes.iter().any(|n| n["document"].as_u64().is_some_and(|d| d > 0)),
        "the frames' documents are in the manifest"
    );
    assert_eq!(frame_texts, Vec::<&str>::new(), "a blocked frame holds no text");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_private_source_the_worker_may_not_reach_fails_before_navigation(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![("/", Page::html("<p>private</p>"))]).await;
    // The service accepts the private URL (development setting), but the
    // worker's egress rules do not let it through.
    let worker = WorkerProcess::start(&app, &[], &[]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "failed");
    assert_eq!(import["errorMessage"], "The source address is not publicly reachable");
    assert_eq!(site.hits("/"), 0, "the browser never went there");
    assert_eq!(app.failure(&id, 1).await.cause(), ("blocked_address", false));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_same_message_delivered_twice_completes_once_and_is_answered_as_a_replay(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![("/", Page::html("<h1>Twice</h1>"))]).await;
    // Hold the message before the worker runs, to send it again afterwards.
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let message = app.receive(&app.page_import_queue_url, 1).await.remove(0);
    let send = |body: Value| {
        let app = &app;
        async move { app.send_to_worker(&body).await }
    };
    // A message that is no job of any version is logged and deleted.
    send(json!({"hello": "worker"})).await;
    send(message.clone()).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed");
    let manifest_before = app.object(&format!("page-imports/{id}/1/capture.json")).await;
    assert_valid_manifest(&serde_json::from_slice(&manifest_before).unwrap());
    let lifecycle_before = app.lifecycle(&id).await;

    send(message).await;
    assert!(
        eventually(Duration::from_secs(30), || async {
            worker.log_count("callback answered") == 2
        })
        .await,
        "{}",
        worker.log_text()
    );
    assert_eq!(worker.log_count("attempt already captured; repeating its callback"), 1);
    assert_eq!(site.hits("/"), 1, "the page was captured once");
    assert_eq!(
        app.object(&format!("page-imports/{id}/1/capture.json")).await,
        manifest_before
    );
    assert_eq!(app.lifecycle(&id).await, lifecycle_before, "the replay changed nothing");
    assert!(
        worker.log_text().contains("Accepted(200)"),
        "the replayed callback was answered 200"
    );
    assert!(worker.log_text().contains("not a capture job of any version"));
    // Both deliveries and the stranger were deleted.
    let left = app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(2))
        .await;
    assert!(left.is_empty(), "{left:?}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_browser_killed_mid_capture_is_retried_as_the_next_attempt_and_the_worker_keeps_serving(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![
        ("/slow", Page::html("<img src='/slow.png'>")),
        (
            "/slow.png",
            Page::of("image/png", png()).delayed(Duration::from_secs(8)),
        ),
        ("/fast", Page::html("<h1>fast</h1>")),
    ])
    .await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_url(&tenant, &site.url("/slow"), None).await;
    assert!(
        eventually(Duration::from_secs(30), || async { site.hits("/slow.png") == 1 }).await,
        "the capture did not start"
    );
    let browser_pid = crate::helpers::capture::processes()
        .into_iter()
        .find(|p| p.1 == worker.pid() && p.3.contains("chromium"))
        .expect("chromium under the worker")
        .0;
    worker.signal(libc::SIGKILL, browser_pid);
    // Attempt 1 fails as retryable; the service starts attempt 2, which a
    // new browser captures.
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(
        (import["status"].as_str(), import["attempt"].as_i64()),
        (Some("completed"), Some(2)),
        "{import}"
    );
    assert_eq!(app.failure(&id, 1).await.cause(), ("browser_crashed", true));
    let history: Vec<(i32, String, Option<String>, Option<String>)> = sqlx::query_as(
        "select attempt, reason, outcome, error_message from page_import_attempt where page_import_id = $1 order by attempt",
    )
    .bind(&id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        history,
        [
            (
                1,
                "create".into(),
                Some("retryable_failure".into()),
                Some("The browser crashed during the capture".into())
            ),
            (2, "retryable".into(), Some("completed".into()), None),
        ]
    );

    let next = app.import_url(&tenant, &site.url("/fast"), None).await;
    assert_eq!(app.finished(&tenant, &next, &worker).await["status"], "completed");
    assert_eq!(worker.log_count("chromium started"), 2, "a new browser was started");
    // The dead browser's processes (the worker's own children, and the
    // orphans reparented to it as subreaper) were reaped, not left as
    // zombies. A live Chromium's own exiting helpers are its to reap.
    let worker_zombies = || {
        crate::helpers::capture::processes()
            .into_iter()
            .filter(|p| p.2 == 'Z' && p.1 == worker.pid())
            .collect::<Vec<_>>()
    };
    assert!(
        eventually(Duration::from_secs(5), || async { worker_zombies().is_empty() }).await,
        "zombies under the worker: {:?}",
        worker_zombies()
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn sigterm_lets_the_capture_in_flight_finish_and_leaves_no_browser_process(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![
        ("/", Page::html("<img src='/slow.png'><h1>slow</h1>")),
        (
            "/slow.png",
            Page::of("image/png", png()).delayed(Duration::from_secs(2)),
        ),
    ])
    .await;
    let mut worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    assert!(eventually(Duration::from_secs(30), || async { site.hits("/slow.png") == 1 }).await);
    let browser_processes = worker.descendants();
    assert!(!browser_processes.is_empty());

    worker.signal(libc::SIGTERM, worker.pid());
    assert_eq!(
        worker.exited(Duration::from_secs(40)).await,
        Some(0),
        "{}",
        worker.log_text()
    );
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "the capture in flight finished");
    let left: Vec<i32> = browser_processes.into_iter().filter(|pid| alive(*pid)).collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// A receive under way at a SIGTERM goes on at SQS: were it dropped, the
/// next message to become visible would go to nobody and stay hidden for
/// the visibility timeout. The worker lets it run out and hands back what
/// it brings at once.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_message_arriving_while_the_worker_stops_is_handed_back_at_once(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let mut worker = WorkerProcess::start(&app, &[], &[("WORKER_RECEIVE_WAIT_SECS", "20")]);
    // Its first receive is under way (it starts as the worker does).
    tokio::time::sleep(Duration::from_millis(500)).await;
    worker.signal(libc::SIGTERM, worker.pid());
    assert!(
        eventually(Duration::from_secs(10), || async {
            worker.log_text().contains("stopped receiving")
        })
        .await,
        "{}",
        worker.log_text()
    );
    let body = json!({"schemaVersion": 1, "sent": "while stopping"});
    app.send_to_worker(&body).await;
    assert_eq!(
        worker.exited(Duration::from_secs(40)).await,
        Some(0),
        "{}",
        worker.log_text()
    );
    assert_eq!(
        worker.log_count("a message received while stopping; handed back at once"),
        1,
        "{}",
        worker.log_text()
    );
    let visible = app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(5))
        .await;
    assert_eq!(
        visible,
        vec![body],
        "visible again at once, not after the visibility timeout"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_worker_never_touches_the_database(pool: PgPool) {
    // Its code: nothing in its dependency closure speaks PostgreSQL.
    let lock = std::fs::read_to_string(repo_path("Cargo.lock")).unwrap();
    let closure = dependency_closure(&lock, "capture-worker");
    assert!(
        closure.contains("page-import-contract"),
        "the closure was read: {closure:?}"
    );
    for forbidden in ["sqlx", "sqlx-postgres", "tokio-postgres", "postgres"] {
        assert!(!closure.contains(forbidden), "capture-worker depends on {forbidden}");
    }

    // Its environment: handed a DATABASE_URL, it still never connects.
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![("/", Page::html("<h1>db?</h1>"))]).await;
    let database = Tripwire::bind(&["127.0.0.1:0".parse().unwrap()]).await;
    let url = format!("postgres://postgres@{}/page_import", database.addrs[0]);
    let worker = WorkerProcess::start(&app, &[site.addr], &[("DATABASE_URL", &url)]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    assert_eq!(app.finished(&tenant, &id, &worker).await["status"], "completed");
    assert_eq!(database.hits(), 0);
}

/// Package names reachable from `root` through Cargo.lock's dependency lists.
fn dependency_closure(lock: &str, root: &str) -> std::collections::HashSet<String> {
    let mut deps: std::collections::HashMap<String, Vec<String>> = Default::default();
    for package in lock.split("[[package]]").skip(1) {
        let name = package
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .unwrap()
            .trim_matches('"')
            .to_owned();
        let list: Vec<String> = package
            .split("dependencies = [")
            .nth(1)
            .map(|rest| {
                rest.split(']')
                    .next()
                    .unwrap()
                    .lines()
                    .filter_map(|l| {
                        l.trim()
                            .trim_end_matches(',')
                            .trim_matches('"')
                            .split(' ')
                            .next()
                            .map(str::to_owned)
                    })
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        deps.entry(name).or_default().extend(list);
    }
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![root.to_owned()];
    while let Some(name) = stack.pop() {
        if seen.insert(name.clone()) {
            stack.extend(deps.get(&name).cloned().unwrap_or_default());
        }
    }
    seen
}
