//! `GET /page-imports`: keyset pagination, status filter, tenancy.

use std::collections::HashSet;

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::*;

/// Inserts `n` rows directly (the API path is covered elsewhere), spread over
/// a few timestamps so pagination must break ties on id.
async fn seed(app: &TestApp, tenant: &Tenant, n: i64, status: &str) {
    sqlx::query(
        "insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height,
                                  nonce, status, created_at, created_by, updated_by)
         select gen_random_uuid()::text, $1, $2, 'https://example.com/' || g, 1440, 900, 'n' || g,
                $4::page_import_status, now() - (g % 7) * interval '1 second', $3, $3
         from generate_series(1, $5) g",
    )
    .bind(tenant.organization_id)
    .bind(tenant.project_id)
    .bind(&tenant.subject)
    .bind(status)
    .bind(n)
    .execute(&app.pool)
    .await
    .unwrap();
}

async fn collect_pages(app: &TestApp, tenant: &Tenant, extra: &str) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut path = format!(
            "/page-imports?organizationId={}&projectId={}&limit=17{extra}",
            tenant.organization_id, tenant.project_id
        );
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let response = app.get(&path, &tenant.token).await;
        assert_eq!(response.status(), 200);
        let page: Value = response.json().await.unwrap();
        pages += 1;
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (items, pages),
        }
        assert!(pages < 100, "pagination does not terminate");
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn pagination_visits_every_row_once_newest_first(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    seed(&app, &tenant, 150, "0").await;
    seed(&app, &tenant, 30, "1").await;
    let other = app.tenant().await;
    seed(&app, &other, 20, "0").await;

    let (items, pages) = collect_pages(&app, &tenant, "").await;
    assert_eq!(items.len(), 180);
    assert_eq!(pages, 11);
    let ids: HashSet<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 180, "no row twice");
    let keys: Vec<(String, String)> = items
        .iter()
        .map(|i| {
            (
                i["createdAt"].as_str().unwrap().to_owned(),
                i["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(keys, sorted, "newest first, ties by id");
    assert!(items.iter().all(|i| i.get("nonce").is_none()));

    let (completed, _) = collect_pages(&app, &tenant, "&status=completed").await;
    assert_eq!(completed.len(), 30);
    assert!(completed.iter().all(|i| i["status"] == "completed"));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn default_limit_is_20_and_deleted_rows_vanish(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    seed(&app, &tenant, 25, "2").await;
    sqlx::query(
        "update page_import set deleted_at = now(), deleted_by = 'x' where id in (select id from page_import limit 4)",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let path = format!(
        "/page-imports?organizationId={}&projectId={}",
        tenant.organization_id, tenant.project_id
    );
    let page: Value = app.get(&path, &tenant.token).await.json().await.unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 20);
    let (all, _) = collect_pages(&app, &tenant, "").await;
    assert_eq!(all.len(), 21);
    let (failed, _) = collect_pages(&app, &tenant, "&status=failed").await;
    assert_eq!(failed.len(), 21);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn bad_list_parameters_are_422_and_missing_ones_400(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let base = format!(
        "/page-imports?organizationId={}&projectId={}",
        tenant.organization_id, tenant.project_id
    );
    for (query, field) in [
        ("&limit=0", "limit"),
        ("&limit=101", "limit"),
        ("&status=done", "status"),
        ("&status=0", "status"),
        ("&cursor=not-a-cursor", "cursor"),
    ] {
        let problem = expect_problem(
            app.get(&format!("{base}{query}"), &tenant.token).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(problem["errors"][0]["field"], field, "{query}");
    }
    for path in [
        format!("/page-imports?projectId={}", tenant.project_id),
        format!("/page-imports?organizationId={}", tenant.organization_id),
        format!("{base}&limit=ten"),
        "/page-imports?organizationId=x&projectId=1".to_owned(),
    ] {
        expect_problem(app.get(&path, &tenant.token).await, 400, "invalid_query").await;
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_project_the_caller_cannot_see_is_404_not_an_empty_list(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let alice = app.tenant().await;
    let bob = app.tenant().await;
    seed(&app, &alice, 3, "0").await;
    for path in [
        format!(
            "/page-imports?organizationId={}&projectId={}",
            alice.organization_id, alice.project_id
        ),
        format!(
            "/page-imports?organizationId={}&projectId={}",
            bob.organization_id, alice.project_id
        ),
        format!(
            "/page-imports?organizationId={}&projectId=999999",
            alice.organization_id
        ),
    ] {
        expect_problem(app.get(&path, &bob.token).await, 404, "not_found").await;
    }
    // Alice herself cannot pair her organization with a project outside it.
    let path = format!(
        "/page-imports?organizationId={}&projectId={}",
        alice.organization_id, bob.project_id
    );
    expect_problem(app.get(&path, &alice.token).await, 404, "not_found").await;
}
