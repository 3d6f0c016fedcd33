//! Tenancy (SPEC §6, §8): another organization's resources read exactly like
//! missing ones through every user route, and nothing of them changes.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::worker::manifest;
use crate::helpers::*;

async fn row_snapshot(app: &TestApp, table: &str, id: &str) -> String {
    sqlx::query_scalar(&format!("select row_to_json(t)::text from {table} t where id = $1"))
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn another_tenants_resources_are_404_through_every_user_route(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let owner = app.tenant().await;
    let stranger = app.tenant().await;

    // The owner's completed import, a failed one, and a Code2Des job.
    let done = app.job(&owner).await;
    let body = app.upload_capture(&done, manifest(&done)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    let failed = app.job(&owner).await;
    let failure = app.failed_body(&failed, "net::ERR_NAME_NOT_RESOLVED");
    assert_eq!(app.callback(&failure).await.status(), 200);
    let trigger =
        json!({"organizationId": owner.organization_id, "projectId": owner.project_id, "pageImportId": done.id});
    let job: Value = app
        .post_json("/code2des", &owner.token, &trigger)
        .await
        .json()
        .await
        .unwrap();
    let code2des_id = job["id"].as_str().unwrap().to_owned();
    let before = (
        row_snapshot(&app, "page_import", &done.id).await,
        row_snapshot(&app, "page_import", &failed.id).await,
        row_snapshot(&app, "code2des", &code2des_id).await,
    );

    let token = &stranger.token;
    for path in [
        format!("/page-imports/{}", done.id),
        format!("/page-imports/{}/events", done.id),
        format!("/page-imports/{}/attempts", done.id),
        format!("/page-imports/{}/capture", done.id),
        format!("/page-imports/{}/screenshot", done.id),
        format!("/code2des/{code2des_id}"),
        format!(
            "/page-imports?organizationId={}&projectId={}",
            owner.organization_id, owner.project_id
        ),
    ] {
        expect_problem(app.get(&path, token).await, 404, "not_found").await;
    }
    let retry = app
        .post_json(&format!("/page-imports/{}/retry", failed.id), token, &json!({}))
        .await;
    expect_problem(retry, 404, "not_found").await;
    expect_problem(
        app.delete(&format!("/page-imports/{}", done.id), token).await,
        404,
        "not_found",
    )
    .await;
    // Starting a job from the owner's import, naming the owner's project, or
    // the stranger's own project with the owner's import.
    for (organization_id, project_id) in [
        (owner.organization_id, owner.project_id),
        (stranger.organization_id, stranger.project_id),
    ] {
        let body = json!({"organizationId": organization_id, "projectId": project_id, "pageImportId": done.id});
        expect_problem(app.post_json("/code2des", token, &body).await, 404, "not_found").await;
    }
    // Creating an import in the owner's project.
    expect_problem(
        app.post_json("/page-imports", token, &import_body(&owner)).await,
        404,
        "not_found",
    )
    .await;

    let after = (
        row_snapshot(&app, "page_import", &done.id).await,
        row_snapshot(&app, "page_import", &failed.id).await,
        row_snapshot(&app, "code2des", &code2des_id).await,
    );
    assert_eq!(before, after, "nothing of the owner's changed");
    let jobs: i64 = sqlx::query_scalar("select count(*) from code2des")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 1);
    let imports: i64 = sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(imports, 2);

    // The owner still sees everything.
    for path in [
        format!("/page-imports/{}", done.id),
        format!("/page-imports/{}/attempts", done.id),
        format!("/code2des/{code2des_id}"),
    ] {
        assert_eq!(app.get(&path, &owner.token).await.status(), 200, "{path}");
    }
}
