//! `scripts/dev` as a newcomer uses it: it brings the whole stack up
//! (Prometheus with the alert rules among it), and
//! Ctrl-C (SIGINT to its process group, as a terminal sends it) or a SIGTERM
//! to the script stops everything it started and removes its directory.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::capture::{alive, descendants_of, fresh_loopback};
use crate::helpers::{free_port, repo_path};

fn stack_dirs() -> BTreeSet<PathBuf> {
    std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("page-import-dev."))
        .collect()
}

/// Starts `scripts/dev` in a process group of its own, waits for the service
/// and the worker, and returns the script, every process it started (the
/// PostgreSQL postmaster, which daemonizes, included) and its directory.
fn start_dev() -> (std::process::Child, Vec<i32>, PathBuf) {
    let before = stack_dirs();
    let listen = format!("127.0.0.1:{}", free_port());
    let sample = format!("{}:{}", fresh_loopback(), free_port());
    let mut script = Command::new("bash");
    script
        .arg(repo_path("scripts/dev"))
        .current_dir(repo_path(""))
        .env("DEV_NO_BUILD", "1")
        .env("LISTEN_ADDR", &listen)
        .env("SAMPLE_ADDR", &sample)
        .env("LOG_FORMAT", "json")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let child = script.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let worker = loop {
        assert!(Instant::now() < deadline, "scripts/dev did not come up");
        let ready = std::net::TcpStream::connect(&listen).is_ok();
        let worker = descendants_of(child.id() as i32).into_iter().find(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("capture-worker"))
        });
        if let (true, Some(worker)) = (ready, worker) {
            break worker;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // The worker's Chromium is up once it has children; Prometheus starts
    // after the worker.
    let prometheus = || {
        descendants_of(child.id() as i32).into_iter().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with("prometheus\0"))
        })
    };
    while (descendants_of(worker).is_empty() || !prometheus()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(prometheus(), "scripts/dev started Prometheus");
    // Its directory: where its moto writes its log (other tests may be
    // starting stacks of their own meanwhile).
    let dir = descendants_of(child.id() as i32)
        .into_iter()
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("moto_server")))
        .find_map(|pid| std::fs::read_link(format!("/proc/{pid}/fd/1")).ok())
        .and_then(|log| log.parent().map(PathBuf::from))
        .expect("the stack's directory");
    assert!(
        stack_dirs().contains(&dir) && !before.contains(&dir),
        "{}",
        dir.display()
    );
    let postmaster: i32 = std::fs::read_to_string(dir.join("pg/data/postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut started = descendants_of(child.id() as i32);
    started.push(postmaster);
    started.extend(descendants_of(postmaster));
    (child, started, dir)
}

fn assert_all_stopped(mut child: std::process::Child, started: &[i32], dir: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "scripts/dev did not exit");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Chromium's browser process is still dying when the worker, and so
    // the script, have exited: it was measured gone 0.5–0.9 s later. What
    // must not happen is a process that stays (the PostgreSQL postmaster and
    // moto did, before the script's cleanup became unconditional).
    let exited = Instant::now();
    while started.iter().any(|&pid| alive(pid)) && exited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<(i32, String)> = started
        .iter()
        .filter(|&&pid| alive(pid))
        .map(|&pid| {
            (
                pid,
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " "),
            )
        })
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn ctrl_c_stops_everything_scripts_dev_started() {
    let (child, started, dir) = start_dev();
    assert!(
        started.len() >= 6,
        "service, worker, Chromium, sample site, Prometheus, moto, PostgreSQL: {started:?}"
    );
    // A terminal's Ctrl-C: SIGINT to the whole foreground process group.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    assert_all_stopped(child, &started, &dir);
}

#[test]
fn sigterm_to_the_script_stops_everything_it_started() {
    let (child, started, dir) = start_dev();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_all_stopped(child, &started, &dir);
}
