//! `<session>/processes.json`: the process groups of running tool commands, written (and
//! fsynced) before a command starts and cleared when it ends, so that a resume after a crash
//! can stop any group the dead engine left running (`leftovers.rs`, which proves a group the
//! engine's before it signals anything; `proc_stat.rs` reads `/proc`).
//!
//! A group is named by its pgid, the start time of its leader (`/proc/<pid>/stat` field 22,
//! clock ticks since boot), the boot id, and the SHA-256 of its supervisor's token
//! (`supervisor.rs`).

mod leftovers;
mod proc_stat;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use leftovers::{Leftovers, Refusal, RefusedGroup, StoppedGroup, stop_leftovers};
pub(crate) use proc_stat::proc_stat;

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
    /// The SHA-256 (hex) of the supervisor's token (`supervisor.rs`): what proves, on resume,
    /// that a live leader is this record's supervisor. A record without it is never killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_sha256: Option<String>,
}

/// This boot's id, if the kernel tells it.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The version written: 2 adds the supervisor's token hash (a version 1 record has none, so
/// a resume never kills its group).
const FILE_VERSION: u32 = 2;

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
            version: FILE_VERSION,
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

/// A record as the tests make one: no shell, no supervisor token, this boot.
#[cfg(test)]
fn test_record(pgid: i32, start_time: u64) -> GroupRecord {
    GroupRecord {
        pgid,
        start_time,
        tool_call_id: "c1".into(),
        boot_id: boot_id(),
        shell_id: None,
        command: None,
        supervisor_sha256: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_written_and_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let table = ProcessTable::new(dir.path());
        let record = test_record(77, 5);
        table.add(record.clone()).unwrap();
        let body: FileBody =
            serde_json::from_slice(&std::fs::read(dir.path().join(PROCESSES_FILE)).unwrap())
                .unwrap();
        assert_eq!(body.version, FILE_VERSION);
        assert_eq!(body.groups, [record]);
        table.remove(77).unwrap();
        assert!(!dir.path().join(PROCESSES_FILE).exists());
    }
}
