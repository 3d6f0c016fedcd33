//! Operability: the alert rules (`deploy/prometheus/page-import.rules.yml`)
//! and the dashboard (`deploy/grafana/page-import.json`) in a real
//! Prometheus (Debian's, installed by `scripts/test`) that scrapes the real
//! service and worker processes. Every duration in the rules is divided by
//! 60 (`for: 10m` → 10 s, `[1h]` → 60 s; a `for:` lasts at least 5 s), so
//! alerts fire and resolve within the test, against the state the processes
//! really report.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::process::{database_url_of, spawn_logged, ServiceProcess};
use crate::helpers::proxy::FaultyProxy;
use crate::helpers::*;

/// Rules run this many times faster than written.
const SCALE: u64 = 60;

/// A duration as Prometheus writes one unit of it (`90s`, `10m`, `1h`, `1d`), in seconds.
fn seconds_of(duration: &str) -> Option<u64> {
    let (number, unit) = duration.split_at(duration.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = number.parse().ok()?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return None,
    };
    Some(n * unit)
}

/// `duration` divided by [`SCALE`], at least `floor` seconds.
fn scaled_duration(duration: &str, floor: u64) -> String {
    let secs = seconds_of(duration).unwrap_or_else(|| panic!("a duration the test can scale: {duration}"));
    format!("{}s", (secs / SCALE).max(floor))
}

/// The rules with every `for:` and every range selector `[…]` divided by
/// [`SCALE`]; a `for:` lasts at least 5 s (five scrapes), so that one slow
/// scrape on a loaded machine does not fire an alert.
fn scaled(rules: &str) -> String {
    let mut out = String::with_capacity(rules.len());
    for line in rules.lines() {
        let trimmed = line.trim_start();
        if let Some(duration) = trimmed.strip_prefix("for: ") {
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(&format!("{indent}for: {}\n", scaled_duration(duration.trim(), 5)));
            continue;
        }
        let mut rest = line;
        while let Some(open) = rest.find('[') {
            let close = open + rest[open..].find(']').expect("a range selector closes on its line");
            out.push_str(&rest[..=open]);
            out.push_str(&scaled_duration(&rest[open + 1..close], 1));
            rest = &rest[close..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// Words of PromQL that are not metric names when not followed by `(`.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "by",
    "on",
    "without",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "inf",
    "nan",
];
/// Words whose parenthesis holds label names, not an expression.
const GROUPING: &[&str] = &["by", "on", "without", "ignoring", "group_left", "group_right"];

/// The metric names an expression reads; not recording rules (their names
/// hold a colon) nor `up` (Prometheus makes it).
fn metrics_read_by(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let skip_to = |from: usize, end: char| {
        chars[from..]
            .iter()
            .position(|&c| c == end)
            .map_or(chars.len(), |p| from + p + 1)
    };
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' => i = skip_to(i, '}'),
            '[' => i = skip_to(i, ']'),
            '"' => i = skip_to(i + 1, '"'),
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next].is_whitespace() {
                    next += 1;
                }
                if chars.get(next) == Some(&'(') {
                    if GROUPING.contains(&word.as_str()) {
                        i = skip_to(next, ')');
                    }
                } else if !KEYWORDS.contains(&word.to_lowercase().as_str()) && !word.contains(':') && word != "up" {
                    names.insert(word);
                }
            }
            c if c.is_ascii_digit() || c == '.' => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// Every `expr` of a Grafana dashboard, nested rows' panels included.
fn dashboard_exprs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr", Value::String(expr)) => out.push(expr.clone()),
                    _ => dashboard_exprs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| dashboard_exprs(item, out)),
        _ => {}
    }
}

fn free_addr() -> String {
    format!("127.0.0.1:{}", free_port())
}

/// A Prometheus server on loopback with the scaled rules, scraping the
/// service and the worker every second; stopped by its PID when dropped.
struct Prometheus {
    child: Child,
    url: String,
    dir: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
}

impl Prometheus {
    async fn start(service: &str, worker: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("prometheus-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let rules = std::fs::read_to_string(repo_path("deploy/prometheus/page-import.rules.yml")).unwrap();
        std::fs::write(dir.join("rules.yml"), scaled(&rules)).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files: [rules.yml]\n\
             scrape_configs:\n\
             \x20 - job_name: page-import\n    static_configs: [{{targets: [\"{service}\"]}}]\n\
             \x20 - job_name: capture-worker\n    static_configs: [{{targets: [\"{worker}\"]}}]\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let listen = free_addr();
        let mut command = Command::new("prometheus");
        command
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={listen}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let (child, log) = spawn_logged(&mut command, "prometheus (scripts/test installs it)");
        let prometheus = Self {
            child,
            url: format!("http://{listen}"),
            dir,
            log,
            http: reqwest::Client::new(),
        };
        let ready = eventually(Duration::from_secs(30), || async {
            let ready = prometheus.http.get(format!("{}/-/ready", prometheus.url)).send().await;
            ready.is_ok_and(|r| r.status() == 200)
        })
        .await;
        assert!(ready, "prometheus did not start:\n{}", prometheus.log_text());
        prometheus
    }

    fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Value {
        let response = self
            .http
            .get(format!("{}/api/v1/{path}", self.url))
            .query(query)
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], "success", "{path} {query:?}: {body}");
        body["data"].clone()
    }

    /// The series an instant query returns.
    async fn query(&self, expr: &str) -> Vec<Value> {
        let data = self.api("query", &[("query", expr)]).await;
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// Every expression of every loaded rule.
    async fn rule_queries(&self) -> Vec<String> {
        let data = self.api("rules", &[]).await;
        data["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|group| group["rules"].as_array().unwrap().iter())
            .map(|rule| rule["query"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The alerts in state `firing`, as `name` or `name{job}`.
    async fn firing(&self) -> BTreeSet<String> {
        let data = self.api("alerts", &[]).await;
        data["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|alert| alert["state"] == "firing")
            .map(|alert| {
                let name = alert["labels"]["alertname"].as_str().unwrap();
                match alert["labels"]["job"].as_str() {
                    Some(job) if name == "PageImportTargetDown" => format!("{name}{{{job}}}"),
                    _ => name.to_owned(),
                }
            })
            .collect()
    }

    /// Waits until every alert of `names` fires, or none does (`firing` false).
    async fn wait_alerts(&self, names: &[&str], firing: bool, within: Duration) -> BTreeSet<String> {
        let seen = Mutex::new(BTreeSet::new());
        let done = eventually(within, || async {
            let now = self.firing().await;
            let done = names.iter().all(|name| now.contains(*name) == firing);
            *seen.lock().unwrap() = now;
            done
        })
        .await;
        let seen = seen.into_inner().unwrap();
        let expected = if firing { "firing" } else { "resolved" };
        assert!(
            done,
            "expected {names:?} {expected} within {within:?}; firing: {seen:?}"
        );
        seen
    }

    /// The expressions of `exprs` that return no series, waiting up to
    /// `within` for each to return one.
    async fn empty_of(&self, exprs: &[String], within: Duration) -> Vec<String> {
        let empty = Mutex::new(Vec::new());
        eventually(within, || async {
            let mut now = Vec::new();
            for expr in exprs {
                if self.query(expr).await.is_empty() {
                    now.push(expr.clone());
                }
            }
            let done = now.is_empty();
            *empty.lock().unwrap() = now;
            done
        })
        .await;
        empty.into_inner().unwrap()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the child's own (positive) pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        if crate::helpers::process::wait_exit(&mut self.child, Duration::from_secs(10)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn durations_are_scaled_in_for_clauses_and_range_selectors_only() {
    let rules = "      - alert: A\n        expr: sum(rate(x{a=\"b\"}[1h])) > 2 * sum(rate(x[10m]))\n        for: 15m\n        annotations:\n          summary: \"{{ $value }}\"\n";
    assert_eq!(
        scaled(rules),
        "      - alert: A\n        expr: sum(rate(x{a=\"b\"}[60s])) > 2 * sum(rate(x[10s]))\n        for: 15s\n        annotations:\n          summary: \"{{ $value }}\"\n"
    );
    assert!(
        scaled("        for: 2m\n").contains("for: 5s"),
        "a `for:` of five scrapes at least"
    );
    assert_eq!(scaled_duration("30s", 1), "1s", "never below a second");
    assert_eq!(scaled_duration("1d", 1), "1440s");
}

#[test]
fn the_metrics_an_expression_reads_are_its_metric_names_only() {
    let names = metrics_read_by(
        "sum by (outcome, class) (rate(worker_captures_total{outcome!=\"completed\"}[1h])) / on () group_left () \
         (sum(rate(worker_captures_total[1h])) > 0) and on(job) job:rec:rate5m > 1e-3 \
         and histogram_quantile(0.99, sum by (le) (rate(wait_seconds_bucket[5m]))) and up == 0",
    );
    assert_eq!(
        names,
        BTreeSet::from(["worker_captures_total".to_owned(), "wait_seconds_bucket".to_owned()])
    );
}

/// Whether a Prometheus text exposition has a series of `name`.
fn exposes(text: &str, name: &str) -> bool {
    text.lines()
        .any(|line| line.strip_prefix(name).is_some_and(|rest| rest.starts_with(['{', ' '])))
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn alerts_fire_when_the_fleet_stops_and_s3_is_cut_and_resolve_when_both_are_back(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = Site::start(vec![("/", Page::html("<h1 id=\"app\">Watched</h1>"))]).await;
    let mut app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    app.halt().await;
    // The service reaches S3 through a proxy the test can cut.
    let moto: std::net::SocketAddr = aws_endpoint().trim_start_matches("http://").parse().unwrap();
    let s3 = FaultyProxy::start(moto).await;
    let listen = free_addr();
    let public = format!("http://{listen}");
    let s3_url = s3.url();
    let service = ServiceProcess::start(
        &app,
        &database_url_of(&pool),
        &[
            ("LISTEN_ADDR", &listen),
            ("PUBLIC_BASE_URL", &public),
            ("ALLOW_PRIVATE_SOURCE_URLS", "true"),
            ("AWS_ENDPOINT_URL_S3", &s3_url),
            ("CAPTURE_MAX_IN_FLIGHT", "1"),
            ("ERASE_AFTER_DELETE_SECS", "0"),
            ("ERASE_INTERVAL_SECS", "1"),
            ("RUST_LOG", "info"),
        ],
    );
    let worker_addr = free_addr();
    let worker_env = [("WORKER_HEALTH_ADDR", worker_addr.as_str())];
    let mut worker = WorkerProcess::start(&app, &[site.addr], &worker_env);
    let prometheus = Prometheus::start(&listen, &worker_addr).await;
    let http = reqwest::Client::new();

    // Before any import: every metric a rule reads is exposed (the gauges
    // once the first pass of their task has run), so no rule waits for a
    // series that appears only with its first event.
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_path("deploy/grafana/page-import.json")).unwrap()).unwrap();
    let mut panels = Vec::new();
    dashboard_exprs(&dashboard, &mut panels);
    assert!(panels.len() >= 20, "a panel per stage of the lifecycle: {panels:?}");
    let rules = prometheus.rule_queries().await;
    assert!(rules.len() >= 20, "{rules:?}");
    let read: BTreeSet<String> = rules.iter().flat_map(|expr| metrics_read_by(expr)).collect();
    let missing = Mutex::new(Vec::new());
    let all_exposed = eventually(Duration::from_secs(10), || async {
        let exposed = format!(
            "{}\n{}",
            text_of(&http, &service.url("/metrics")).await,
            text_of(&http, &format!("http://{worker_addr}/metrics")).await
        );
        let mut missing = missing.lock().unwrap();
        *missing = read.iter().filter(|name| !exposes(&exposed, name)).cloned().collect();
        missing.is_empty()
    })
    .await;
    assert!(
        all_exposed,
        "read by a rule, not on /metrics before any traffic: {missing:?}"
    );

    // A capture that completes, then the quiet state: no alert fires.
    let create = |url: String| {
        let (http, token) = (http.clone(), tenant.token.clone());
        let mut body = import_body(&tenant);
        body["sourceUrl"] = json!(url);
        let service_url = service.url("/page-imports");
        async move {
            let response = http
                .post(service_url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 202);
            response.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let status_of = |id: String| {
        let (http, token, url) = (
            http.clone(),
            tenant.token.clone(),
            service.url(&format!("/page-imports/{id}")),
        );
        async move {
            let import: Value = http
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            import["status"].as_str().unwrap_or_default().to_owned()
        }
    };
    let first = create(site.url("/")).await;
    let completed = eventually(Duration::from_secs(90), || async {
        status_of(first.clone()).await == "completed"
    })
    .await;
    assert!(completed, "{}\n{}", worker.log_text(), service.log_text());
    // Every panel's expression parses and returns a series.
    let empty = prometheus.empty_of(&panels, Duration::from_secs(30)).await;
    assert!(empty.is_empty(), "panels whose query returns no series: {empty:#?}");
    let quiet = prometheus.firing().await;
    assert!(quiet.is_empty(), "nothing fires while all is well: {quiet:?}");

    // The fleet stops while imports are queued, and S3 is cut for the eraser.
    worker.signal(libc::SIGTERM, worker.pid());
    assert!(
        worker.exited(Duration::from_secs(60)).await.is_some(),
        "the worker stopped"
    );
    s3.set_up(false);
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(create(site.url("/")).await);
    }
    let deleted = http
        .delete(service.url(&format!("/page-imports/{}", ids[2])))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let stopped = [
        "PageImportNothingDispatched",
        "PageImportErasureFailing",
        "PageImportTargetDown{capture-worker}",
    ];
    let firing = prometheus.wait_alerts(&stopped, true, Duration::from_secs(120)).await;
    assert!(
        !firing.contains("PageImportTargetDown{page-import}"),
        "only the worker is down: {firing:?}"
    );

    // Both back: the alerts resolve.
    s3.set_up(true);
    let worker = WorkerProcess::start(&app, &[site.addr], &worker_env);
    prometheus.wait_alerts(&stopped, false, Duration::from_secs(120)).await;
    let done = eventually(Duration::from_secs(90), || async {
        let mut all = true;
        for id in [&ids[0], &ids[1], &ids[3]] {
            all &= status_of(id.clone()).await == "completed";
        }
        all
    })
    .await;
    assert!(done, "the queued imports were captured:\n{}", worker.log_text());
}
