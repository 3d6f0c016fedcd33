//! Headless Chromium: launched once and kept warm, relaunched when it dies,
//! and killed with every process it started when the worker stops.
//!
//! It keeps every defence it has (SPEC §10 Isolation): its sandbox and site
//! isolation stay on; a worker running as root starts it as the unprivileged
//! [`BrowserUser`]; its environment is built from nothing, so no browser
//! process holds a secret of the worker; and CDP runs over
//! `--remote-debugging-pipe`, so no browser process listens on a port. A
//! browser that cannot start that way does not start at all.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use tokio::net::unix::pipe;
use tokio::sync::Mutex;

use crate::cdp::{self, CdpError, Connection, Done};
use crate::commands::{RunIfWaitingForDebugger, SetAutoAttach, SHARED_WORKERS_ONLY};
use crate::config::BrowserUser;
use crate::emulation::chrome_user_agent;
use crate::protocol::{AttachedToTarget, Event, PageEvent};

const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// Lines of Chromium's stderr kept to say why a launch failed.
const STDERR_TAIL: usize = 20;

/// Chromium's command line. Never `--no-sandbox`, never
/// `--disable-popup-blocking` (its popup blocker closes every popup before
/// it loads anything: the worker never gives a page a user gesture), never
/// a switch that turns
/// site isolation off (`--disable-site-isolation-trials`, `site-per-process`
/// or `IsolateOrigins` among the disabled features).
pub const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--mute-audio",
    "--password-store=basic",
    "--font-render-hinting=none",
    // A desktop's mouse: headless has no pointing device, so by default
    // `(hover: none)` and `(pointer: none)` match at every size (FACTS). A
    // phone's touch is emulated per page (`emulation.rs`).
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,availablePointerTypes=4",
    // A reader's browser is not automated (SPEC §14): `navigator.webdriver`
    // false in every document, by Chromium's own switch, not by a script
    // a page could see through.
    "--disable-blink-features=AutomationControlled",
    // All traffic through an egress proxy; `<-loopback>` stops Chromium's
    // implicit bypass for loopback addresses.
    "--proxy-bypass-list=<-loopback>",
    "--disable-quic",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    // Chromium's own traffic (autofill, hints) is no part of a capture.
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
    // CDP on fds 3 (commands in) and 4 (answers and events out).
    "--remote-debugging-pipe",
];

/// Of the worker's environment, only these reach Chromium (SPEC §10).
fn passes_to_browser(name: &str) -> bool {
    matches!(name, "PATH" | "LANG" | "TZ") || name.starts_with("LC_") || name.starts_with("FONTCONFIG_")
}

/// Chromium's environment: the variables that pass, and `HOME`/`TMPDIR` in
/// its own throwaway directory.
pub fn browser_env(
    worker_env: impl IntoIterator<Item = (OsString, OsString)>,
    home: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = worker_env
        .into_iter()
        .filter(|(name, _)| name.to_str().is_some_and(passes_to_browser))
        .collect();
    env.push(("HOME".into(), home.into()));
    env.push(("TMPDIR".into(), home.join("t").into()));
    env
}

/// One running browser.
pub struct Browser {
    pub cdp: Connection,
    pub version: String,
    /// The captures under way in it, by browser context.
    pub contexts: Contexts,
    pid: u32,
    home: PathBuf,
    /// Closed already: its process group is not signalled twice (the pid
    /// could name another group by then).
    closed: std::sync::atomic::AtomicBool,
}

impl Browser {
    /// `max_heap_mib`: the JavaScript heap any one renderer may grow to
    /// (V8's old space); a page that needs more crashes its renderer alone.
    async fn launch(chromium: &Path, guard_proxy: &str, user: &BrowserUser, max_heap_mib: u32) -> anyhow::Result<Self> {
        let as_root = nix::unistd::geteuid().is_root();
        let home = make_home(user, as_root)?;
        let profile = home.join("profile");
        let (commands_in, commands_out) = cloexec_pipe()?;
        let (answers_in, answers_out) = cloexec_pipe()?;
        let default_user_agent = chrome_user_agent(chrome_major(chromium).await?, false);
        let mut command = Command::new(chromium);
        command
            .args(CHROMIUM_ARGS)
            .arg(format!("--user-agent={default_user_agent}"))
            .arg(format!("--proxy-server={guard_proxy}"))
            .arg(format!("--js-flags=--max-old-space-size={max_heap_mib}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .env_clear()
            .envs(browser_env(std::env::vars_os(), &home))
            .current_dir(&home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        if as_root {
            // std drops the supplementary groups, then sets gid and uid.
            command.uid(user.uid).gid(user.gid);
        }
        pipes_at_3_and_4(&mut command, commands_in.as_raw_fd(), answers_out.as_raw_fd());
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", chromium.display()))?;
        // The browser's ends live on in the browser only.
        drop((commands_in, answers_out));
        let pid = child.id();
        let stderr = child.stderr.take().context("chromium stderr")?;
        // The std Child is never waited on: the reaper collects every exit.
        drop(child);
        let tail = stderr_tail(stderr)?;
        let (cdp, mut browser_events) = Connection::over_pipe(
            pipe::Sender::from_owned_fd(commands_out)?,
            pipe::Receiver::from_owned_fd(answers_in)?,
        );
        let contexts = Contexts::default();
        let (routed_cdp, routed) = (cdp.clone(), contexts.clone());
        tokio::spawn(async move {
            while let Some(event) = browser_events.recv().await {
                tracing::trace!(method = %event.method, "browser event");
                routed.route(&routed_cdp, &event);
            }
        });
        let version = match cdp.version(LAUNCH_TIMEOUT).await {
            Ok(version) => version,
            Err(e) => return Err(never_answered(e, pid, &home, &tail).await),
        };
        auto_attach_shared_workers(&cdp, LAUNCH_TIMEOUT)
            .await
            .context("attaching shared workers")?;
        crate::metrics::browser_version(&version);
        tracing::info!(pid, %version, user = %user.name, as_root, "chromium started");
        Ok(Self {
            cdp,
            version,
            contexts,
            pid,
            home,
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn is_alive(&self) -> bool {
        !self.cdp.is_closed()
    }

    /// Asks the browser to close, then kills its process group; once.
    pub async fn close(&self) {
        if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        match self.cdp.send(None, &Close {}, Duration::from_secs(2)).await {
            // The browser may end the pipe before it answers.
            Ok(Done {}) | Err(CdpError::Closed) => {}
            Err(e) => tracing::debug!(error = %e, pid = self.pid, "the browser did not close when asked; it is killed"),
        }
        for _ in 0..20 {
            if !process_exists(self.pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        kill_group(self.pid);
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// Shared workers, which Chromium attaches to no page (a page's
/// auto-attach never names them), attached at the browser's level, each
/// paused until [`Contexts::route`] has handed it to its capture.
async fn auto_attach_shared_workers(cdp: &Connection, timeout: Duration) -> Result<Done, CdpError> {
    let auto_attach = SetAutoAttach {
        auto_attach: true,
        wait_for_debugger_on_start: true,
        flatten: true,
        filter: Some(SHARED_WORKERS_ONLY),
    };
    cdp.send(None, &auto_attach, timeout).await
}

/// What a capture does with a target attached in its browser context at
/// the browser's level (`targets::attach`: set it up as its reader, then
/// run it).
pub type OnAttached = Arc<dyn Fn(&Connection, &AttachedToTarget) + Send + Sync>;

/// The captures under way in one browser, by browser context.
#[derive(Clone, Default)]
pub struct Contexts(Arc<std::sync::Mutex<HashMap<String, OnAttached>>>);

impl Contexts {
    pub fn register(&self, context_id: &str, on_attached: OnAttached) {
        self.map().insert(context_id.to_owned(), on_attached);
    }

    pub fn forget(&self, context_id: &str) {
        self.map().remove(context_id);
    }

    /// An event of the browser's own session: a target attached there goes
    /// to its capture; one of no capture (its context closed already) just
    /// runs, so that nothing waits on it.
    fn route(&self, cdp: &Connection, event: &Event) {
        let Some(PageEvent::AttachedToTarget(attached)) = PageEvent::read(event) else {
            return;
        };
        let context = attached.target_info.browser_context_id.as_deref().unwrap_or_default();
        let capture = self.map().get(context).cloned();
        match capture {
            Some(on_attached) => on_attached(cdp, &attached),
            None => {
                let (cdp, session) = (cdp.clone(), attached.session_id);
                tokio::spawn(async move {
                    let run = cdp.send(Some(&session), &RunIfWaitingForDebugger {}, LAUNCH_TIMEOUT);
                    if let Err(error) = run.await {
                        tracing::debug!(%error, "a target of no capture did not run (it may be gone)");
                    }
                });
            }
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, OnAttached>> {
        self.0.lock().expect("contexts lock")
    }
}

/// The major version of the Chromium at `chromium` (`chromium --version`:
/// `Chromium 156.0.8078.129 built on …`), read before it is launched, for
/// its default user agent: what Chromium fixes before any override reaches
/// it (a shared or service worker's `navigator.userAgent`, the fetch of a
/// service worker's script) says Chrome, as a reader's does, never
/// `HeadlessChrome`.
async fn chrome_major(chromium: &Path) -> anyhow::Result<u32> {
    let mut child = tokio::process::Command::new(chromium)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("asking {} for its version", chromium.display()))?;
    let mut printed = String::new();
    let stdout = child.stdout.take().context("chromium --version stdout")?;
    tokio::io::AsyncReadExt::read_to_string(&mut tokio::io::AsyncReadExt::take(stdout, 4096), &mut printed).await?;
    // Never waited on: the reaper collects every exit (`reaper.rs`), and a
    // wait here could find the child reaped already.
    drop(child);
    major_of_version_line(&printed).with_context(|| format!("{} printed no version: {printed:?}", chromium.display()))
}

fn major_of_version_line(line: &str) -> Option<u32> {
    line.split_whitespace()
        .find_map(|word| word.split('.').next()?.parse().ok().filter(|_| word.contains('.')))
}

/// Keeps one browser warm, replaces it when it has died, and relaunches it
/// after `max_captures` captures (SPEC §10).
pub struct BrowserSlot {
    chromium: PathBuf,
    guard_proxy: String,
    user: BrowserUser,
    max_captures: u32,
    max_heap_mib: u32,
    /// The running browser and how many captures it was handed out for.
    current: Mutex<Option<(Arc<Browser>, u32)>>,
    /// Relaunched browsers waiting for their last capture to end (held by
    /// their `retire` task).
    retiring: std::sync::Mutex<Vec<std::sync::Weak<Browser>>>,
}

/// How often a retired browser is checked for captures still using it.
const RETIRE_POLL: Duration = Duration::from_millis(100);

impl BrowserSlot {
    pub fn new(
        chromium: PathBuf,
        guard_proxy: String,
        user: BrowserUser,
        max_captures: u32,
        max_heap_mib: u32,
    ) -> Self {
        Self {
            chromium,
            guard_proxy,
            user,
            max_captures: max_captures.max(1),
            max_heap_mib,
            current: Mutex::new(None),
            retiring: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Launches the browser before the first capture asks for it.
    pub async fn warm(&self) -> anyhow::Result<()> {
        let mut current = self.current.lock().await;
        if current.is_none() {
            let browser = Browser::launch(&self.chromium, &self.guard_proxy, &self.user, self.max_heap_mib).await?;
            *current = Some((Arc::new(browser), 0));
        }
        Ok(())
    }

    /// The browser for one more capture: the running one, or a new one if
    /// there is none, it died, or it has served `max_captures` captures.
    /// A browser relaunched that way is closed (its process group killed
    /// and reaped) once the last capture still using it has ended, never
    /// in the middle of one.
    pub async fn get(&self) -> anyhow::Result<Arc<Browser>> {
        self.get_for(1).await
    }

    /// [`BrowserSlot::get`] for `captures` captures one after another (an
    /// import set's members, SPEC §15): counted all at once, and never
    /// relaunched in their middle.
    pub async fn get_for(&self, captures: u32) -> anyhow::Result<Arc<Browser>> {
        let mut current = self.current.lock().await;
        if let Some((browser, served)) = current.as_mut() {
            if browser.is_alive() && *served < self.max_captures {
                *served += captures;
                return Ok(browser.clone());
            }
        }
        if let Some((browser, _)) = current.take() {
            if browser.is_alive() {
                tracing::info!(
                    pid = browser.pid,
                    captures = self.max_captures,
                    "relaunching the browser"
                );
                crate::metrics::browser_relaunched();
                let mut retiring = self.retiring.lock().expect("retiring lock");
                retiring.retain(|browser| browser.strong_count() > 0);
                retiring.push(Arc::downgrade(&browser));
                tokio::spawn(retire(browser));
            } else {
                tracing::warn!(pid = browser.pid, "chromium died; starting a new one");
                crate::metrics::browser_restarted();
                browser.close().await;
            }
        }
        let browser =
            Arc::new(Browser::launch(&self.chromium, &self.guard_proxy, &self.user, self.max_heap_mib).await?);
        *current = Some((browser.clone(), captures));
        Ok(browser)
    }

    /// The running browser's product string (`Chrome/156…`).
    pub async fn version(&self) -> String {
        match self.current.lock().await.as_ref() {
            Some((browser, _)) => browser.version.clone(),
            None => "unknown".into(),
        }
    }

    /// Closes the running browser and every relaunched one not closed yet
    /// (the worker has let their captures finish, or given up on them).
    pub async fn shutdown(&self) {
        if let Some((browser, _)) = self.current.lock().await.take() {
            browser.close().await;
        }
        let retiring = std::mem::take(&mut *self.retiring.lock().expect("retiring lock"));
        for browser in retiring.iter().filter_map(std::sync::Weak::upgrade) {
            browser.close().await;
        }
    }
}

/// Closes a relaunched browser once no capture holds it any more.
async fn retire(browser: Arc<Browser>) {
    while Arc::strong_count(&browser) > 1 {
        tokio::time::sleep(RETIRE_POLL).await;
    }
    browser.close().await;
}

fn kill_group(pid: u32) {
    // SAFETY: kill(2) with a negative pid signals the process group Chromium leads.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

fn process_exists(pid: u32) -> bool {
    // A zombie still "exists" for kill(0); its /proc state says Z.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A pipe whose two ends are closed on exec (the child gets its copies by
/// `dup2` alone).
fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Why a launch failed, from Chromium's last stderr lines: the last fatal or
/// error message without its `[pid:tid:time:LEVEL:file(line)]` prefix.
fn why(tail: &VecDeque<String>) -> String {
    let last = |pattern: &str| tail.iter().rev().find(|l| l.contains(pattern));
    let line = last(":FATAL:")
        .or_else(|| last(":ERROR:"))
        .or_else(|| tail.iter().rev().find(|l| !l.trim().is_empty()));
    match line {
        Some(line) => {
            let message = line.split_once("] ").map_or(line.as_str(), |(_, m)| m);
            message.chars().take(300).collect()
        }
        None => "it exited without a message".into(),
    }
}

/// A browser that did not answer its first command, killed, its directory
/// removed: why, with what it said on stderr.
async fn never_answered(
    error: CdpError,
    pid: u32,
    home: &Path,
    tail: &std::sync::Mutex<VecDeque<String>>,
) -> anyhow::Error {
    kill_group(pid);
    if let Err(e) = std::fs::remove_dir_all(home) {
        tracing::debug!(error = %e, home = %home.display(), "a failed browser's directory could not be removed");
    }
    // Give the stderr thread a moment to read Chromium's last words.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let tail = tail.lock().expect("stderr tail lock");
    anyhow::anyhow!(
        "chromium did not answer over its debugging pipe ({error}): {}",
        why(&tail)
    )
}

/// The browser's own directory (profile, HOME, TMPDIR), owned by the user
/// it runs as. Short: Chromium's singleton socket lives below TMPDIR, and a
/// Unix socket path has at most 107 bytes.
fn make_home(user: &BrowserUser, as_root: bool) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let home = std::env::temp_dir().join(format!("chromium-{}", &id[..12]));
    let mut builder = std::fs::DirBuilder::new();
    builder.mode(0o700).recursive(true);
    for dir in [&home, &home.join("profile"), &home.join("t")] {
        builder
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        if as_root {
            std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid))
                .with_context(|| format!("handing {} to {}", dir.display(), user.name))?;
        }
    }
    Ok(home)
}

/// The browser gets `to_browser` as its fd 3 (what it reads commands
/// from) and `from_browser` as its fd 4 (where it writes answers).
fn pipes_at_3_and_4(command: &mut Command, to_browser: i32, from_browser: i32) {
    // SAFETY: between fork and exec only async-signal-safe calls
    // (fcntl, dup2, close) on descriptors this process owns.
    unsafe {
        command.pre_exec(move || {
            // Copies above 3 and 4 first, so neither dup2 can overwrite
            // the other's source; dup2's copies are not close-on-exec.
            let read = libc::fcntl(to_browser, libc::F_DUPFD, 10);
            let write = libc::fcntl(from_browser, libc::F_DUPFD, 10);
            if read < 0 || write < 0 || libc::dup2(read, 3) < 0 || libc::dup2(write, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(read);
            libc::close(write);
            Ok(())
        });
    }
}

/// The last [`STDERR_TAIL`] lines of Chromium's stderr, kept by a thread
/// of their own (each line traced), for what it said before it died.
fn stderr_tail(stderr: std::process::ChildStderr) -> std::io::Result<Arc<std::sync::Mutex<VecDeque<String>>>> {
    let tail = Arc::new(std::sync::Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
    let sink = tail.clone();
    std::thread::Builder::new()
        .name("chromium-stderr".into())
        .spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                tracing::trace!(target: "chromium", "{line}");
                let mut tail = sink.lock().expect("stderr tail lock");
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        })?;
    Ok(tail)
}

/// `Browser.close`.
#[derive(Serialize)]
struct Close {}

impl cdp::Command for Close {
    const METHOD: &'static str = "Browser.close";
    type Reply = Done;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_version_is_read_from_chromiums_version_line() {
        assert_eq!(
            major_of_version_line("Chromium 156.0.8078.129 built on Debian GNU/Linux 12 (bookworm)\n"),
            Some(156)
        );
        assert_eq!(major_of_version_line("Google Chrome 157.0.1.2 \n"), Some(157));
        assert_eq!(major_of_version_line("Chromium\n"), None);
        assert_eq!(
            major_of_version_line("Chromium 12 built"),
            None,
            "a word without a dot is no version"
        );
    }

    #[test]
    fn the_browser_environment_holds_nothing_of_the_worker_but_locale_path_and_fonts() {
        let worker = [
            ("PATH", "/usr/bin"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TZ", "UTC"),
            ("FONTCONFIG_PATH", "/etc/fonts"),
            ("WEBHOOK_SECRET", "whsec_x"),
            ("AWS_SECRET_ACCESS_KEY", "k"),
            ("AWS_ACCESS_KEY_ID", "a"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer collector-token"),
            ("DATABASE_URL", "postgres://"),
            ("HOME", "/root"),
            ("TMPDIR", "/secret-tmp"),
            ("LD_PRELOAD", "/x.so"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = browser_env(worker, Path::new("/tmp/b"));
        let names: Vec<_> = env
            .iter()
            .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("PATH", "/usr/bin"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C.UTF-8"),
                ("TZ", "UTC"),
                ("FONTCONFIG_PATH", "/etc/fonts"),
                ("HOME", "/tmp/b"),
                ("TMPDIR", "/tmp/b/t"),
            ]
        );
    }

    #[test]
    fn the_command_line_keeps_the_sandbox_site_isolation_and_the_popup_blocker() {
        for arg in CHROMIUM_ARGS {
            assert_ne!(*arg, "--no-sandbox");
            assert_ne!(*arg, "--disable-popup-blocking");
            assert!(
                !arg.contains("site-isolation") && !arg.contains("site-per-process") && !arg.contains("IsolateOrigins")
            );
            assert!(!arg.starts_with("--remote-debugging-port"));
        }
    }

    #[test]
    fn a_launch_failure_is_told_by_chromiums_last_fatal_line() {
        let tail: VecDeque<String> = [
            "[1:1:1201/120000.000000:WARNING:x.cc(1)] something",
            "[1:1:1201/120000.000000:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox!",
            "[1201/120000.000000:ERROR:file_io_posix.cc:145] open /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq: No such file or directory (2)",
            "",
        ]
        .map(String::from)
        .into();
        assert_eq!(why(&tail), "No usable sandbox!");
        assert_eq!(why(&VecDeque::new()), "it exited without a message");
    }
}
