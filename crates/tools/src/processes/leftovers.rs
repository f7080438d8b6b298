//! What a resume does with `processes.json` left by an engine that did not end its commands.
//!
//! A resume kills a group only when it is provably the engine's own tool supervisor's
//! ([`stop_leftovers`]), each check refusing before anything is signalled:
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

use std::path::Path;

use super::proc_stat::{group_members, proc_stat};
use super::{FileBody, GroupRecord, PROCESSES_FILE, ProcessesError, boot_id};
use crate::supervisor::{self, NotSupervisor};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::super::{FILE_VERSION, ProcessTable, test_record as record};
    use crate::bash::BashTool;
    use crate::{Tool, ToolContext};

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
