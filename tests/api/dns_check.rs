//! `SOURCE_URL_DNS_CHECK` against a real DNS responder on loopback.

use serde_json::json;
use sqlx::PgPool;

use crate::helpers::dns::DnsResponder;
use crate::helpers::*;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn names_resolving_to_non_public_addresses_are_422(pool: PgPool) {
    let dns = DnsResponder::start(&[
        (
            "public.example.com",
            &["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        ),
        ("private.example.com", &["10.0.0.5"]),
        ("metadata.example.com", &["169.254.169.254"]),
        ("mixed.example.com", &["93.184.216.34", "127.0.0.1"]),
        ("mixed6.example.com", &["93.184.216.34", "fd00::1"]),
    ])
    .await;
    let env = vec![
        ("SOURCE_URL_DNS_CHECK", "true".to_owned()),
        ("DNS_NAMESERVERS", dns.addr.to_string()),
    ];
    let app = TestApp::spawn_with_env(pool, env).await;
    let tenant = app.tenant().await;

    let mut body = import_body(&tenant);
    body["sourceUrl"] = json!("https://public.example.com/page");
    let response = app.post_json("/page-imports", &tenant.token, &body).await;
    assert_eq!(response.status(), 202);

    for (host, code) in [
        ("private.example.com", "non_public_address"),
        ("metadata.example.com", "non_public_address"),
        ("mixed.example.com", "non_public_address"),
        ("mixed6.example.com", "non_public_address"),
        ("missing.example.com", "unresolvable_host"),
    ] {
        body["sourceUrl"] = json!(format!("https://{host}/"));
        let problem = expect_problem(
            app.post_json("/page-imports", &tenant.token, &body).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(problem["errors"][0]["field"], "sourceUrl", "{host}");
        assert_eq!(problem["errors"][0]["code"], code, "{host}");
    }
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1);
}

/// A repeat with the same Idempotency-Key and body replays the first answer
/// even where the DNS check would now refuse it (here: another replica whose
/// resolver answers a private address for the same name).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_idempotent_replay_is_answered_before_validation(pool: PgPool) {
    let public = DnsResponder::start(&[("shop.example.com", &["93.184.216.34"])]).await;
    let private = DnsResponder::start(&[("shop.example.com", &["10.0.0.5"])]).await;
    let env = |dns: &DnsResponder| {
        vec![
            ("SOURCE_URL_DNS_CHECK", "true".to_owned()),
            ("DNS_NAMESERVERS", dns.addr.to_string()),
        ]
    };
    let first = TestApp::spawn_with_env(pool.clone(), env(&public)).await;
    let second = TestApp::spawn_with_env(pool, env(&private)).await;
    let tenant = first.tenant().await;
    let mut body = import_body(&tenant);
    body["sourceUrl"] = json!("https://shop.example.com/");
    let send = |app: &TestApp, key: &'static str| {
        app.http
            .post(app.url("/page-imports"))
            .bearer_auth(&tenant.token)
            .header("idempotency-key", key)
            .json(&body)
            .send()
    };
    let created = send(&first, "k-1").await.unwrap();
    assert_eq!(created.status(), 202);
    let created: serde_json::Value = created.json().await.unwrap();

    let replay = send(&second, "k-1").await.unwrap();
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<serde_json::Value>().await.unwrap()["id"], created["id"]);

    // The same body under a new key is validated, and refused there.
    let problem = expect_problem(send(&second, "k-2").await.unwrap(), 422, "validation_failed").await;
    assert_eq!(problem["errors"][0]["code"], "non_public_address");
}
