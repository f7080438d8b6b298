//! The Copilot CLI's in-use marker: `inuse.<pid>.lock` in the session directory, holding the
//! pid and a newline, present while a process has the session open.
//!
//! The real CLI takes no OS lock (it cannot see turnstile's `writer.lock` flock) and turnstile's
//! flock is invisible to it, so each side also honours the other's marker: turnstile writes one
//! next to its flock while it holds a session, and treats a live process's marker as a holder.
//! A marker whose process is gone (a `kill -9`), or whose pid now names a younger process (pid
//! reuse: the marker is older than the process), is stale and removed, as the real CLI removes
//! markers of dead pids.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::layout::LayoutError;
use crate::session_dir::SessionDir;

const PREFIX: &str = "inuse.";
const SUFFIX: &str = ".lock";

/// The marker file name of a process.
pub fn marker_name(pid: u32) -> String {
    format!("{PREFIX}{pid}{SUFFIX}")
}

/// The pid a marker file name stands for (`inuse.<pid>.lock`), if it is one.
pub fn marker_pid(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&pid| pid > 0)
}

/// A live process's marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The holder's pid.
    pub pid: u32,
    /// The marker file.
    pub path: PathBuf,
    /// When it was written (its mtime).
    pub since: Option<SystemTime>,
}

/// Whether `pid` is a live process that could have written a marker at `written`.
fn holds(pid: u32, written: Option<SystemTime>) -> bool {
    let Some(raw) = rustix::process::Pid::from_raw(pid as i32) else {
        return false;
    };
    match rustix::process::test_kill_process(raw) {
        // EPERM: alive, owned by someone else.
        Ok(()) | Err(rustix::io::Errno::PERM) => {}
        Err(_) => return false,
    }
    // A zombie (killed, not yet reaped by its parent) answers kill(0) but holds nothing.
    if process_state(pid).is_some_and(|s| s == 'Z' || s == 'X') {
        return false;
    }
    // A process that started after the marker was written is not its writer (the pid was
    // reused). /proc's start time has clock-tick precision on top of a boot time in whole
    // seconds, hence the slack.
    match (written, process_start(pid)) {
        (Some(written), Some(started)) => written + Duration::from_secs(2) >= started,
        _ => true,
    }
}

/// The one-letter state of process `pid` (`R`, `S`, `Z`...), from `/proc/<pid>/stat`.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// When process `pid` started, from `/proc/<pid>/stat` and the boot time in `/proc/stat`.
pub fn process_start(pid: u32) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces or ')': fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 22 (starttime) is the 20th after the name (state is field 3).
    let ticks: u64 = rest.split_ascii_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    let nanos = boot
        .checked_mul(1_000_000_000)?
        .checked_add(ticks.checked_mul(1_000_000_000)? / hz)?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos))
}

/// Finds another live process's marker; removes stale ones (logged). `own` is skipped.
pub fn live_holder(dir: &SessionDir, own: u32) -> Result<Option<Marker>, LayoutError> {
    for name in dir.entry_names()? {
        let Some(pid) = marker_pid(&name) else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Some(stat) = dir.stat(&name)? else {
            continue;
        };
        let since = SystemTime::UNIX_EPOCH.checked_add(Duration::new(
            u64::try_from(stat.st_mtime).unwrap_or(0),
            u32::try_from(stat.st_mtime_nsec).unwrap_or(0),
        ));
        if holds(pid, since) {
            return Ok(Some(Marker {
                pid,
                path: dir.join(&name),
                since,
            }));
        }
        tracing::warn!(marker = %dir.join(&name).display(), pid, "removing a stale in-use marker: its process is gone (or its pid now names a younger process)");
        dir.remove(&name)?;
    }
    Ok(None)
}

/// Writes this process's marker (`<pid>\n`, mode 0644 as the CLI's), replacing a leftover of
/// an earlier process that had the same pid.
pub fn write_own(dir: &SessionDir, pid: u32) -> Result<(), LayoutError> {
    let name = marker_name(pid);
    // A marker of our own pid is a leftover (the flock is held by us now): replace it.
    dir.remove(&name)?;
    // Mode 0644, as the Copilot CLI writes its markers: the pid is no secret, and a session
    // directory laid out as the CLI's has the same modes.
    let mut file = dir.create_new_with_mode(&name, 0o644)?;
    file.write_all(format!("{pid}\n").as_bytes())
        .map_err(|source| LayoutError::Io {
            path: dir.join(&name),
            source,
        })
}

/// Removes this process's marker.
pub fn remove_own(dir: &SessionDir, pid: u32) -> Result<(), LayoutError> {
    dir.remove(&marker_name(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_like_the_runtime() {
        assert_eq!(marker_pid("inuse.7107.lock"), Some(7107));
        assert_eq!(marker_name(7107), "inuse.7107.lock");
        for bad in [
            "inuse.junk.lock",
            "inuse..lock",
            "inuse.0.lock",
            "inuse.-1.lock",
            "writer.lock",
            "inuse.12.lock.bak",
        ] {
            assert_eq!(marker_pid(bad), None, "{bad}");
        }
    }

    #[test]
    fn own_process_started_before_now() {
        let started = process_start(std::process::id()).expect("/proc is mounted");
        assert!(started <= SystemTime::now());
        assert!(holds(std::process::id(), Some(SystemTime::now())));
    }

    #[test]
    fn a_marker_older_than_its_process_is_a_reused_pid() {
        // pid 1 is alive, but a marker from 1970 cannot have been written by it.
        assert!(!holds(1, Some(SystemTime::UNIX_EPOCH)));
    }

    #[test]
    fn an_unreaped_killed_process_holds_nothing() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(holds(child.id(), Some(SystemTime::now())));
        child.kill().unwrap();
        // Not reaped yet: a zombie. Wait until the kernel has made it one.
        while process_state(child.id()).is_some_and(|s| s != 'Z') {
            std::thread::yield_now();
        }
        assert!(!holds(child.id(), Some(SystemTime::now())));
        child.wait().unwrap();
    }

    #[test]
    fn dead_pid_markers_are_removed_live_ones_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SessionDir::open(tmp.path()).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(tmp.path().join(marker_name(dead)), format!("{dead}\n")).unwrap();
        std::fs::write(tmp.path().join("inuse.junk.lock"), "x").unwrap();
        assert_eq!(live_holder(&dir, std::process::id()).unwrap(), None);
        assert!(
            !tmp.path().join(marker_name(dead)).exists(),
            "stale marker removed"
        );
        assert!(
            tmp.path().join("inuse.junk.lock").exists(),
            "foreign names left alone"
        );

        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        write_own(&dir, sleeper.id()).unwrap();
        let holder = live_holder(&dir, std::process::id())
            .unwrap()
            .expect("live");
        assert_eq!(holder.pid, sleeper.id());
        assert_eq!(
            std::fs::read_to_string(&holder.path).unwrap(),
            format!("{}\n", sleeper.id())
        );
        // The CLI's mode, less what this process's umask takes away.
        let umask = std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&holder.path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o644 & !umask);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert_eq!(live_holder(&dir, std::process::id()).unwrap(), None);
    }
}
