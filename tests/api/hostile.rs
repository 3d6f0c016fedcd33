//! Hostile and unusual pages (SPEC §10): dialogs are answered, a source
//! that is not a page fails `not_a_page`, and nothing a page offers as a
//! download reaches the disk.

use std::path::Path;

use serde_json::json;
use sqlx::PgPool;

use crate::helpers::capture::{descendants_of, Page, Site, WorkerProcess, BROWSER};
use crate::helpers::manifest::{attribute, Manifest};
use crate::helpers::TestApp;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn dialogs_are_answered_at_once_and_listed_in_the_manifest(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // Each while the page loads: left open, one would hold the page's
    // script and its load event until the navigation deadline.
    let long = "x".repeat(1_500);
    let html = format!(
        r#"<!doctype html><html><body><p id="answers">?</p><script>
        alert('Welcome!');
        const sure = confirm('Are you sure?');
        const name = prompt('Your name?', 'default');
        alert('{long}');
        document.getElementById('answers').setAttribute('data-answers', JSON.stringify([sure, name]));
        </script></body></html>"#
    );
    let site = Site::start(vec![("/", Page::html(&html))]).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    let m = Manifest(app.object_json(&format!("page-imports/{id}/1/capture.json")).await);
    // Dismissed: `confirm` false, `prompt` null.
    assert_eq!(attribute(m.element("answers"), "data-answers"), Some("[false,null]"));
    assert_eq!(
        m["dialogs"],
        json!([
            {"type": "alert", "message": "Welcome!"},
            {"type": "confirm", "message": "Are you sure?"},
            {"type": "prompt", "message": "Your name?"},
            {"type": "alert", "message": "x".repeat(1_000)},
        ])
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_source_that_is_not_a_page_fails_not_a_page_naming_its_type(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // The bytes of an empty zip archive.
    let zip = b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0".to_vec();
    let site = Site::start(vec![
        ("/archive.zip", Page::of("application/zip", zip)),
        (
            "/report.html",
            Page::html("<h1>Report</h1>").header("content-disposition", "attachment; filename=report.html"),
        ),
        ("/page", Page::html("<h1>A page</h1>")),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    for (path, content_type) in [("/archive.zip", "application/zip"), ("/report.html", "text/html")] {
        let id = app.import_url(&tenant, &site.url(path), None).await;
        let import = app.finished(&tenant, &id, &worker).await;
        assert_eq!(import["status"], "failed", "{path}: {import}");
        let failure = app.failure(&id, 1).await;
        assert_eq!(failure.cause(), ("not_a_page", false), "{path}: {}", failure.0);
        let message = import["errorMessage"].as_str().unwrap();
        assert!(message.contains(content_type), "{path}: {message}");
    }
    // A page after them is captured as ever.
    let id = app.import_url(&tenant, &site.url("/page"), None).await;
    assert_eq!(app.finished(&tenant, &id, &worker).await["status"], "completed");
}

/// Every file under `dir` whose bytes contain `marker`.
fn files_holding(dir: &Path, marker: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            found.extend(files_holding(&path, marker));
        } else if kind.is_file() {
            if let Ok(bytes) = std::fs::read(&path) {
                if bytes.windows(marker.len()).any(|w| w == marker) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    found
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn nothing_a_page_offers_as_a_download_reaches_the_disk(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let marker = format!("download-marker-{}", uuid::Uuid::new_v4().simple());
    let file = marker.repeat(2_000).into_bytes();
    let html = format!(
        r#"<!doctype html><html><body><a id="file" href="/file.bin" download>file</a><script>
        document.getElementById('file').click();
        const blob = new Blob(['{marker}-blob'.repeat(2000)], {{ type: 'application/octet-stream' }});
        const a = document.createElement('a');
        a.href = URL.createObjectURL(blob);
        a.download = 'blob.bin';
        document.body.append(a);
        a.click();
        </script></body></html>"#
    );
    let site = Site::start(vec![
        ("/", Page::html(&html)),
        (
            "/file.bin",
            Page::of("application/octet-stream", file).header("content-disposition", "attachment"),
        ),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    // The worker's and its browser's directories are all under this one.
    // Short: Chromium's singleton socket lives below it (at most 107 bytes).
    let tmp = std::env::temp_dir().join(format!("w-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]));
    std::fs::create_dir(&tmp).unwrap();
    let tmp_path = tmp.to_str().unwrap().to_owned();
    let worker = WorkerProcess::start(&app, &[site.addr], &[("TMPDIR", &tmp_path)]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}");
    assert!(
        std::fs::read_dir(&tmp).unwrap().next().is_some(),
        "the browser's directory is under {tmp_path}"
    );
    // The browser is still running: its profile and download folders are there.
    let found = files_holding(&tmp, marker.as_bytes());
    drop(worker);
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(found.is_empty(), "downloaded bytes on disk: {found:?}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn popups_are_closed_before_they_load_anything_and_counted(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let html = r#"<!doctype html><html><body>
        <a id="link" href="/popup-link" target="_blank">link</a>
        <form id="form" action="/popup-form" target="_blank"></form>
        <script>
        document.body.dataset.opened = String(window.open('/popup-open'));
        document.getElementById('link').click();
        document.getElementById('form').submit();
        </script></body></html>"#;
    let popup = Page::html("<p>a popup</p>");
    let site = Site::start(vec![
        ("/", Page::html(html)),
        ("/popup-open", popup.clone()),
        ("/popup-link", popup.clone()),
        ("/popup-form", popup),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}");
    let m = Manifest(app.object_json(&format!("page-imports/{id}/1/capture.json")).await);
    for path in ["/popup-open", "/popup-link", "/popup-form"] {
        assert_eq!(site.hits(path), 0, "{path} reached the page's server");
    }
    assert_eq!(m["page"]["popupsClosed"], 3);
    assert_eq!(attribute(m.element("link"), "target"), Some("_blank"));
}

/// A process's command line as one string.
fn cmdline(pid: i32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default()).replace('\0', " ")
}

/// Fields 4 (parent) and 5 (process group) of `/proc/{pid}/stat`.
fn parent_and_group(pid: i32) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(1);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// The worker's browsers: its children that are Chromium's browser
/// process, with the directory each runs in (`--user-data-dir`'s parent).
fn browsers_of(worker: i32) -> Vec<(i32, String)> {
    descendants_of(worker)
        .into_iter()
        .filter_map(|pid| {
            let line = cmdline(pid);
            let is_browser = parent_and_group(pid).map(|(parent, _)| parent) == Some(worker)
                && line.contains("--remote-debugging-pipe")
                && !line.contains("--type=");
            let home = line
                .split(' ')
                .find_map(|a| a.strip_prefix("--user-data-dir="))?
                .trim_end_matches("/profile")
                .to_owned();
            is_browser.then_some((pid, home))
        })
        .collect()
}

/// Which browser `pid` belongs to: the one whose process group it is in
/// (every helper), or whose directory its command line names (the crash
/// handler, which runs in a group of its own).
fn owner(pid: i32, browsers: &[(i32, String)]) -> Option<i32> {
    let (_, group) = parent_and_group(pid)?;
    let line = cmdline(pid);
    browsers
        .iter()
        .find(|(browser, home)| group == *browser || line.contains(home.as_str()))
        .map(|(browser, _)| *browser)
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_warm_browser_is_relaunched_after_browser_max_captures_and_the_old_ones_are_reaped(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = Site::start(vec![("/", Page::html("<h1>Hello</h1>"))]).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[("BROWSER_MAX_CAPTURES", "2")]);
    // Every browser seen, in order, and every process below the worker
    // with the browser it belongs to.
    let mut browsers: Vec<(i32, String)> = Vec::new();
    let mut processes: Vec<(i32, i32)> = Vec::new();
    for _ in 0..5 {
        let id = app.import_url(&tenant, &site.url("/"), None).await;
        assert_eq!(app.finished(&tenant, &id, &worker).await["status"], "completed");
        for browser in browsers_of(worker.pid()) {
            if !browsers.contains(&browser) {
                browsers.push(browser);
            }
        }
        for pid in worker.descendants() {
            if let Some(browser) = owner(pid, &browsers) {
                if !processes.contains(&(pid, browser)) {
                    processes.push((pid, browser));
                }
            }
        }
    }
    assert!(browsers.len() >= 3, "five captures, two per browser: {browsers:?}");
    let last = browsers.last().unwrap().0;
    assert!(
        processes.iter().filter(|(_, b)| *b != last).count() > browsers.len() - 1,
        "the old browsers' helpers were seen: {processes:?}"
    );
    // The old browsers and all their helpers are gone, not even zombies.
    let gone = |pid: i32| !Path::new(&format!("/proc/{pid}")).exists();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut left: Vec<(i32, i32)>;
    loop {
        left = processes
            .iter()
            .filter(|(pid, browser)| *browser != last && !gone(*pid))
            .copied()
            .collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        left.is_empty(),
        "(process, browser) of old browsers left: {left:?} (browsers {browsers:?})"
    );
    let alive: Vec<i32> = browsers_of(worker.pid()).into_iter().map(|(pid, _)| pid).collect();
    assert_eq!(alive, vec![last], "one browser alive at the end");
}

/// CPU time (user + system, in clock ticks) of `pid` so far.
fn cpu_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_script_that_never_yields_fails_page_unresponsive_and_its_renderer_is_ended(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = Site::start(vec![
        ("/spin", Page::html("<h1>Spinning</h1><script>while (true) {}</script>")),
        ("/page", Page::html("<h1>A page</h1>")),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_url(&tenant, &site.url("/spin"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "failed", "{import}");
    assert_eq!(import["attempt"], 1, "not retried: {import}");
    let failure = app.failure(&id, 1).await;
    assert_eq!(failure.cause(), ("page_unresponsive", false), "{}", failure.0);
    // Within 6 s no process below the worker is still spinning: none uses
    // more than a tenth of a core over half a second.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(6);
    let spinning = loop {
        let before: Vec<(i32, u64)> = worker
            .descendants()
            .into_iter()
            .filter_map(|pid| Some((pid, cpu_ticks(pid)?)))
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let spinning: Vec<(i32, String)> = before
            .iter()
            .filter(|(pid, ticks)| cpu_ticks(*pid).is_some_and(|now| now - ticks > ticks_per_second / 20))
            .map(|(pid, _)| (*pid, cmdline(*pid)))
            .collect();
        if spinning.is_empty() || std::time::Instant::now() > deadline {
            break spinning;
        }
    };
    assert!(spinning.is_empty(), "still spinning: {spinning:?}");
    // And the worker goes on.
    let id = app.import_url(&tenant, &site.url("/page"), None).await;
    assert_eq!(app.finished(&tenant, &id, &worker).await["status"], "completed");
}

/// What a page finds of the state an origin can keep, as JSON.
const READ_STATE: &str = r#"
async function state() {
    const dbs = indexedDB.databases ? (await indexedDB.databases()).map(d => d.name) : [];
    const caches_ = await caches.keys();
    const workers = (await navigator.serviceWorker.getRegistrations()).length;
    return { cookie: document.cookie, local: localStorage.getItem('k'), session: sessionStorage.getItem('k'), dbs, caches: caches_, workers };
}
"#;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn nothing_carries_from_one_capture_to_the_next(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let set = format!(
        r#"<!doctype html><html><head><link rel="stylesheet" href="/style.css"></head><body><p id="state">?</p><script>
        {READ_STATE}
        (async () => {{
            document.cookie = 'k=v; max-age=3600; path=/';
            localStorage.setItem('k', 'v');
            sessionStorage.setItem('k', 'v');
            await new Promise(done => {{
                const open = indexedDB.open('db', 1);
                open.onupgradeneeded = () => open.result.createObjectStore('s');
                open.onsuccess = () => {{ open.result.close(); done(); }};
                open.onerror = done;
            }});
            await (await caches.open('c')).put('/cached', new Response('x'));
            await navigator.serviceWorker.register('/sw.js');
            await navigator.serviceWorker.ready;
            document.getElementById('state').setAttribute('data-state', JSON.stringify(await state()));
        }})().catch(e => document.getElementById('state').setAttribute('data-state', JSON.stringify({{error: String(e)}})));
        </script></body></html>"#
    );
    let read = format!(
        r#"<!doctype html><html><head><link rel="stylesheet" href="/style.css"></head><body><p id="state">?</p><script>
        {READ_STATE}
        (async () => document.getElementById('state').setAttribute('data-state', JSON.stringify(await state())))();
        </script></body></html>"#
    );
    let site = Site::start(vec![
        ("/set", Page::html(&set)),
        ("/read", Page::html(&read)),
        (
            "/style.css",
            Page::of("text/css", b"body { color: rgb(1, 2, 3) }".to_vec()).header("cache-control", "max-age=3600"),
        ),
        (
            "/sw.js",
            Page::of("text/javascript", b"self.addEventListener('fetch', () => {});".to_vec()),
        ),
    ])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let mut found = Vec::new();
    for path in ["/set", "/read"] {
        let id = app.import_url(&tenant, &site.url(path), Some("[data-state]")).await;
        let import = app.finished(&tenant, &id, &worker).await;
        assert_eq!(import["status"], "completed", "{path}: {import}");
        let m = Manifest(app.object_json(&format!("page-imports/{id}/1/capture.json")).await);
        let state: serde_json::Value =
            serde_json::from_str(attribute(m.element("state"), "data-state").unwrap()).unwrap();
        found.push(state);
    }
    assert_eq!(
        found[0],
        json!({"cookie": "k=v", "local": "v", "session": "v", "dbs": ["db"], "caches": ["c"], "workers": 1}),
        "the first capture set every kind of state"
    );
    assert_eq!(
        found[1],
        json!({"cookie": "", "local": null, "session": null, "dbs": [], "caches": [], "workers": 0}),
        "the second capture of the same origin found none of it"
    );
    assert_eq!(site.hits("/style.css"), 2, "the cacheable stylesheet is fetched again");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_that_exhausts_its_memory_fails_page_crashed_while_a_parallel_capture_completes(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // Two sites, so the two pages run in two renderers.
    let hog = Site::start(vec![(
        "/",
        Page::html(
            r#"<h1>Hungry</h1><script>
            const kept = [];
            (function grow() {
                for (let i = 0; i < 20; i++) kept.push(new Array(1e6).fill(i));
                setTimeout(grow, 0);
            })();
            </script>"#,
        ),
    )])
    .await;
    let calm = Site::start(vec![(
        "/",
        Page::html("<h1>Calm</h1>").delayed(std::time::Duration::from_millis(500)),
    )])
    .await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(
        &app,
        &[hog.addr, calm.addr],
        &[("CAPTURE_MAX_HEAP_MIB", "128"), ("WORKER_CONCURRENCY", "2")],
    );
    let hungry = app.import_url(&tenant, &hog.url("/"), None).await;
    let other = app.import_url(&tenant, &calm.url("/"), None).await;
    let import = app.finished(&tenant, &other, &worker).await;
    assert_eq!(import["status"], "completed", "{import}");
    let import = app.finished(&tenant, &hungry, &worker).await;
    assert_eq!(import["status"], "failed", "{import}");
    let attempt = import["attempt"].as_u64().unwrap();
    let failure = app.failure(&hungry, attempt).await;
    assert_eq!(failure.cause(), ("page_crashed", true), "{}", failure.0);
    assert!(attempt > 1, "retried: {import}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_server_that_accepts_and_never_answers_fails_navigation_timeout_and_is_retried(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // The server accepts the connection, reads the request and holds the
    // socket open without a byte of answer for longer than the test.
    let site = Site::start(vec![(
        "/",
        Page::html("<h1>Too late</h1>").delayed(std::time::Duration::from_secs(600)),
    )])
    .await;
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("ALLOW_PRIVATE_SOURCE_URLS", "true".into()),
            ("CAPTURE_MAX_ATTEMPTS", "2".into()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[("CAPTURE_NAVIGATION_TIMEOUT_SECS", "3")]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    // No document ever came: the page waited on the network, not on a
    // script of its own, and another attempt may find the server answering.
    let first = app.failure(&id, 1).await;
    assert_eq!(first.cause(), ("navigation_timeout", true), "{}", first.0);
    assert_eq!(import["status"], "failed", "{import}");
    assert_eq!(
        import["attempt"], 2,
        "attempt 2 was dispatched and was the last: {import}"
    );
    let second = app.failure(&id, 2).await;
    assert_eq!(second.cause(), ("navigation_timeout", true), "{}", second.0);
    assert_eq!(site.hits("/"), 2, "each attempt asked the server once");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn thousands_of_refused_requests_list_the_first_thousand_cut_and_count_the_rest(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // 3 000 requests to a private address, each URL longer than 2 048
    // characters. The egress proxy refuses 10.255.255.1 when it checks the
    // address, before connecting anywhere. In batches, so Chromium does not
    // refuse some itself for having too many outstanding.
    let html = r#"<!doctype html><html><body><h1>Knocking</h1><script>
        const tail = 'é'.repeat(1500);
        (async () => {
            for (let batch = 0; batch < 60; batch++) {
                const asked = [];
                for (let i = batch * 50; i < batch * 50 + 50; i++) {
                    asked.push(fetch(`http://10.255.255.1/${i}?${tail}`, { mode: 'no-cors' }).catch(() => {}));
                }
                await Promise.all(asked);
            }
            document.body.dataset.done = 'yes';
        })();
        </script></body></html>"#;
    let site = Site::start(vec![("/", Page::html(html))]).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[("CAPTURE_READY_TIMEOUT_SECS", "60")]);
    let id = app.import_url(&tenant, &site.url("/"), Some("[data-done]")).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    // Checked against the committed schema too (`maxItems`, `maxLength`).
    let m = app.manifest(&id, 1).await;
    let blocked = m["blockedRequests"].as_array().expect("blockedRequests");
    assert_eq!(blocked.len(), 1_000, "at most 1 000 listed");
    let mut numbers = std::collections::HashSet::new();
    for b in blocked {
        let url = b["url"].as_str().unwrap();
        // Percent-encoded by Chromium (`é` is `%C3%A9`), cut to 2 048.
        assert_eq!(url.chars().count(), 2_048, "{}…", &url[..80]);
        let number = url
            .strip_prefix("http://10.255.255.1/")
            .and_then(|rest| rest.split_once('?'))
            .and_then(|(n, _)| n.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("{}…", &url[..80]));
        numbers.insert(number);
        assert!(b["reason"].as_str().is_some_and(|r| r.contains("non-public")), "{b}");
    }
    assert_eq!(numbers.len(), 1_000, "1 000 different requests");
    assert_eq!(m["page"]["blockedRequestsOmitted"], 2_000, "{}", m["page"]);
}
