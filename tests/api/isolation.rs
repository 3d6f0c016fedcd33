//! The worker's browser keeps every defence it has (SPEC §10 Isolation and
//! Frames), shown on the running processes: sandboxed renderers, no root, no
//! secret in any environment, no listening socket, one process per site, a
//! refused start when no sandbox can be had; and cross-site frames captured
//! through their own sessions, in page coordinates.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::capture::{descendants_of, Page, Site, WorkerProcess, BROWSER};
use crate::helpers::{eventually, TestApp, WEBHOOK_SECRET};

/// A page on `a` holding a cross-site frame on `b`, which holds one on `c`,
/// and a same-site frame; `slow` is a resource of the page that answers late.
struct FramedSites {
    a: Site,
    b: Site,
    c: Site,
}

impl FramedSites {
    async fn start(slow: Duration) -> Self {
        let c = Site::start(vec![(
            "/inner",
            Page::html(r#"<body style="margin:0"><p style="margin:0">Inner frame on site C</p></body>"#),
        )])
        .await;
        let b = Site::start(vec![(
            "/frame",
            Page::html(&format!(
                r#"<body style="margin:0"><p style="margin:0 0 20px 0">Frame text on site B</p>
                <iframe src="{}" style="width:300px;height:80px;border:0;margin-left:50px"></iframe></body>"#,
                c.url("/inner")
            )),
        )])
        .await;
        let a = Site::start(vec![
            (
                "/",
                Page::html(&format!(
                    r#"<!doctype html><html><body style="margin:0">
                    <h1 style="height:150px;margin:0">Page on site A</h1>
                    <iframe id="cross" src="{}" style="width:500px;height:300px;border:4px solid black;padding:6px"></iframe>
                    <iframe id="same" src="/same" style="width:300px;height:100px;border:2px solid"></iframe>
                    <img src="/slow.png" width="10" height="10"></body></html>"#,
                    b.url("/frame")
                )),
            ),
            (
                "/same",
                Page::html(r#"<body style="margin:0"><p style="margin:0">Same-site frame text</p></body>"#),
            ),
            ("/slow.png", Page::of("image/png", Vec::new()).delayed(slow)),
        ])
        .await;
        Self { a, b, c }
    }

    fn allow(&self) -> Vec<SocketAddr> {
        vec![self.a.addr, self.b.addr, self.c.addr]
    }
}

/// What /proc says of one process.
#[derive(Debug)]
struct Proc {
    pid: i32,
    cmdline: Vec<String>,
    status: String,
    environ: Vec<String>,
    user_ns: String,
}

impl Proc {
    fn read(pid: i32) -> Option<Self> {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let split = |raw: &[u8]| {
            raw.split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
        };
        Some(Self {
            pid,
            // Chromium's helpers rewrite their command line as one string
            // of space-separated arguments.
            cmdline: split(&cmdline)
                .iter()
                .flat_map(|a| a.split(' ').map(str::to_owned).collect::<Vec<_>>())
                .collect(),
            status: std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
            environ: split(&environ),
            user_ns: std::fs::read_link(format!("/proc/{pid}/ns/user"))
                .ok()?
                .display()
                .to_string(),
        })
    }

    fn status_field(&self, name: &str) -> String {
        self.status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    fn is_renderer(&self) -> bool {
        self.cmdline.iter().any(|a| a == "--type=renderer")
    }

    /// Searches every readable, writable mapping of the process (heap,
    /// stacks, the environment block, anonymous memory) for `needle`;
    /// answers whether it was found and how many bytes were searched.
    fn memory_holds(&self, needle: &[u8]) -> (bool, usize) {
        use std::io::{Read, Seek, SeekFrom};
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).unwrap_or_default();
        let Ok(mut memory) = std::fs::File::open(format!("/proc/{}/mem", self.pid)) else {
            return (false, 0);
        };
        let finder = memchr::memmem::Finder::new(needle);
        let mut searched = 0;
        let mut chunk = vec![0u8; 4 << 20];
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
                continue;
            };
            if !perms.starts_with("rw") || line.ends_with("[vvar]") {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16)) else {
                continue;
            };
            // Chunks overlap by the needle's length, so no match is split.
            let mut at = start;
            while at < end {
                let len = ((end - at) as usize).min(chunk.len());
                if memory.seek(SeekFrom::Start(at)).is_err() {
                    break;
                }
                let Ok(n) = memory.read(&mut chunk[..len]) else { break };
                if n == 0 {
                    break;
                }
                searched += n;
                if finder.find(&chunk[..n]).is_some() {
                    return (true, searched);
                }
                at += (n.saturating_sub(needle.len())).max(1) as u64;
            }
        }
        (false, searched)
    }

    /// Sockets this process holds that listen for TCP connections, read
    /// from its own network namespace's tables.
    fn listening_tcp_sockets(&self) -> Vec<String> {
        let held: HashSet<String> = std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|dir| {
                dir.flatten()
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .filter_map(|target| {
                        let target = target.display().to_string();
                        Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut listening = Vec::new();
        for table in ["tcp", "tcp6"] {
            let text = std::fs::read_to_string(format!("/proc/{}/net/{table}", self.pid)).unwrap_or_default();
            for line in text.lines().skip(1) {
                let fields: Vec<&str> = line.split_whitespace().collect();
                // local_address, state (0A = LISTEN), inode
                if fields.get(3) == Some(&"0A") && fields.get(9).is_some_and(|inode| held.contains(*inode)) {
                    listening.push(format!("{table} {}", fields[1]));
                }
            }
        }
        listening
    }
}

fn browser_processes(worker: &WorkerProcess) -> Vec<Proc> {
    descendants_of(worker.pid())
        .into_iter()
        .filter_map(Proc::read)
        .collect()
}

fn renderers(worker: &WorkerProcess) -> usize {
    browser_processes(worker).iter().filter(|p| p.is_renderer()).count()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn chromium_runs_sandboxed_site_isolated_unprivileged_without_secrets_or_ports(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let sites = FramedSites::start(Duration::from_secs(4)).await;
    // A secret no page or browser has any other reason to hold.
    let aws_secret = format!("aws-secret-{}", uuid::Uuid::new_v4().simple());
    let worker = WorkerProcess::start(&app, &sites.allow(), &[("AWS_SECRET_ACCESS_KEY", &aws_secret)]);
    let worker_ns = Proc::read(worker.pid()).unwrap().user_ns;
    let idle_renderers = renderers(&worker);

    let id = app.import_url(&tenant, &sites.a.url("/"), None).await;
    // Held open by the slow image, with every frame loaded.
    assert!(
        eventually(Duration::from_secs(30), || async {
            sites.a.hits("/slow.png") == 1 && sites.c.hits("/inner") == 1
        })
        .await,
        "the capture did not get going:\n{}",
        worker.log_text()
    );
    let processes = browser_processes(&worker);
    // The browser process keeps its command line and environment block as
    // started (its helpers write their titles over both): it shows what
    // every browser process was started with.
    let browser = processes
        .iter()
        .find(|p| {
            p.cmdline.first().is_some_and(|c| c.ends_with("chromium"))
                && !p.cmdline.iter().any(|a| a.starts_with("--type="))
        })
        .expect("the browser process");
    let mut names: Vec<&str> = browser
        .environ
        .iter()
        .map(|v| v.split('=').next().unwrap_or_default())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["HOME", "PATH", "TMPDIR"], "{:?}", browser.environ);
    assert!(
        browser.environ.iter().any(|v| v.starts_with("HOME=/tmp/chromium-")),
        "HOME is the browser's own directory: {:?}",
        browser.environ
    );

    // Site isolation: the page and each cross-site frame in a renderer of their own.
    let busy_renderers = processes.iter().filter(|p| p.is_renderer()).count();
    assert!(
        busy_renderers >= idle_renderers + 3,
        "sites A, B and C need three renderers: {idle_renderers} idle, {busy_renderers} now"
    );
    for p in &processes {
        let line = p.cmdline.join(" ");
        // No switch that lowers a defence, on the command line as it ran.
        for switch in [
            "--no-sandbox",
            "--disable-setuid-sandbox",
            "--disable-site-isolation-trials",
            "--remote-debugging-port",
            "--single-process",
            "--no-zygote",
        ] {
            assert!(
                !p.cmdline
                    .iter()
                    .any(|a| a == switch || a.starts_with(&format!("{switch}="))),
                "{switch} in {}: {line}",
                p.pid
            );
        }
        if let Some(features) = p.cmdline.iter().find_map(|a| a.strip_prefix("--disable-features=")) {
            for feature in features.split(',') {
                assert!(
                    !matches!(feature, "IsolateOrigins" | "site-per-process"),
                    "{}: {line}",
                    p.pid
                );
            }
        }
        // Not root, in any of real, effective, saved or filesystem uid.
        let uids = p.status_field("Uid");
        assert!(
            uids.split_whitespace().all(|uid| uid != "0"),
            "{} runs as root: Uid {uids}: {line}",
            p.pid
        );
        // An environment built from nothing: no secret's name in the
        // environment block, no secret anywhere in the process's memory.
        for variable in &p.environ {
            let name = variable.split('=').next().unwrap_or_default();
            assert!(
                !name.starts_with("AWS_") && !name.starts_with("WEBHOOK_") && name != "DATABASE_URL",
                "{} holds {name}",
                p.pid
            );
        }
        for secret in [WEBHOOK_SECRET, aws_secret.as_str()] {
            let (found, searched) = p.memory_holds(secret.as_bytes());
            assert!(searched > 0, "the memory of {} was searched: {line}", p.pid);
            assert!(!found, "{} holds a secret of the worker in its memory: {line}", p.pid);
        }
        // CDP over a pipe: nothing listens.
        assert_eq!(p.listening_tcp_sockets(), Vec::<String>::new(), "{}: {line}", p.pid);
    }
    // Every renderer under seccomp-BPF, in a user namespace of its own. A
    // renderer just forked from its zygote applies the filter while it
    // starts, before it runs any page: it is read again until it has (or
    // is gone); without the sandbox it never does.
    for renderer in processes.iter().filter(|p| p.is_renderer()) {
        let seccomp = || Proc::read(renderer.pid).map(|now| now.status_field("Seccomp"));
        let filtered = eventually(Duration::from_secs(5), || async {
            seccomp().is_none_or(|mode| mode == "2")
        })
        .await;
        assert!(filtered, "renderer {}: Seccomp {:?}", renderer.pid, seccomp());
        assert_ne!(
            renderer.user_ns, worker_ns,
            "renderer {} shares the worker's user namespace",
            renderer.pid
        );
    }

    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
}

/// The node whose text contains `needle`, and its ancestors (nearest first).
fn text_and_ancestors<'a>(nodes: &'a [Value], needle: &str) -> (&'a Value, Vec<&'a Value>) {
    let text = nodes
        .iter()
        .find(|n| n["type"] == 3 && n["value"].as_str().is_some_and(|v| v.contains(needle)))
        .unwrap_or_else(|| panic!("no text node with {needle:?}"));
    let mut ancestors = Vec::new();
    let mut at = text;
    while let Some(parent) = at["parent"].as_u64() {
        at = &nodes[parent as usize];
        ancestors.push(at);
    }
    (text, ancestors)
}

fn rect(value: &Value) -> [f64; 4] {
    let v: Vec<f64> = value.as_array().unwrap().iter().map(|n| n.as_f64().unwrap()).collect();
    [v[0], v[1], v[2], v[3]]
}

/// `inner` lies inside `outer` (half a pixel of rounding allowed).
fn inside(inner: [f64; 4], outer: [f64; 4]) -> bool {
    inner[0] >= outer[0] - 0.5
        && inner[1] >= outer[1] - 0.5
        && inner[0] + inner[2] <= outer[0] + outer[2] + 0.5
        && inner[1] + inner[3] <= outer[1] + outer[3] + 0.5
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn cross_site_frames_nested_ones_too_are_captured_under_their_iframe_in_page_coordinates(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let sites = FramedSites::start(Duration::ZERO).await;
    let worker = WorkerProcess::start(&app, &sites.allow(), &[]);
    let id = app.import_url(&tenant, &sites.a.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    let manifest = app.manifest(&id, 1).await;
    let nodes = manifest["dom"]["nodes"].as_array().unwrap();

    let iframe_with_src = |ancestors: &[&Value], src: &str| -> Value {
        (*ancestors
            .iter()
            .find(|n| {
                n["name"] == "IFRAME"
                    && n["attributes"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|pair| pair[0] == "src" && pair[1] == src))
            })
            .unwrap_or_else(|| panic!("no IFRAME with src {src} among the ancestors")))
        .clone()
    };
    for (needle, src, outer_src) in [
        ("Frame text on site B", sites.b.url("/frame"), None),
        (
            "Inner frame on site C",
            sites.c.url("/inner"),
            Some(sites.b.url("/frame")),
        ),
        ("Same-site frame text", "/same".to_owned(), None),
    ] {
        let (text, ancestors) = text_and_ancestors(nodes, needle);
        let iframe = iframe_with_src(&ancestors, &src);
        assert_ne!(
            text["document"],
            Value::Null,
            "{needle}: a frame's document, not the page's"
        );
        let frame_box = rect(&iframe["box"]);
        let text_box = &text["textBoxes"][0];
        let line = rect(text_box);
        assert!(
            inside(line, frame_box),
            "{needle}: its line {line:?} is not inside its iframe {frame_box:?}"
        );
        if let Some(outer_src) = outer_src {
            let outer = iframe_with_src(&ancestors, &outer_src);
            assert!(
                inside(frame_box, rect(&outer["box"])),
                "the nested frame sits in its parent"
            );
        }
    }
    // The cross-site frame's content starts inside the border and padding
    // (4 + 6 px) of an iframe at y = 150.
    let (text, _) = text_and_ancestors(nodes, "Frame text on site B");
    let line = rect(&text["textBoxes"][0]);
    assert!((line[1] - 160.0).abs() < 2.0, "{line:?}");
    assert!((line[0] - 10.0).abs() < 2.0, "{line:?}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_refused_connection_fails_as_retryable_and_is_dispatched_again(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("ALLOW_PRIVATE_SOURCE_URLS", "true".into()),
            ("CAPTURE_MAX_ATTEMPTS", "2".into()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    // An address the egress rules let through, where nothing listens.
    let closed = SocketAddr::new(crate::helpers::capture::fresh_loopback().into(), 80);
    let worker = WorkerProcess::start(&app, &[closed], &[]);
    let id = app.import_url(&tenant, &format!("http://{}/", closed.ip()), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(
        (import["status"].as_str(), import["attempt"].as_i64()),
        (Some("failed"), Some(2)),
        "retried once, then final: {import}"
    );
    assert_eq!(import["errorMessage"], "The page's server refused the connection");
    for attempt in [1, 2] {
        let failure = app.failure(&id, attempt).await;
        assert_eq!(
            failure.cause(),
            ("connection_refused", true),
            "attempt {attempt}: {}",
            failure.0
        );
        assert_eq!(failure.0["blockedRequests"], serde_json::json!([]));
    }
}

/// Docker's stock seccomp profile, in small: `clone` and `unshare` with
/// `CLONE_NEWUSER` fail with EPERM (`clone3` with ENOSYS, so the C library
/// falls back to `clone`). No user namespace, no Chromium sandbox.
#[cfg(target_arch = "x86_64")]
fn forbid_user_namespaces(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const LD_ABS_W: u16 = 0x20;
    const JEQ: u16 = 0x15;
    const JSET: u16 = 0x45;
    const RET: u16 = 0x06;
    const ALLOW: u32 = 0x7fff_0000;
    const ERRNO: u32 = 0x0005_0000;
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let program = [
        op(LD_ABS_W, 0, 0, 4),                      // 0: arch
        op(JEQ, 0, 7, AUDIT_ARCH_X86_64),           // 1: other arch → allow (9)
        op(LD_ABS_W, 0, 0, 0),                      // 2: syscall number
        op(JEQ, 7, 0, 435),                         // 3: clone3 → ENOSYS (11)
        op(JEQ, 2, 0, 56),                          // 4: clone → flags (7)
        op(JEQ, 1, 0, 272),                         // 5: unshare → flags (7)
        op(RET, 0, 0, ALLOW),                       // 6
        op(LD_ABS_W, 0, 0, 16),                     // 7: args[0], low half
        op(JSET, 1, 0, libc::CLONE_NEWUSER as u32), // 8: → EPERM (10)
        op(RET, 0, 0, ALLOW),                       // 9
        op(RET, 0, 0, ERRNO | libc::EPERM as u32),  // 10
        op(RET, 0, 0, ERRNO | libc::ENOSYS as u32), // 11
    ];
    // SAFETY: prctl with a filter program that lives until exec has copied
    // it into the kernel; both calls are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let filter = libc::sock_fprog {
                len: program.len() as u16,
                filter: program.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &filter as *const _) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(target_arch = "x86_64")]
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn without_user_namespaces_the_worker_stops_at_start_up_and_never_runs_chromium_unsandboxed(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let mut command = WorkerProcess::command(&app, &[], &[]);
    forbid_user_namespaces(&mut command);
    let (child, log) = crate::helpers::process::spawn_logged(&mut command, "capture-worker");
    let mut worker = WorkerProcess { child, log };
    let code = worker.exited(Duration::from_secs(30)).await;
    let log = worker.log_text();
    assert_eq!(code, Some(1), "{log}");
    assert_eq!(worker.log_count("chromium started"), 0, "{log}");
    assert_eq!(worker.log_count("capture worker started"), 0, "{log}");
    let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["level"], "ERROR", "{log}");
    let error = last["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("a sandboxed Chromium could not be started") && error.contains("sandbox"),
        "one line saying why: {error}"
    );
    assert_eq!(
        log.lines().filter(|l| l.contains("\"level\":\"ERROR\"")).count(),
        1,
        "{log}"
    );
    assert!(descendants_of(worker.pid()).is_empty(), "nothing left running");
}
