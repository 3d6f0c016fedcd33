//! SPEC §4: RS256 JWTs against the JWKS; 401 problem+json for anything else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::routing::get;
use jsonwebtoken::Algorithm;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::*;

fn now() -> i64 {
    jsonwebtoken::get_current_timestamp() as i64
}

fn claims(sub: &str, overrides: Value) -> Value {
    let mut claims =
        json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "token_use": "id", "iat": now(), "exp": now() + 600});
    for (k, v) in overrides.as_object().unwrap() {
        if v.is_null() {
            claims.as_object_mut().unwrap().remove(k);
        } else {
            claims[k] = v.clone();
        }
    }
    claims
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn request_without_token_is_401_with_bearer_challenge(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let response = app
        .http
        .get(app.url(&format!(
            "/page-imports?organizationId={}&projectId={}",
            tenant.organization_id, tenant.project_id
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    expect_problem(response, 401, "unauthorized").await;
    let response = app
        .http
        .get(app.url("/page-imports/x"))
        .header("authorization", "Basic YTpi")
        .send()
        .await
        .unwrap();
    expect_problem(response, 401, "unauthorized").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn invalid_tokens_are_401(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let sub = tenant.subject.as_str();
    let untrusted = mint(
        sub,
        ISSUER,
        AUDIENCE,
        &repo_path("tests/fixtures/untrusted-jwt-private.pem"),
        DEV_KID,
    );
    let cases = [
        ("garbage", "not.a.jwt".to_owned()),
        ("untrusted key under a trusted kid", untrusted),
        (
            "expired beyond leeway",
            mint_claims(&claims(sub, json!({"exp": now() - 120})), Algorithm::RS256),
        ),
        (
            "not yet valid beyond leeway",
            mint_claims(&claims(sub, json!({"nbf": now() + 120})), Algorithm::RS256),
        ),
        (
            "wrong issuer",
            mint_claims(
                &claims(sub, json!({"iss": "https://evil.example.com"})),
                Algorithm::RS256,
            ),
        ),
        (
            "wrong audience",
            mint_claims(&claims(sub, json!({"aud": "other-client"})), Algorithm::RS256),
        ),
        (
            "no audience at all",
            mint_claims(&claims(sub, json!({"aud": null})), Algorithm::RS256),
        ),
        (
            "no subject",
            mint_claims(&claims(sub, json!({"sub": null})), Algorithm::RS256),
        ),
        (
            "no expiry",
            mint_claims(&claims(sub, json!({"exp": null})), Algorithm::RS256),
        ),
        ("HS256", mint_claims(&claims(sub, json!({})), Algorithm::HS256)),
        (
            "subject over 50 chars",
            mint_claims(&claims(&"s".repeat(51), json!({})), Algorithm::RS256),
        ),
    ];
    let path = format!(
        "/page-imports?organizationId={}&projectId={}",
        tenant.organization_id, tenant.project_id
    );
    for (case, token) in cases {
        let response = app.get(&path, &token).await;
        assert_eq!(response.status(), 401, "{case}");
        expect_problem(response, 401, "unauthorized").await;
    }
    // The same request with a good token passes, so the failures above are the token's.
    assert_eq!(app.get(&path, &tenant.token).await.status(), 200);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn leeway_access_tokens_and_audience_lists_are_accepted(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let sub = tenant.subject.as_str();
    let path = format!(
        "/page-imports?organizationId={}&projectId={}",
        tenant.organization_id, tenant.project_id
    );
    for (case, token) in [
        (
            "expired 30 s ago, within the 60 s leeway",
            mint_claims(&claims(sub, json!({"exp": now() - 30})), Algorithm::RS256),
        ),
        (
            "Cognito access token with client_id",
            mint_claims(
                &claims(sub, json!({"aud": null, "client_id": AUDIENCE, "token_use": "access"})),
                Algorithm::RS256,
            ),
        ),
        (
            "audience list",
            mint_claims(&claims(sub, json!({"aud": ["x", AUDIENCE]})), Algorithm::RS256),
        ),
    ] {
        assert_eq!(app.get(&path, &token).await.status(), 200, "{case}");
    }
}

/// A JWKS over HTTP whose contents the test can swap, counting fetches.
async fn jwks_server(initial: Value) -> (String, Arc<Mutex<Value>>, Arc<AtomicUsize>) {
    let doc = Arc::new(Mutex::new(initial));
    let hits = Arc::new(AtomicUsize::new(0));
    let (d, h) = (doc.clone(), hits.clone());
    let app = axum::Router::new().route(
        "/jwks.json",
        get(move || {
            let (d, h) = (d.clone(), h.clone());
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                axum::Json(d.lock().unwrap().clone())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, doc, hits)
}

fn read_jwks(rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo_path(rel)).unwrap()).unwrap()
}

/// An app whose JWKS is served over HTTP, and a token signed with a second
/// key that the JWKS does not publish yet.
struct Rotation {
    app: TestApp,
    tenant: Tenant,
    path: String,
    rotated_token: String,
    doc: Arc<Mutex<Value>>,
    hits: Arc<AtomicUsize>,
}

impl Rotation {
    async fn start(pool: PgPool) -> Self {
        let (url, doc, hits) = jwks_server(read_jwks("dev/jwks.json")).await;
        let env = vec![("AUTH_JWKS_URL", url)];
        let app = TestApp::spawn_with_env(pool, env).await;
        let tenant = app.tenant().await;
        let path = format!(
            "/page-imports?organizationId={}&projectId={}",
            tenant.organization_id, tenant.project_id
        );
        let key = repo_path("tests/fixtures/untrusted-jwt-private.pem");
        let rotated_token = mint(&tenant.subject, ISSUER, AUDIENCE, &key, "untrusted");
        Self {
            app,
            tenant,
            path,
            rotated_token,
            doc,
            hits,
        }
    }

    /// Publishes the second key next to the first.
    fn publish_second_key(&self) {
        let mut both = read_jwks("dev/jwks.json");
        let second = read_jwks("tests/fixtures/untrusted-jwks.json");
        both["keys"]
            .as_array_mut()
            .unwrap()
            .extend(second["keys"].as_array().unwrap().clone());
        *self.doc.lock().unwrap() = both;
    }

    async fn status_with(&self, token: &str) -> u16 {
        self.app.get(&self.path, token).await.status().as_u16()
    }

    fn fetches(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn unknown_kid_refetches_the_jwks_at_most_once_per_interval(pool: PgPool) {
    let r = Rotation::start(pool).await;
    assert_eq!(r.status_with(&r.tenant.token).await, 200);
    assert_eq!(r.status_with(&r.rotated_token).await, 401, "kid not published yet");
    assert_eq!(r.fetches(), 2, "first load, then one refetch for the unknown kid");

    // The key is published now, but the refetch interval has not passed: no new fetch.
    r.publish_second_key();
    for _ in 0..5 {
        assert_eq!(r.status_with(&r.rotated_token).await, 401);
    }
    assert_eq!(r.fetches(), 2, "refetches are rate-limited");
    // Cached keys keep working meanwhile.
    assert_eq!(r.status_with(&r.tenant.token).await, 200);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_key_published_after_start_is_picked_up_on_first_use(pool: PgPool) {
    let r = Rotation::start(pool).await;
    assert_eq!(r.status_with(&r.tenant.token).await, 200);
    r.publish_second_key();
    assert_eq!(r.status_with(&r.rotated_token).await, 200);
    assert_eq!(r.fetches(), 2);
}

/// Verified tokens are cached, but never past their expiry (+ leeway).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_cached_token_still_expires(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let path = format!(
        "/page-imports?organizationId={}&projectId={}",
        tenant.organization_id, tenant.project_id
    );
    // Expired 58 s ago: 2 s left of the 60 s leeway.
    let token = mint_claims(&claims(&tenant.subject, json!({"exp": now() - 58})), Algorithm::RS256);
    assert_eq!(app.get(&path, &token).await.status(), 200);
    assert_eq!(app.get(&path, &token).await.status(), 200, "served from the cache");
    // Its expiry (+ leeway) is what the test waits for: 2–3 s, as `exp` and
    // the clock it is checked against count whole seconds.
    let expired = eventually(std::time::Duration::from_secs(5), || async {
        app.get(&path, &token).await.status() == 401
    })
    .await;
    assert!(expired, "the token is refused once it expired, cached or not");
    expect_problem(app.get(&path, &token).await, 401, "unauthorized").await;
}

/// A JWKS whose answers the test can hold back, as an identity provider in
/// an outage that accepts connections and answers nothing.
async fn holdable_jwks_server() -> (String, tokio::sync::watch::Sender<bool>, Arc<AtomicUsize>) {
    let (hold, held) = tokio::sync::watch::channel(false);
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let app = axum::Router::new().route(
        "/jwks.json",
        get(move || {
            let (h, mut held) = (h.clone(), held.clone());
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                let _ = held.wait_for(|held| !*held).await;
                axum::Json(read_jwks("dev/jwks.json"))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hold, hits)
}

/// Once its keys are old, the cache refreshes them in the background and
/// serves them meanwhile: an identity provider that stopped answering holds
/// up no new token whose key is known (each waited for the refetch, up to
/// its 5 s timeout, one after another). One refresh is under way at a time,
/// however many uses find the keys old: a refresh task holds the
/// authenticator (an `Arc`) until it ends, so the count of its holders is
/// the count of refresh tasks. (The JWKS hits alone cannot tell: a second
/// task would wait for the first's fetch, and then find its keys fresh.)
#[tokio::test]
async fn old_keys_are_served_while_their_refresh_hangs() {
    let (url, hold, hits) = holdable_jwks_server().await;
    let auth = Arc::new(
        page_import::auth::Authenticator::new(url, ISSUER.into(), AUDIENCE.into())
            .with_max_key_age(std::time::Duration::from_millis(200)),
    );
    auth.warm_up().await;
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let holders = Arc::strong_count(&auth);
    hold.send_replace(true);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // New tokens (none verified before), one after another, while the
    // refresh their first use started still waits for an answer.
    for n in 0..5 {
        let token = token_for(&format!("user-{n}"));
        let verified = tokio::time::timeout(std::time::Duration::from_secs(2), auth.authenticate(&token)).await;
        let actor = verified.expect("a new token waited for the JWKS refresh").unwrap();
        assert_eq!(actor.subject, format!("user-{n}"));
    }
    let refreshing = eventually(std::time::Duration::from_secs(2), || async {
        hits.load(Ordering::SeqCst) == 2
    })
    .await;
    assert!(refreshing, "one refresh, in the background");
    assert_eq!(
        Arc::strong_count(&auth) - holders,
        1,
        "one refresh task under way, not one per use that found the keys old"
    );
    hold.send_replace(false);
    let ended = eventually(std::time::Duration::from_secs(5), || async {
        Arc::strong_count(&auth) == holders
    })
    .await;
    assert!(ended, "the refresh ended once the JWKS answered");
    assert_eq!(hits.load(Ordering::SeqCst), 2, "one fetch");
}
