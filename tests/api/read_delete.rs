//! `GET /page-imports/{id}` and `DELETE /page-imports/{id}`.

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::*;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn get_returns_the_resource_without_the_nonce(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let created = app.create_import(&tenant).await;
    let id = created["id"].as_str().unwrap();
    let response = app.get(&format!("/page-imports/{id}"), &tenant.token).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(
        !text.contains(&app.nonce_of(id).await),
        "the nonce must never be exposed"
    );
    let mut body: Value = serde_json::from_str(&text).unwrap();
    // The dispatcher may have sent the first attempt meanwhile (SPEC §12):
    // `dispatchedAt` is the one field that may have moved since the 202.
    let dispatched_at = body["dispatchedAt"].take();
    assert!(dispatched_at.is_null() || dispatched_at.is_string(), "{dispatched_at}");
    let mut created = created.clone();
    created["dispatchedAt"].take();
    assert_eq!(body, created);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn unknown_and_other_tenants_imports_are_404(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let alice = app.tenant().await;
    let bob = app.tenant().await;
    let created = app.create_import(&alice).await;
    let path = format!("/page-imports/{}", created["id"].as_str().unwrap());
    expect_problem(app.get(&path, &bob.token).await, 404, "not_found").await;
    expect_problem(
        app.get("/page-imports/0193ffff-0000-7000-8000-000000000000", &alice.token)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_problem(
        app.get(&format!("/page-imports/{}", "x".repeat(300)), &alice.token)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_problem(app.delete(&path, &bob.token).await, 404, "not_found").await;
    // Ids no row can have, e.g. with a NUL byte (which PostgreSQL refuses with
    // an error, not a miss), are 404 on every route that takes one.
    for bad in [format!("{path}%00"), format!("{path}%20x"), format!("{path}.json")] {
        expect_problem(app.get(&bad, &alice.token).await, 404, "not_found").await;
        expect_problem(app.delete(&bad, &alice.token).await, 404, "not_found").await;
        for artifact in ["capture", "screenshot"] {
            let response = app.get(&format!("{bad}/{artifact}"), &alice.token).await;
            expect_problem(response, 404, "not_found").await;
        }
    }
    // Bob's failed delete changed nothing.
    assert_eq!(app.get(&path, &alice.token).await.status(), 200);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn delete_is_soft_and_hides_the_import(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let created = app.create_import(&tenant).await;
    let id = created["id"].as_str().unwrap();
    let path = format!("/page-imports/{id}");
    let response = app.delete(&path, &tenant.token).await;
    assert_eq!(response.status(), 204);
    assert!(response.text().await.unwrap().is_empty());

    expect_problem(app.get(&path, &tenant.token).await, 404, "not_found").await;
    expect_problem(app.delete(&path, &tenant.token).await, 404, "not_found").await;
    let list: Value = app
        .get(
            &format!(
                "/page-imports?organizationId={}&projectId={}",
                tenant.organization_id, tenant.project_id
            ),
            &tenant.token,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 0);

    let (deleted, deleted_by, updated_by, status): (bool, Option<String>, String, String) = sqlx::query_as(
        "select deleted_at is not null, deleted_by, updated_by, status::text from page_import where id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(deleted, "the row stays, marked deleted");
    assert_eq!(deleted_by.as_deref(), Some(tenant.subject.as_str()));
    assert_eq!(updated_by, tenant.subject);
    assert_eq!(status, "0");
}
