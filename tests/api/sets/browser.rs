//! The frontend example's "Breakpoints" choice in a real browser (SPEC
//! §15): one submit posts one import set and follows it on the set's
//! `/events` to its end.

use std::time::Duration;

use sqlx::PgPool;

use super::*;
use crate::browser::{example_site, page_url, statuses, submit};
use crate::helpers::capture::BROWSER;
use crate::helpers::chromium::Browser;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn breakpoints_post_one_set_and_follow_it_to_completed(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = example_site().await;
    let origin = format!("http://{}", site.addr.ip());
    let app = TestApp::spawn_with_env(pool, vec![("CORS_ALLOWED_ORIGINS", origin)]).await;
    let tenant = app.tenant().await;
    let mut browser = Browser::open(&page_url(&site, &app, &tenant)).await;
    browser
        .until("document.body.dataset.ready === 'yes'", Duration::from_secs(20))
        .await;
    browser
        .eval("document.getElementById('device').value = 'breakpoints'")
        .await;
    submit(&mut browser).await;
    let id = browser
        .until(
            "document.body.dataset.importId || document.body.dataset.state",
            Duration::from_secs(20),
        )
        .await;
    let id = id.as_str().unwrap().to_owned();
    assert_eq!(
        id.len(),
        36,
        "{id}: {}",
        browser.eval("document.getElementById('error').textContent").await
    );

    let set: Value = app
        .get(&format!("/page-import-sets/{id}"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    let widths: Vec<i64> = set["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["viewport"]["width"].as_i64().unwrap())
        .collect();
    assert_eq!(widths, [1440, 820, 390], "desktop, tablet and phone, in one set");
    let message = app.messages_within(1, Duration::from_secs(10)).await;
    assert_eq!(message[0]["setId"], id.as_str());
    for job in jobs_of_set(&message[0]) {
        app.complete_job(&job).await;
    }
    browser
        .until("document.body.dataset.state === 'ended'", Duration::from_secs(10))
        .await;
    let seen = statuses(&mut browser).await;
    assert_eq!(seen.last().map(String::as_str), Some("completed"), "{seen:?}");
    assert!(
        seen.iter()
            .all(|s| ["waiting for a capture slot", "processing", "completed"].contains(&s.as_str())),
        "{seen:?}"
    );
}
