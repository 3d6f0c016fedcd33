//! The real `page-import` binary as a child process (for logs, signals and
//! database outages), and a private PostgreSQL cluster a test may stop.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::{repo_path, TestApp, AUDIENCE, ISSUER, WEBHOOK_SECRET};

pub struct ServiceProcess {
    pub child: Child,
    pub base_url: String,
    /// Every line the service wrote to stderr so far.
    pub log: Arc<Mutex<Vec<String>>>,
}

/// What a child process needs to reach the emulator and sign or verify
/// callbacks: the AWS settings and the test webhook secret.
pub fn worker_side_env(command: &mut Command) {
    command
        .env("AWS_ENDPOINT_URL", super::aws_endpoint())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("S3_FORCE_PATH_STYLE", "true")
        .env("WEBHOOK_SECRET", WEBHOOK_SECRET);
}

/// Spawns `command` (stderr piped) and collects every line it writes to
/// stderr.
pub fn spawn_logged(command: &mut Command, what: &str) -> (Child, Arc<Mutex<Vec<String>>>) {
    let mut child = command.spawn().unwrap_or_else(|e| panic!("start {what}: {e}"));
    let stderr = child.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    (child, log)
}

/// The URL of the database behind `pool` (a `#[sqlx::test]` database).
pub fn database_url_of(pool: &PgPool) -> String {
    let base = url::Url::parse(&std::env::var("DATABASE_URL").expect("DATABASE_URL")).unwrap();
    let mut url = base.clone();
    url.set_path(pool.connect_options().get_database().expect("a named database"));
    url.to_string()
}

impl ServiceProcess {
    /// Starts the binary against `database_url` and the queues and bucket of
    /// `app`, with JSON logs at `RUST_LOG=debug`, and waits until it listens.
    pub fn start(app: &TestApp, database_url: &str, extra_env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_page-import"));
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", database_url)
            .env("LISTEN_ADDR", "127.0.0.1:0")
            .env("PAGE_IMPORT_QUEUE_URL", &app.page_import_queue_url)
            .env("CODE2DES_QUEUE_URL", &app.code2des_queue_url)
            .env("ARTIFACT_BUCKET", &app.bucket)
            .env("AUTH_JWKS_URL", format!("file://{}", repo_path("dev/jwks.json")))
            .env("AUTH_ISSUER", ISSUER)
            .env("AUTH_AUDIENCE", AUDIENCE)
            .env("SOURCE_URL_DNS_CHECK", "false")
            .env("OUTBOX_RELAY_INTERVAL_MS", "200")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "debug")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        worker_side_env(&mut command);
        for (k, v) in extra_env {
            command.env(k, v);
        }
        let (child, log) = spawn_logged(&mut command, "page-import");
        let deadline = Instant::now() + Duration::from_secs(15);
        let addr = loop {
            let found = log.lock().unwrap().iter().find_map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).ok()?;
                (v["message"] == "listening").then(|| v["addr"].as_str().unwrap().to_owned())
            });
            if let Some(addr) = found {
                break addr;
            }
            assert!(
                Instant::now() < deadline,
                "service did not start: {:?}",
                log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Self {
            child,
            base_url: format!("http://{addr}"),
            log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn sigterm(&self) {
        // SAFETY: kill(2) on the child's own (positive) pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) }, 0);
    }

    /// Waits for the process to exit and returns its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        wait_exit(&mut self.child, timeout)
    }
}

/// Waits (blocking) for `child` to exit and returns its exit code, or
/// `None` after `timeout`.
pub fn wait_exit(child: &mut Child, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PostgreSQL cluster of the test's own, so the test can stop and restart it.
pub struct PrivateCluster {
    dir: PathBuf,
    pub port: u16,
}

fn pg_bin(tool: &str) -> String {
    format!(
        "{}/{tool}",
        std::env::var("PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into())
    )
}

fn as_postgres(args: &[&str]) {
    let output = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl PrivateCluster {
    pub fn start() -> Self {
        let dir = PathBuf::from(format!("/tmp/page-import-cluster-{}", uuid::Uuid::new_v4().simple()));
        let status = Command::new("install")
            .args(["-d", "-o", "postgres", "-m", "700"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let data = dir.join("data");
        as_postgres(&[
            &pg_bin("initdb"),
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        let cluster = Self { dir, port };
        cluster.resume();
        cluster
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Migrates the cluster's database and seeds one organization, project
    /// and member `subject`; returns `(organization_id, project_id)`.
    pub async fn migrate_and_seed(&self, subject: &str) -> (i64, i64) {
        let setup = PgPool::connect(&self.url()).await.unwrap();
        page_import::MIGRATOR.run(&setup).await.unwrap();
        let ids = sqlx::query_as(
            "with o as (insert into organization (name) values ('o') returning id),
                  p as (insert into project (organization_id, name) select id, 'p' from o returning id, organization_id),
                  m as (insert into organization_member (organization_id, subject) select organization_id, $1 from p)
             select organization_id, id from p",
        )
        .bind(subject)
        .fetch_one(&setup)
        .await
        .unwrap();
        setup.close().await;
        ids
    }

    /// Stops the server immediately (connections are cut).
    pub fn stop(&self) {
        let data = self.dir.join("data");
        as_postgres(&[
            &pg_bin("pg_ctl"),
            "-D",
            data.to_str().unwrap(),
            "-m",
            "immediate",
            "-w",
            "stop",
        ]);
    }

    /// Starts (or restarts) the server on the same port and data.
    pub fn resume(&self) {
        let data = self.dir.join("data");
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {}",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log");
        as_postgres(&[
            &pg_bin("pg_ctl"),
            "-D",
            data.to_str().unwrap(),
            "-l",
            log.to_str().unwrap(),
            "-w",
            "-o",
            &opts,
            "start",
        ]);
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = Command::new("runuser")
            .args([
                "-u",
                "postgres",
                "--",
                &pg_bin("pg_ctl"),
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "stop",
            ])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
