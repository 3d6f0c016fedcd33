//! An import set captured by the real worker and Chromium (SPEC §15
//! "Capturing a set"): its members one after another in one browser
//! context, each with its own device, scheme and viewport, what the first
//! loaded in the HTTP cache for the next, one consent decision; each
//! member stored and called back on its own. And a message this worker
//! cannot read is never deleted: it reaches the dead-letter queue.
//!
//! The set's message is the one the service sends (`{"schemaVersion": 2,
//! "setId", "jobs": [<each member's capture message>]}`), built here from
//! the members' own first messages, taken off the queue before any worker
//! runs.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::manifest::{png_size, Manifest};
use crate::helpers::{Tenant, TestApp};

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
const CACHED: &str = "public, max-age=3600";
const DEVICE_WIDTH: &str = r#"<meta name="viewport" content="width=device-width, initial-scale=1">"#;

/// The breakpoints of SPEC §15's example: a desktop, a tablet and a phone
/// (the phone dark).
fn variants() -> Vec<Value> {
    vec![
        json!({"viewport": {"width": 1440, "height": 900, "deviceScaleFactor": 1, "mobile": false}}),
        json!({"viewport": {"width": 820, "height": 1180, "deviceScaleFactor": 2, "mobile": true}}),
        json!({"viewport": {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true}, "colorScheme": "dark"}),
    ]
}

/// What the page sees, reported to its own site's `/seen`.
const REPORT: &str = r#"<script>
(() => {
  const media = (q) => matchMedia(q).matches;
  const seen = {
    userAgent: navigator.userAgent,
    mobile: navigator.userAgentData ? navigator.userAgentData.mobile : null,
    touchPoints: navigator.maxTouchPoints,
    coarse: media("(pointer: coarse)"),
    dark: media("(prefers-color-scheme: dark)"),
    width: document.documentElement.clientWidth,
    devicePixelRatio: devicePixelRatio,
  };
  fetch("/seen?" + encodeURIComponent(JSON.stringify(seen)));
})();
</script>"#;

/// A page with a stylesheet, a web font and two images, each served with
/// `Cache-Control: max-age`.
fn cached_site_pages() -> Vec<(&'static str, Page)> {
    let html = format!(
        r#"<!doctype html><html><head><meta charset="utf-8">{DEVICE_WIDTH}<title>Breakpoints</title>
        <link rel="stylesheet" href="/style.css"></head>
        <body><h1 class="hero">One page, three layouts</h1>
        <img src="/a.svg" width="40" height="40" alt="a"><img src="/b.svg" width="40" height="40" alt="b">
        <p>Text in the web font.</p>{REPORT}</body></html>"#
    );
    let svg = |fill: &str| {
        format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="{fill}"/></svg>"#)
            .into_bytes()
    };
    vec![
        ("/", Page::html(&html)),
        (
            "/style.css",
            Page::of(
                "text/css",
                br#"@font-face { font-family: "Brand"; src: url("/brand.ttf") format("truetype"); }
                body { margin: 0; background: rgb(250, 240, 230); }
                @media (prefers-color-scheme: dark) { body { background: rgb(10, 10, 10); color: white; } }
                .hero { font-family: "Brand", sans-serif; font-size: 40px; }
                p { min-height: 1200px; }"#
                    .to_vec(),
            )
            .header("cache-control", CACHED),
        ),
        (
            "/brand.ttf",
            Page::of("font/ttf", std::fs::read(FONT).unwrap()).header("cache-control", CACHED),
        ),
        (
            "/a.svg",
            Page::of("image/svg+xml", svg("teal")).header("cache-control", CACHED),
        ),
        (
            "/b.svg",
            Page::of("image/svg+xml", svg("tomato")).header("cache-control", CACHED),
        ),
    ]
}

/// Creates one ordinary import per variant of `url` (`shared` settings
/// in each), takes their first messages off the queue before any worker
/// runs, and sends them back as one set's message. The members' ids, in
/// order.
async fn dispatch_as_a_set(app: &TestApp, tenant: &Tenant, url: &str, shared: Value) -> Vec<String> {
    let (ids, set) = set_of_variants(app, tenant, url, shared).await;
    send(app, &set).await;
    ids
}

async fn send(app: &TestApp, message: &Value) {
    app.send_to_worker(message).await;
}

/// The members' ids and the set's message, not sent yet.
async fn set_of_variants(app: &TestApp, tenant: &Tenant, url: &str, shared: Value) -> (Vec<String>, Value) {
    set_of(app, tenant, url, shared, variants()).await
}

/// [`set_of_variants`] of `variants`.
async fn set_of(
    app: &TestApp,
    tenant: &Tenant,
    url: &str,
    shared: Value,
    variants: Vec<Value>,
) -> (Vec<String>, Value) {
    let mut ids = Vec::new();
    for variant in variants {
        let mut settings = shared.clone();
        for (k, v) in variant.as_object().unwrap() {
            settings[k] = v.clone();
        }
        ids.push(app.import_with(tenant, url, settings).await);
    }
    let messages = app.receive(&app.page_import_queue_url, ids.len()).await;
    assert_eq!(messages.len(), ids.len(), "each member's first message");
    let jobs: Vec<Value> = ids
        .iter()
        .map(|id| {
            messages
                .iter()
                .find(|m| m["pageImportId"] == id.as_str())
                .unwrap_or_else(|| panic!("no message for {id}"))
                .clone()
        })
        .collect();
    let set = json!({"schemaVersion": 2, "setId": uuid::Uuid::now_v7().to_string(), "jobs": jobs});
    (ids, set)
}

/// Waits for every member and returns its manifest.
async fn completed(app: &TestApp, tenant: &Tenant, ids: &[String], worker: &WorkerProcess) -> Vec<Manifest> {
    let mut manifests = Vec::new();
    for id in ids {
        let import = app.finished(tenant, id, worker).await;
        assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
        manifests.push(app.manifest(id, 1).await);
    }
    manifests
}

/// What the page reported, member by member (the members are captured one
/// after another).
fn seen(site: &Site) -> Vec<Value> {
    site.requests("/seen")
        .iter()
        .map(|request| {
            let (json, _) = url::form_urlencoded::parse(request.query.as_bytes()).next().unwrap();
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
        })
        .collect()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_set_is_captured_in_one_context_each_member_as_its_device_with_the_cache_shared(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(cached_site_pages()).await;
    let ids = dispatch_as_a_set(&app, &tenant, &site.url("/"), json!({})).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let manifests = completed(&app, &tenant, &ids, &worker).await;

    // Each member as its own device and scheme.
    let seen = seen(&site);
    assert_eq!(seen.len(), 3, "{seen:?}");
    let expected = [
        (1440, 1.0, false, false),
        (820, 2.0, true, false),
        (390, 3.0, true, true),
    ];
    for (i, ((width, scale, mobile, dark), (seen, manifest))) in
        expected.iter().zip(seen.iter().zip(&manifests)).enumerate()
    {
        assert_eq!(
            (
                &seen["width"],
                seen["devicePixelRatio"].as_f64(),
                &seen["mobile"],
                &seen["coarse"],
                &seen["dark"]
            ),
            (
                &json!(width),
                Some(*scale),
                &json!(mobile),
                &json!(mobile),
                &json!(dark)
            ),
            "member {i}: {seen}"
        );
        let user_agent = seen["userAgent"].as_str().unwrap();
        assert_eq!(user_agent.contains("Mobile"), *mobile, "member {i}: {user_agent}");
        assert_eq!(manifest["emulation"]["userAgent"], user_agent, "member {i}");
        assert_eq!(manifest["emulation"]["mobile"], *mobile, "member {i}");
        assert_eq!(
            manifest["emulation"]["colorScheme"],
            if *dark { "dark" } else { "light" }
        );
        assert_eq!(manifest["viewport"]["width"], *width, "member {i}");
        assert_eq!(manifest["pageImportId"], ids[i].as_str());
        assert_eq!(manifest["nonce"], app.nonce_of(&ids[i]).await.as_str());

        // Its own screenshot, as wide as its device, under its own prefix.
        let key = format!("page-imports/{}/1/screenshot.png", ids[i]);
        assert_eq!(manifest["screenshot"]["key"], key.as_str());
        let (pixel_width, pixel_height) = png_size(&app.object(&key).await);
        assert_eq!(pixel_width, (*width as f64 * scale) as u32, "member {i}");
        let content_height = manifest["page"]["contentHeight"].as_u64().unwrap();
        assert_eq!(
            pixel_height as u64,
            (content_height as f64 * scale) as u64,
            "member {i}"
        );

        // Every member's manifest has the page's assets, from the cache too.
        for path in ["/style.css", "/brand.ttf", "/a.svg", "/b.svg"] {
            assert!(
                !manifest.assets_from(&site.url(path)).is_empty(),
                "member {i}: {path} missing from {:?}",
                manifest.assets()
            );
        }
    }
    // One browser context: each sub-resource was fetched once for the set.
    for path in ["/style.css", "/brand.ttf", "/a.svg", "/b.svg"] {
        assert_eq!(site.hits(path), 1, "{path}\n{}", worker.log_text());
    }
    assert_eq!(worker.log_count("callback answered"), 3);
    assert_eq!(worker.log_count("set ended"), 1);
    // The set's message was deleted once every member was called back.
    let left = app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(2))
        .await;
    assert!(left.is_empty(), "{left:?}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_sets_consent_banner_is_declined_once_and_the_later_members_say_they_used_that_decision(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(crate::consent::vanilla_cookieconsent("bar", "bottom", false, true)).await;
    let ids = dispatch_as_a_set(&app, &tenant, &site.url("/"), json!({})).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let manifests = completed(&app, &tenant, &ids, &worker).await;

    let first = &manifests[0]["consent"];
    assert_eq!(first["outcome"], "declined", "{first}\n{}", worker.log_text());
    assert!(first["cmp"].as_str().is_some_and(|c| !c.is_empty()), "{first}");
    assert!(first.get("from").is_none(), "{first}");
    for (i, manifest) in manifests.iter().enumerate().skip(1) {
        let consent = &manifest["consent"];
        assert_eq!(
            (&consent["outcome"], &consent["from"]),
            (&json!("none"), &json!(ids[0])),
            "member {i}: {consent}"
        );
    }
    assert_eq!(
        site.hits("/tracker.js"),
        0,
        "the consent-gated tracker was never fetched"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_message_of_a_schema_version_the_worker_does_not_know_is_never_deleted_and_reaches_the_dead_letter_queue(
    pool: PgPool,
) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let dead_letters = app
        .sqs
        .create_queue()
        .queue_name(format!("dead-letters-{}", uuid::Uuid::new_v4().simple()))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let dead_letters_arn = app
        .sqs
        .get_queue_attributes()
        .queue_url(&dead_letters)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    let redrive = json!({"deadLetterTargetArn": dead_letters_arn, "maxReceiveCount": 2});
    app.sqs
        .set_queue_attributes()
        .queue_url(&app.page_import_queue_url)
        .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
        .send()
        .await
        .unwrap();
    let newer = json!({"schemaVersion": 99, "pageImportId": "from-a-newer-service", "nonce": "n0nce-s3cret"});
    app.send_to_worker(&newer).await;

    let worker = WorkerProcess::start(&app, &[], &[]);
    let arrived = app.receive_within(&dead_letters, 1, Duration::from_secs(60)).await;
    assert_eq!(arrived, vec![newer], "{}", worker.log_text());
    let log = worker.log_text();
    assert!(
        worker.log_count("a message this worker cannot read; left to SQS's redrive, not deleted") >= 2,
        "received twice, then redriven: {log}"
    );
    assert!(
        log.contains("schema_version=99") || log.contains(r#""schema_version":99"#),
        "{log}"
    );
    assert!(!log.contains("n0nce-s3cret"), "the message's content is not logged");
    assert!(!log.contains("deleting"), "{log}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_worker_stopped_mid_set_finishes_its_member_and_hands_the_rest_back_for_the_next_worker(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    // Each member waits 3 s for its image (never cached): time to stop the
    // worker while the first is under way.
    let site = Site::start(vec![
        (
            "/",
            Page::html(r#"<!doctype html><h1>Slow</h1><img src="/slow.svg" width="10" height="10">"#),
        ),
        (
            "/slow.svg",
            Page::of(
                "image/svg+xml",
                br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.to_vec(),
            )
            .delayed(Duration::from_secs(3)),
        ),
    ])
    .await;
    let (ids, set) = set_of_variants(&app, &tenant, &site.url("/"), json!({})).await;
    send(&app, &set).await;
    let mut worker = WorkerProcess::start(&app, &[site.addr], &[]);
    assert!(
        crate::helpers::eventually(Duration::from_secs(30), || async { site.hits("/slow.svg") == 1 }).await,
        "the first member did not start\n{}",
        worker.log_text()
    );
    worker.signal(libc::SIGTERM, worker.pid());
    assert_eq!(
        worker.exited(Duration::from_secs(40)).await,
        Some(0),
        "{}",
        worker.log_text()
    );
    let first = app.finished(&tenant, &ids[0], &worker).await;
    assert_eq!(first["status"], "completed", "the member under way finished");
    for id in &ids[1..] {
        let member: Value = app
            .get(&format!("/page-imports/{id}"), &tenant.token)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(member["status"], "processing", "{member}");
    }
    assert_eq!(site.hits("/slow.svg"), 1, "no other member was started");
    // The set's message was handed back at once, whole.
    let handed_back = app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(5))
        .await;
    assert_eq!(handed_back, vec![set.clone()], "{}", worker.log_text());

    // The next worker repeats the first member's callback and captures the rest.
    send(&app, &set).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    completed(&app, &tenant, &ids, &worker).await;
    assert_eq!(worker.log_count("attempt already captured; repeating its callback"), 1);
    assert_eq!(worker.log_count("callback answered"), 3);
}

/// Through the service (SPEC §15): `POST /page-import-sets`, its one
/// message, the real worker; the set completes with each member its own
/// device, the cache shared, and each member called back on its own.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_set_posted_to_the_service_is_captured_by_the_worker_as_one(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(cached_site_pages()).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let body = json!({
        "organizationId": tenant.organization_id,
        "projectId": tenant.project_id,
        "sourceUrl": site.url("/"),
        "variants": variants(),
    });
    let response = app.post_json("/page-import-sets", &tenant.token, &body).await;
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    let set: Value = response.json().await.unwrap();
    let ids: Vec<String> = set["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3, "{set}");
    let manifests = completed(&app, &tenant, &ids, &worker).await;
    for (manifest, (width, mobile)) in manifests.iter().zip([(1440, false), (820, true), (390, true)]) {
        assert_eq!(
            (&manifest["viewport"]["width"], &manifest["emulation"]["mobile"]),
            (&json!(width), &json!(mobile))
        );
    }
    for path in ["/style.css", "/brand.ttf", "/a.svg", "/b.svg"] {
        assert_eq!(site.hits(path), 1, "{path}\n{}", worker.log_text());
    }
    assert_eq!(worker.log_count("set ended"), 1, "one message for the set");
    let read: Value = app
        .get(
            &format!("/page-import-sets/{}", set["id"].as_str().unwrap()),
            &tenant.token,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(read["status"], "completed", "{read}");
}

/// A browser that dies under the second member (decision 0048): that
/// member fails as `browser_crashed`, retryable, and its next attempt goes
/// alone; the set's message is handed back, and its next delivery repeats
/// the first member's callback and captures the third in a new browser.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_browser_that_dies_mid_set_fails_its_member_alone_and_the_rest_are_captured_on_redelivery(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![
        (
            "/",
            Page::html(r#"<!doctype html><h1>Slow</h1><img src="/slow.svg" width="10" height="10">"#),
        ),
        (
            "/slow.svg",
            Page::of(
                "image/svg+xml",
                br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.to_vec(),
            )
            .delayed(Duration::from_secs(4)),
        ),
    ])
    .await;
    let (ids, set) = set_of_variants(&app, &tenant, &site.url("/"), json!({})).await;
    send(&app, &set).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    assert!(
        crate::helpers::eventually(Duration::from_secs(60), || async { site.hits("/slow.svg") == 2 }).await,
        "the second member did not start\n{}",
        worker.log_text()
    );
    let browser_pid = crate::helpers::capture::processes()
        .into_iter()
        .find(|p| p.1 == worker.pid() && p.3.contains("chromium"))
        .expect("chromium under the worker")
        .0;
    worker.signal(libc::SIGKILL, browser_pid);

    let first = app.finished(&tenant, &ids[0], &worker).await;
    assert_eq!(
        (first["status"].as_str(), first["attempt"].as_i64()),
        (Some("completed"), Some(1))
    );
    let second = app.finished(&tenant, &ids[1], &worker).await;
    assert_eq!(
        (second["status"].as_str(), second["attempt"].as_i64()),
        (Some("completed"), Some(2)),
        "{second}"
    );
    assert_eq!(app.failure(&ids[1], 1).await.cause(), ("browser_crashed", true));
    let third = app.finished(&tenant, &ids[2], &worker).await;
    assert_eq!(
        (third["status"].as_str(), third["attempt"].as_i64()),
        (Some("completed"), Some(1)),
        "the third member was captured by the set's next delivery\n{}",
        worker.log_text()
    );
    assert_eq!(
        worker.log_count("the browser crashed: the set's other members are handed back"),
        1
    );
    assert_eq!(worker.log_count("set ended"), 2, "{}", worker.log_text());
}

/// Members share a tab, navigated again (decision 0048): a desktop after a
/// phone is a desktop again (no touch, a fine pointer, Chrome on Linux).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_desktop_after_a_phone_in_the_same_set_is_a_desktop_again(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(cached_site_pages()).await;
    let phone_then_desktop = vec![variants()[2].clone(), variants()[0].clone()];
    let (ids, set) = set_of(&app, &tenant, &site.url("/"), json!({}), phone_then_desktop).await;
    send(&app, &set).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let manifests = completed(&app, &tenant, &ids, &worker).await;
    let seen = seen(&site);
    assert_eq!(seen.len(), 2, "{seen:?}");
    let (phone, desktop) = (&seen[0], &seen[1]);
    assert_eq!(
        (&phone["mobile"], &phone["coarse"], &phone["dark"], &phone["width"]),
        (&json!(true), &json!(true), &json!(true), &json!(390)),
        "{phone}"
    );
    assert_eq!(
        (
            &desktop["mobile"],
            &desktop["touchPoints"],
            &desktop["coarse"],
            &desktop["dark"],
            &desktop["width"]
        ),
        (&json!(false), &json!(0), &json!(false), &json!(false), &json!(1440)),
        "{desktop}"
    );
    assert!(!desktop["userAgent"].as_str().unwrap().contains("Mobile"), "{desktop}");
    assert_eq!(manifests[1]["emulation"]["userAgent"], desktop["userAgent"]);
    let (width, _) = png_size(&app.object(&format!("page-imports/{}/1/screenshot.png", ids[1])).await);
    assert_eq!(width, 1440);
}
