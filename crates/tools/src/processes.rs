//! `<session>/processes.json`: the process groups of running tool commands, written (and
//! fsynced) before a command starts and cleared when it ends, so that a resume after a crash
//! can stop any group the dead engine left running.
//!
//! A group is named by its pgid, the start time of its leader (`/proc/<pid>/stat` field 22,
//! clock ticks since boot) and the boot id. Before a group is killed it must be the one
//! recorded: same boot; if its leader (pid == pgid) is alive, the leader's start time equals
//! the recorded one (a reused pid starts later); if the leader is gone, every process still in
//! the group started at or after that time (a pgid is not handed out while any process is in
//! the group, so such members joined the recorded group). The one case this cannot tell apart
//! is a pgid reused by a new group whose leader then died while its members lived on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The side file's name inside the session directory.
pub const PROCESSES_FILE: &str = "processes.json";

/// One recorded process group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupRecord {
    /// The process group id (the leader's pid).
    pub pgid: i32,
    /// The leader's start time, in clock ticks since boot.
    pub start_time: u64,
    /// The tool call that started it.
    pub tool_call_id: String,
    /// `/proc/sys/kernel/random/boot_id` when it started (start times count from boot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The shell the command ran in, so a resume can tell the model which shells were lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_id: Option<String>,
    /// The command line, for the same telling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// This boot's id, if the kernel tells it.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileBody {
    version: u32,
    groups: Vec<GroupRecord>,
}

/// Errors of the side file.
#[derive(Debug, thiserror::Error)]
pub enum ProcessesError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The file is not what this version writes.
    #[error("{path}: not a process list ({message}); delete it if no tool command is running")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

/// The live table of one session's running tool process groups.
#[derive(Debug)]
pub struct ProcessTable {
    path: PathBuf,
    groups: Mutex<Vec<GroupRecord>>,
}

impl ProcessTable {
    /// An empty table kept in `<dir>/processes.json`.
    pub fn new(dir: &Path) -> Self {
        ProcessTable {
            path: dir.join(PROCESSES_FILE),
            groups: Mutex::new(Vec::new()),
        }
    }

    /// Records a group and makes the record durable (file and directory fsynced).
    pub fn add(&self, record: GroupRecord) -> Result<(), ProcessesError> {
        let mut groups = self.lock();
        groups.push(record);
        let written = self.write(&groups, true);
        if written.is_err() {
            groups.pop();
        }
        written
    }

    /// Forgets a group that ended. Not fsynced (this runs at the end of every tool call): a
    /// stale record is harmless (checked before any kill) while a missing one is not.
    pub fn remove(&self, pgid: i32) -> Result<(), ProcessesError> {
        let mut groups = self.lock();
        groups.retain(|g| g.pgid != pgid);
        self.write(&groups, false)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<GroupRecord>> {
        self.groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self, groups: &[GroupRecord], durable: bool) -> Result<(), ProcessesError> {
        let io = |source| ProcessesError::Io {
            path: self.path.clone(),
            source,
        };
        if groups.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
                _ => Ok(()),
            };
        }
        let body = FileBody {
            version: 1,
            groups: groups.to_vec(),
        };
        let text = serde_json::to_vec(&body).map_err(|e| io(std::io::Error::other(e)))?;
        // Replaced whole: a crash leaves the old list or the new one, never half.
        turnstile_home::AtomicWrite::new(&self.path)
            .durable(durable)
            .write(|out| out.write_all(&text))
            .map_err(|e| io(e.into()))?;
        Ok(())
    }
}

/// A group a resume found still running and killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoppedGroup {
    /// The record it matched.
    pub record: GroupRecord,
    /// How many processes were in it.
    pub processes: usize,
}

/// The shells recorded in `<dir>/processes.json` by an engine that did not end them: whether
/// their groups are still running or died with the engine, they are lost. Read before
/// [`stop_leftovers`] removes the file; a missing or damaged file names none.
pub fn lost_shells(dir: &Path) -> Vec<GroupRecord> {
    std::fs::read(dir.join(PROCESSES_FILE))
        .ok()
        .and_then(|text| serde_json::from_slice::<FileBody>(&text).ok())
        .map(|body| {
            body.groups
                .into_iter()
                .filter(|g| g.shell_id.is_some())
                .collect()
        })
        .unwrap_or_default()
}

/// Reads `<dir>/processes.json` left by an engine that did not end its commands, kills every
/// recorded group that is still ours (see the module doc), and removes the file.
pub fn stop_leftovers(dir: &Path) -> Result<Vec<StoppedGroup>, ProcessesError> {
    let path = dir.join(PROCESSES_FILE);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ProcessesError::Io { path, source }),
    };
    let body: FileBody = serde_json::from_slice(&text).map_err(|e| ProcessesError::Format {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut stopped = Vec::new();
    let boot = boot_id();
    for record in body.groups {
        let members = group_members(record.pgid);
        if record.boot_id.is_some() && record.boot_id != boot {
            continue;
        }
        let leader = members.iter().find(|p| p.pid == record.pgid);
        let ours = match leader {
            Some(leader) => leader.start_time == record.start_time,
            None => {
                !members.is_empty() && members.iter().all(|p| p.start_time >= record.start_time)
            }
        };
        if ours {
            // SAFETY: killpg only sends a signal, to a group checked just above to be the one
            // recorded (its pgid cannot be reused while these members exist).
            unsafe {
                libc::killpg(record.pgid, libc::SIGKILL);
            }
            stopped.push(StoppedGroup {
                record,
                processes: members.len(),
            });
        }
    }
    std::fs::remove_file(&path).map_err(|source| ProcessesError::Io { path, source })?;
    Ok(stopped)
}

/// A process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) pid: i32,
    pub(crate) pgrp: i32,
    pub(crate) start_time: u64,
    pub(crate) zombie: bool,
}

/// Parses `/proc/<pid>/stat`; `None` when the process is gone.
pub(crate) fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<ProcStat> {
    // The command name (field 2) may hold spaces and parentheses: fields resume after the
    // last ')'. Then: 3 state, 4 ppid, 5 pgrp, ..., 22 starttime.
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_whitespace().next()?.parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        pid,
        zombie: *fields.first()? == "Z",
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// The live (non-zombie) processes of group `pgid`.
fn group_members(pgid: i32) -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_stat)
        .filter(|s| s.pgrp == pgid && !s.zombie)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                pid: 4242,
                pgrp: 4242,
                start_time: 987654,
                zombie: false
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1"), None);
    }

    #[test]
    fn the_table_is_written_and_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let table = ProcessTable::new(dir.path());
        let record = GroupRecord {
            pgid: 77,
            start_time: 5,
            tool_call_id: "c1".into(),
            boot_id: boot_id(),
            shell_id: None,
            command: None,
        };
        table.add(record.clone()).unwrap();
        let body: FileBody =
            serde_json::from_slice(&std::fs::read(dir.path().join(PROCESSES_FILE)).unwrap())
                .unwrap();
        assert_eq!(body.groups, [record]);
        table.remove(77).unwrap();
        assert!(!dir.path().join(PROCESSES_FILE).exists());
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PROCESSES_FILE), "{not json").unwrap();
        let err = stop_leftovers(dir.path()).unwrap_err();
        assert!(err.to_string().contains(PROCESSES_FILE), "{err}");
        assert!(dir.path().join(PROCESSES_FILE).exists(), "nothing is lost");
    }

    /// A tree in its own group, started the way a tool's is but without the engine-death
    /// signal: it survives its parent, as a group left by a killed engine would.
    fn orphan_tree() -> (std::process::Child, i32) {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sh")
            .args(["-c", "sleep 300 & sleep 300; wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        // Wait (boundedly) until both sleeps are in the group.
        for _ in 0..500 {
            if group_members(pgid).len() >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        (child, pgid)
    }

    #[test]
    fn a_recorded_group_still_running_is_killed_whole() {
        let (mut child, pgid) = orphan_tree();
        assert_eq!(group_members(pgid).len(), 3);
        let dir = tempfile::tempdir().unwrap();
        let start_time = proc_stat(pgid).unwrap().start_time;
        let record = GroupRecord {
            pgid,
            start_time,
            tool_call_id: "c1".into(),
            boot_id: boot_id(),
            shell_id: None,
            command: None,
        };
        ProcessTable::new(dir.path()).add(record.clone()).unwrap();
        let stopped = stop_leftovers(dir.path()).unwrap();
        assert_eq!(
            stopped,
            [StoppedGroup {
                record,
                processes: 3
            }]
        );
        child.wait().unwrap();
        for _ in 0..500 {
            if group_members(pgid).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(group_members(pgid), [], "the whole tree is gone");
        assert!(!dir.path().join(PROCESSES_FILE).exists());
    }

    #[test]
    fn a_group_whose_leader_started_at_another_time_is_not_ours() {
        // As if the recorded group had ended and its pgid now named an older stranger.
        let (mut child, pgid) = orphan_tree();
        let dir = tempfile::tempdir().unwrap();
        let start_time = proc_stat(pgid).unwrap().start_time + 1_000_000;
        ProcessTable::new(dir.path())
            .add(GroupRecord {
                pgid,
                start_time,
                tool_call_id: "c1".into(),
                boot_id: boot_id(),
                shell_id: None,
                command: None,
            })
            .unwrap();
        assert_eq!(stop_leftovers(dir.path()).unwrap(), []);
        assert_eq!(group_members(pgid).len(), 3, "left alone");
        // SAFETY: the group this test started.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        child.wait().unwrap();
    }
}
