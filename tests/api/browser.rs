//! The frontend path in a real browser (SPEC §6 CORS and `/events`): headless
//! Chromium loads the frontend guide's example page (`dev/frontend/follow-import.html`, docs/architecture.md)
//! from one loopback origin; a person's submit of its form creates an import
//! on the service (another origin) with `fetch` and follows `/events`,
//! writing each status into its DOM, which the test reads over the DevTools
//! protocol. The form's device, language, zone and scheme (SPEC §14) default
//! to the person's browser's.

use std::time::Duration;

use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, BROWSER};
use crate::helpers::chromium::Browser;
use crate::helpers::worker::{manifest, Job};
use crate::helpers::*;

/// The statuses the example page wrote, in order.
pub(crate) async fn statuses(browser: &mut Browser) -> Vec<String> {
    let value = browser
        .eval("Array.from(document.querySelectorAll('#statuses li')).map(li => li.textContent)")
        .await;
    serde_json::from_value(value).unwrap()
}

pub(crate) fn page_url(site: &Site, app: &TestApp, tenant: &Tenant) -> String {
    let api = format!("http://{}", app.addr);
    format!(
        "{}#api={api}&token={}&org={}&project={}&url=https://example.com/pricing",
        site.url("/"),
        tenant.token,
        tenant.organization_id,
        tenant.project_id
    )
}

/// Waits for the example page's form and submits it as it is filled.
pub(crate) async fn submit(browser: &mut Browser) {
    browser
        .until("document.body.dataset.ready === 'yes'", Duration::from_secs(20))
        .await;
    browser.eval("document.getElementById('import').requestSubmit()").await;
}

pub(crate) async fn example_site() -> Site {
    let html = std::fs::read_to_string(repo_path("dev/frontend/follow-import.html")).unwrap();
    Site::start(vec![("/", Page::html(&html))]).await
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_browser_on_an_allowed_origin_creates_an_import_and_follows_it_to_completed(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = example_site().await;
    let origin = format!("http://{}", site.addr.ip());
    // One capture slot, taken: the page's import waits for it first.
    let env = vec![
        ("CORS_ALLOWED_ORIGINS", origin),
        ("CAPTURE_MAX_IN_FLIGHT", "1".to_owned()),
    ];
    let app = TestApp::spawn_with_env(pool, env).await;
    let tenant = app.tenant().await;
    let holder = app.job(&tenant).await;
    let mut browser = Browser::open(&page_url(&site, &app, &tenant)).await;
    submit(&mut browser).await;

    let id = browser
        .until(
            "document.body.dataset.importId || document.body.dataset.state",
            Duration::from_secs(20),
        )
        .await;
    assert!(
        id.as_str().is_some_and(|s| s.len() == 36),
        "the page created nothing: {id}, {}",
        browser.eval("document.getElementById('error').textContent").await
    );
    let id = id.as_str().unwrap().to_owned();
    browser
        .until(
            "document.querySelectorAll('#statuses li').length >= 1",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(statuses(&mut browser).await, ["waiting for a capture slot"]);

    // The slot frees; the page hears that its import was dispatched.
    assert_eq!(app.callback(&app.failed_body(&holder, "done")).await.status(), 200);
    browser
        .until(
            "document.querySelectorAll('#statuses li').length >= 2",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(
        statuses(&mut browser).await,
        ["waiting for a capture slot", "processing"]
    );

    // The worker's signed callback completes it; the page hears of it.
    let job = Job {
        nonce: app.nonce_of(&id).await,
        id: id.clone(),
        attempt: 1,
    };
    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    browser
        .until("document.body.dataset.state === 'ended'", Duration::from_secs(10))
        .await;
    assert_eq!(
        statuses(&mut browser).await,
        ["waiting for a capture slot", "processing", "completed"]
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_browser_on_another_origin_is_refused_and_creates_nothing(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let allowed = example_site().await;
    let other = example_site().await;
    let app = TestApp::spawn_with_env(
        pool,
        vec![("CORS_ALLOWED_ORIGINS", format!("http://{}", allowed.addr.ip()))],
    )
    .await;
    let tenant = app.tenant().await;
    let mut browser = Browser::open(&page_url(&other, &app, &tenant)).await;
    submit(&mut browser).await;
    browser
        .until("document.body.dataset.state === 'error'", Duration::from_secs(20))
        .await;
    let error = browser.eval("document.getElementById('error').textContent").await;
    assert!(error.as_str().unwrap().contains("Failed to fetch"), "{error}");
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import where project_id = $1")
        .bind(tenant.project_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0, "the preflight was refused, so the POST was never sent");
}

/// A person in Tokyo whose browser is in Japanese and dark picks the phone:
/// the import is a phone's, in their language, zone and scheme, without
/// their typing any of it.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_form_defaults_to_the_persons_language_zone_and_scheme_and_sends_the_device_picked(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = example_site().await;
    let origin = format!("http://{}", site.addr.ip());
    let app = TestApp::spawn_with_env(pool, vec![("CORS_ALLOWED_ORIGINS", origin)]).await;
    let tenant = app.tenant().await;
    let mut browser = Browser::open(&page_url(&site, &app, &tenant)).await;
    // The person's browser: Japanese, in Tokyo, dark.
    let user_agent = browser.eval("navigator.userAgent").await;
    browser
        .call(
            "Emulation.setUserAgentOverride",
            serde_json::json!({"userAgent": user_agent, "acceptLanguage": "ja-JP,ja"}),
        )
        .await;
    browser
        .call(
            "Emulation.setTimezoneOverride",
            serde_json::json!({"timezoneId": "Asia/Tokyo"}),
        )
        .await;
    browser
        .call(
            "Emulation.setEmulatedMedia",
            serde_json::json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
        )
        .await;
    browser.call("Page.reload", serde_json::json!({})).await;
    browser
        .until("document.body.dataset.ready === 'yes'", Duration::from_secs(20))
        .await;
    let form = |field: &str| format!("document.getElementById('import').{field}.value");
    assert_eq!(browser.eval(&form("locale")).await, "ja-JP");
    assert_eq!(browser.eval(&form("timeZone")).await, "Asia/Tokyo");
    assert_eq!(browser.eval(&form("colorScheme")).await, "dark");
    assert_eq!(browser.eval(&form("device")).await, "desktop");

    browser
        .eval("const f = document.getElementById('import'); f.device.value = 'phone'; f.requestSubmit()")
        .await;
    let id = browser
        .until(
            "document.body.dataset.importId || document.body.dataset.state",
            Duration::from_secs(20),
        )
        .await;
    let id = id.as_str().unwrap_or_default().to_owned();
    assert_eq!(
        id.len(),
        36,
        "{}",
        browser.eval("document.getElementById('error').textContent").await
    );
    let import: serde_json::Value = app
        .get(&format!("/page-imports/{id}"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        import["viewport"],
        serde_json::json!({"width": 390, "height": 844, "deviceScaleFactor": 3.0, "mobile": true})
    );
    assert_eq!(
        (
            &import["locale"],
            &import["timeZone"],
            &import["colorScheme"],
            &import["consent"]
        ),
        (
            &serde_json::json!("ja-JP"),
            &serde_json::json!("Asia/Tokyo"),
            &serde_json::json!("dark"),
            &serde_json::json!("decline")
        )
    );
}
