//! The worker adopts and reaps every process Chromium leaves behind.
//!
//! Chromium's crashpad handler runs in its own process group and orphaned
//! zygotes are reparented: without a subreaper they end up as zombies under
//! PID 1 (often a shell or `sleep` in a container, which reaps nothing). As a
//! subreaper the worker becomes their parent, and one thread collects every
//! exit with `waitpid(-1)`.

use std::time::{Duration, Instant};

/// Makes this process the subreaper of its descendants and starts reaping.
pub fn start() -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    std::thread::Builder::new().name("reaper".into()).spawn(|| loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid pointer to an int.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid <= 0 {
            // No children right now (ECHILD): look again soon.
            std::thread::sleep(Duration::from_millis(200));
        }
    })?;
    Ok(())
}

/// The pids whose parent is this process.
pub fn children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // Fields after the command name: state, ppid, …
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
                    == Some(me)
            })
        })
        .collect()
}

/// Kills every child (and, as they are reparented to us, their children)
/// until none is left or `within` has passed; the reaper collects them.
pub fn kill_all_children(within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let children = children();
        if children.is_empty() {
            return;
        }
        for pid in children {
            // SAFETY: signalling a child of ours by pid.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::warn!(left = children().len(), "child processes still present at exit");
}
