//! `<session>/processes.json`: the process groups of running tool commands, written (and
//! fsynced) before a command starts and cleared when it ends, so that a resume after a crash
//! can stop any group the dead engine left running.
//!
//! A group is named by its pgid, the start time of its leader (`/proc/<pid>/stat` field 22,
//! clock ticks since boot), the boot id, and the SHA-256 of its supervisor's token
//! (`supervisor.rs`). A resume kills a group only when it is provably the engine's own tool
//! supervisor's ([`stop_leftovers`]), each check refusing before anything is signalled:
//!
//! 1. the pgid is 2 or more (0 would be the resuming engine's own group, 1 init's, and a
//!    negative one every process it may signal);
//! 2. the record is from this boot (start times count from boot);
//! 3. the leader (pid == pgid) is alive, leads that group, and started exactly at the recorded
//!    time (a reused pid starts later);
//! 4. the leader is the supervisor the record names: its command line is the supervisor's and
//!    its environment holds the token whose hash was recorded ([`supervisor::check`]);
//! 5. read again after those checks, the leader is unchanged.
//!
//! A group whose leader is gone is not killed, even if processes remain in it: nothing proves
//! them the engine's (a tool can read its supervisor's token, not forge its leadership). Any
//! record that fails a check while something still runs under its pgid or pid is returned as
//! refused, with the reason, for the resume to report; a group that simply ended says nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::supervisor::{self, NotSupervisor};

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

/// A group a resume found still running and killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoppedGroup {
    /// The record it matched.
    pub record: GroupRecord,
    /// How many processes were in it.
    pub processes: usize,
}

/// A record a resume did not act on although something runs under its pgid or pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedGroup {
    /// The record.
    pub record: GroupRecord,
    /// Which check it failed.
    pub reason: Refusal,
}

/// Why a recorded group was not killed (the module doc's checks, in order).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The pgid is below 2: 0, 1 and negative ids name no single group of the engine's.
    #[error("a process group id below 2 names no group the engine started")]
    NotAGroupId,
    /// Recorded during another boot, or the boot is unknown.
    #[error("it was recorded before the machine last started (or the boot is unknown)")]
    OtherBoot,
    /// The leader is gone; these processes remain in the group.
    #[error(
        "its supervisor is gone and nothing proves the {processes} process(es) left in the group the engine's"
    )]
    LeaderGone {
        /// How many processes remain.
        processes: usize,
    },
    /// A process has the leader's pid but started at another time or leads no such group.
    #[error("the process with its leader's id is another one (the id was reused)")]
    NotTheLeader,
    /// The record names no supervisor token (an older engine's).
    #[error("the record does not name the supervisor's token")]
    NoIdentity,
    /// The leader is not the recorded supervisor.
    #[error("its leader is not the recorded supervisor: {0}")]
    NotSupervisor(#[from] NotSupervisor),
    /// The leader changed while it was checked.
    #[error("its leader changed while it was checked")]
    Changed,
}

/// What a resume did with `processes.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// The groups proven the engine's and killed.
    pub stopped: Vec<StoppedGroup>,
    /// The records refused while something ran under them.
    pub refused: Vec<RefusedGroup>,
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
/// recorded group proven to be the engine's (see the module doc), returns those and the ones
/// refused, and removes the file.
pub fn stop_leftovers(dir: &Path) -> Result<Leftovers, ProcessesError> {
    let path = dir.join(PROCESSES_FILE);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Leftovers::default()),
        Err(source) => return Err(ProcessesError::Io { path, source }),
    };
    let body: FileBody = serde_json::from_slice(&text).map_err(|e| ProcessesError::Format {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut left = Leftovers::default();
    let boot = boot_id();
    for record in body.groups {
        match judge(&record, boot.as_deref()) {
            Judged::Gone => {}
            Judged::Refused(reason) => left.refused.push(RefusedGroup { record, reason }),
            Judged::Proven(proof) => {
                let processes = proof.kill();
                left.stopped.push(StoppedGroup { record, processes });
            }
        }
    }
    std::fs::remove_file(&path).map_err(|source| ProcessesError::Io { path, source })?;
    Ok(left)
}

/// A process group id that names one group: 2 or more. Only [`judge`] makes one.
#[derive(Debug, Clone, Copy)]
struct GroupId(i32);

impl GroupId {
    fn new(pgid: i32) -> Option<GroupId> {
        (pgid >= 2).then_some(GroupId(pgid))
    }
}

/// A group proven to be the engine's supervisor's: the only thing that can be killed.
#[derive(Debug)]
struct Proof {
    pgid: GroupId,
    processes: usize,
}

impl Proof {
    /// SIGKILLs the group; returns how many processes it had when checked.
    fn kill(self) -> usize {
        // SAFETY: killpg only sends a signal, to a group id of at least 2 (`GroupId`) whose
        // leader was proven, just before, to be the recorded supervisor; the pgid cannot name
        // another group while that leader lives.
        unsafe {
            libc::killpg(self.pgid.0, libc::SIGKILL);
        }
        self.processes
    }
}

/// What the checks found of one record.
#[derive(Debug)]
enum Judged {
    /// Nothing runs under its pgid or pid: the group ended.
    Gone,
    /// Something runs there that is not proven ours.
    Refused(Refusal),
    /// The recorded supervisor's group, still running.
    Proven(Proof),
}

/// The module doc's checks, in order; reads `/proc` only, signals nothing.
fn judge(record: &GroupRecord, boot: Option<&str>) -> Judged {
    let Some(pgid) = GroupId::new(record.pgid) else {
        return Judged::Refused(Refusal::NotAGroupId);
    };
    let leader = proc_stat(pgid.0).filter(|s| !s.zombie);
    let members = group_members(pgid.0);
    if leader.is_none() && members.is_empty() {
        return Judged::Gone;
    }
    if boot.is_none() || record.boot_id.as_deref() != boot {
        return Judged::Refused(Refusal::OtherBoot);
    }
    let Some(leader) = leader else {
        return Judged::Refused(Refusal::LeaderGone {
            processes: members.len(),
        });
    };
    if leader.pgrp != pgid.0 || leader.start_time != record.start_time {
        return Judged::Refused(Refusal::NotTheLeader);
    }
    let Some(sha256) = &record.supervisor_sha256 else {
        return Judged::Refused(Refusal::NoIdentity);
    };
    if let Err(e) = supervisor::check(pgid.0, record.command.as_deref(), sha256) {
        return Judged::Refused(e.into());
    }
    // The proof read several files; the leader it read must still be the one there.
    if proc_stat(pgid.0) != Some(leader) {
        return Judged::Refused(Refusal::Changed);
    }
    Judged::Proven(Proof {
        pgid,
        processes: members.len(),
    })
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
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use crate::bash::BashTool;
    use crate::{Tool, ToolContext};

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

    fn record(pgid: i32, start_time: u64) -> GroupRecord {
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

    #[test]
    fn the_table_is_written_and_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let table = ProcessTable::new(dir.path());
        let record = record(77, 5);
        table.add(record.clone()).unwrap();
        let body: FileBody =
            serde_json::from_slice(&std::fs::read(dir.path().join(PROCESSES_FILE)).unwrap())
                .unwrap();
        assert_eq!(body.version, FILE_VERSION);
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

    /// Replaces `<dir>/processes.json` with `records`, as anyone able to write it could.
    fn craft(dir: &Path, records: &[GroupRecord]) {
        let body = FileBody {
            version: FILE_VERSION,
            groups: records.to_vec(),
        };
        std::fs::write(dir.join(PROCESSES_FILE), serde_json::to_vec(&body).unwrap()).unwrap();
    }

    fn alive(pid: i32) -> bool {
        proc_stat(pid).is_some_and(|s| !s.zombie)
    }

    /// Waits (boundedly; no assertion depends on the time) until `done`.
    fn wait_until(mut done: impl FnMut() -> bool) -> bool {
        (0..1500).any(|_| {
            let now = done();
            if !now {
                std::thread::sleep(Duration::from_millis(10));
            }
            now
        })
    }

    /// The supervisor, the command's shell and two sleeps.
    const TREE: &str = "sleep 300 & sleep 300; wait";

    /// A command running under a real supervisor, started by the `bash` tool the way a
    /// session starts it (recorded in `dir`'s `processes.json`), as a crashed engine would
    /// have left it.
    struct Supervised {
        dir: tempfile::TempDir,
        ctx: ToolContext,
        record: GroupRecord,
    }

    impl Supervised {
        async fn start() -> Supervised {
            let dir = tempfile::tempdir().unwrap();
            let mut ctx = ToolContext::new(dir.path());
            ctx.processes = Some(Arc::new(ProcessTable::new(dir.path())));
            ctx.tool_call_id = Some("c1".into());
            let args = json!({"command": TREE, "description": "tree", "mode": "async"});
            BashTool.run(args, &ctx).await.unwrap();
            let body: FileBody =
                serde_json::from_slice(&std::fs::read(dir.path().join(PROCESSES_FILE)).unwrap())
                    .unwrap();
            let record = body.groups[0].clone();
            assert!(
                wait_until(|| group_members(record.pgid).len() == 4),
                "the tree starts"
            );
            Supervised { dir, ctx, record }
        }

        fn pgid(&self) -> i32 {
            self.record.pgid
        }

        /// Runs the resume's cleanup on `record` in place of the true one.
        fn stop_as(&self, record: GroupRecord) -> Leftovers {
            craft(self.dir.path(), &[record]);
            stop_leftovers(self.dir.path()).unwrap()
        }

        fn end(self) {
            self.ctx.shells.stop_all();
            assert!(wait_until(|| group_members(self.pgid()).is_empty()));
        }
    }

    fn refused(left: &Leftovers) -> Vec<Refusal> {
        assert_eq!(left.stopped, [], "nothing is stopped");
        left.refused.iter().map(|r| r.reason.clone()).collect()
    }

    #[tokio::test]
    async fn the_supervisor_a_crash_left_is_killed_whole() {
        let tree = Supervised::start().await;
        let record = tree.record.clone();
        assert!(record.supervisor_sha256.is_some() && record.command.as_deref() == Some(TREE));
        let left = stop_leftovers(tree.dir.path()).unwrap();
        assert_eq!(
            left,
            Leftovers {
                stopped: vec![StoppedGroup {
                    record,
                    processes: 4
                }],
                refused: vec![],
            }
        );
        assert!(
            wait_until(|| group_members(tree.pgid()).is_empty()),
            "the whole tree is gone"
        );
        assert!(!tree.dir.path().join(PROCESSES_FILE).exists());
    }

    #[tokio::test]
    async fn the_command_never_sees_its_supervisor_s_token() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.processes = Some(Arc::new(ProcessTable::new(dir.path())));
        let args = json!({"command": "env; echo \"[$TURNSTILE_SUPERVISOR]\"", "description": "d"});
        let out = BashTool.run(args, &ctx).await.unwrap().content;
        assert!(!out.contains(supervisor::TOKEN_VAR), "{out}");
        assert!(out.contains("\n[]\n"), "{out}");
    }

    #[test]
    fn pid_1_and_ids_below_2_are_refused_before_anything_is_read_or_signalled() {
        // Built as a forger would: init's real start time, this boot, a command. `GroupId`
        // refuses the id before any other check, so no path of this test can signal.
        let dir = tempfile::tempdir().unwrap();
        let init_start = proc_stat(1).map_or(0, |s| s.start_time);
        let forged: Vec<GroupRecord> = [1, 0, -1, i32::MIN]
            .into_iter()
            .map(|pgid| GroupRecord {
                command: Some("sleep 300".into()),
                supervisor_sha256: Some(supervisor::sha256_hex(b"forged")),
                ..record(pgid, init_start)
            })
            .collect();
        craft(dir.path(), &forged);
        let left = stop_leftovers(dir.path()).unwrap();
        assert_eq!(refused(&left), [const { Refusal::NotAGroupId }; 4]);
        assert_eq!(
            left.refused
                .iter()
                .map(|r| r.record.pgid)
                .collect::<Vec<_>>(),
            [1, 0, -1, i32::MIN]
        );
        assert!(proc_stat(1).is_some(), "init is there");
    }

    #[test]
    fn an_unrelated_session_leader_is_left_alone() {
        // `setsid sleep 300`: a group leader with the right id, start time and boot, which the
        // engine never started.
        let mut sleeper = std::process::Command::new("setsid")
            .args(["sleep", "300"])
            .spawn()
            .unwrap();
        let pid = sleeper.id() as i32;
        assert!(wait_until(|| {
            proc_stat(pid).is_some_and(|s| s.pgrp == pid)
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c == b"sleep\x00300\x00")
        }));
        let dir = tempfile::tempdir().unwrap();
        craft(
            dir.path(),
            &[GroupRecord {
                command: Some("sleep 300".into()),
                supervisor_sha256: Some(supervisor::sha256_hex(b"any")),
                ..record(pid, proc_stat(pid).unwrap().start_time)
            }],
        );
        let left = stop_leftovers(dir.path()).unwrap();
        assert_eq!(
            refused(&left),
            [Refusal::NotSupervisor(NotSupervisor::OtherCommandLine)]
        );
        // Had it been signalled, SIGKILL would have ended it by now.
        std::thread::sleep(Duration::from_millis(200));
        assert!(sleeper.try_wait().unwrap().is_none(), "still running");
        assert!(alive(pid));
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }

    #[tokio::test]
    async fn a_reused_pid_is_not_the_recorded_leader() {
        // As if the recorded group had ended and its id now named a group started later.
        let tree = Supervised::start().await;
        let left = tree.stop_as(GroupRecord {
            start_time: tree.record.start_time.saturating_sub(1),
            ..tree.record.clone()
        });
        assert_eq!(refused(&left), [Refusal::NotTheLeader]);
        assert_eq!(group_members(tree.pgid()).len(), 4, "left alone");
        tree.end();
    }

    #[tokio::test]
    async fn a_real_supervisor_with_another_token_or_none_is_left_alone() {
        let tree = Supervised::start().await;
        let cases = [
            (
                Some(supervisor::sha256_hex(b"0123456789abcdef0123456789abcdef")),
                Refusal::NotSupervisor(NotSupervisor::OtherToken),
            ),
            (None, Refusal::NoIdentity),
        ];
        for (sha256, reason) in cases {
            let left = tree.stop_as(GroupRecord {
                supervisor_sha256: sha256,
                ..tree.record.clone()
            });
            assert_eq!(refused(&left), [reason]);
            assert_eq!(group_members(tree.pgid()).len(), 4, "left alone");
        }
        let left = tree.stop_as(GroupRecord {
            command: Some("sleep 1".into()),
            ..tree.record.clone()
        });
        assert_eq!(
            refused(&left),
            [Refusal::NotSupervisor(NotSupervisor::OtherCommandLine)]
        );
        let left = tree.stop_as(GroupRecord {
            boot_id: Some("another-boot".into()),
            ..tree.record.clone()
        });
        assert_eq!(refused(&left), [Refusal::OtherBoot]);
        assert_eq!(group_members(tree.pgid()).len(), 4, "left alone");
        tree.end();
    }

    #[tokio::test]
    async fn members_whose_supervisor_is_gone_are_reported_not_killed() {
        let tree = Supervised::start().await;
        let pgid = tree.pgid();
        // SAFETY: the supervisor this test started (its leader, alive: not yet reaped).
        unsafe {
            libc::kill(pgid, libc::SIGKILL);
        }
        assert!(wait_until(|| !alive(pgid)));
        let left = stop_leftovers_of(&tree);
        assert_eq!(refused(&left), [Refusal::LeaderGone { processes: 3 }]);
        assert_eq!(group_members(pgid).len(), 3, "left alone");
        // SAFETY: the group this test started; its members keep the id from being reused.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        assert!(wait_until(|| group_members(pgid).is_empty()));
    }

    fn stop_leftovers_of(tree: &Supervised) -> Leftovers {
        tree.stop_as(tree.record.clone())
    }

    #[test]
    fn a_group_that_ended_says_nothing() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        let dir = tempfile::tempdir().unwrap();
        craft(dir.path(), &[record(pid, 1)]);
        let left = stop_leftovers(dir.path()).unwrap();
        // Unless another test's process took the pid meanwhile: then it is refused.
        assert_eq!(left.stopped, []);
        assert!(
            left.refused
                .iter()
                .all(|r| r.reason == Refusal::NotTheLeader),
            "{left:?}"
        );
        assert!(!dir.path().join(PROCESSES_FILE).exists());
    }
}
