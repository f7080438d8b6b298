//! Starting a command so that its processes never outlive the engine.
//!
//! The command runs under a small bash supervisor that leads a new process group:
//! - the supervisor gets `PR_SET_PDEATHSIG` (SIGTERM), so it hears when the engine dies, even
//!   by `kill -9`; its trap then SIGKILLs the whole group, the command's children included;
//! - before the command starts, the group (pgid and the leader's start time) is recorded in
//!   the session's `processes.json` and fsynced, with the hash of a random token given to the
//!   supervisor alone (`supervisor.rs`); the supervisor waits for a line on its stdin and exits
//!   without running anything if the engine is gone before sending it. A resume kills a
//!   recorded group still running only when its leader proves to be that supervisor
//!   (`tools::processes`);
//! - the supervisor and the command get the engine's environment without its secrets
//!   (`turnstile_permissions::tool_env`);
//! - a timeout, an abort or a dropped call SIGKILLs the group ([`GroupGuard`]).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::ToolFailure;
use crate::processes::{GroupRecord, ProcessTable, boot_id, proc_stat};
use crate::supervisor::{self, Token};
use turnstile_permissions::tool_env;

/// How long to wait for a killed shell to be reaped before leaving it to tokio.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// Kills the command's process group when dropped while armed, so a run future that is
/// dropped mid-command (the loop gave up on it) leaves no processes behind.
pub(crate) struct GroupGuard {
    pgid: Option<libc::pid_t>,
}

impl GroupGuard {
    /// A guard of no group (nothing to kill).
    pub(crate) fn none() -> Self {
        GroupGuard { pgid: None }
    }

    /// SIGKILLs the whole group (once).
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg only sends a signal; pgid is the id of a group we created
            // (process_group(0)) whose leader we have not reaped yet, so it cannot name anyone
            // else's group.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    /// After the leader was reaped its id may be reused: never signal it again.
    pub(crate) fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A started command: its supervisor, the guard of its group, and its record.
pub(super) struct Started {
    pub(super) child: tokio::process::Child,
    pub(super) group: GroupGuard,
    record: Option<(Arc<ProcessTable>, i32)>,
}

/// How a started command's group is recorded in `processes.json`.
pub(super) struct RecordAs {
    pub(super) table: Arc<ProcessTable>,
    pub(super) tool_call_id: String,
    /// The shell the model names it by (`None`: a command the user ran, which no tool
    /// follows, so a resume does not list it as a lost shell).
    pub(super) shell_id: Option<String>,
    pub(super) command: String,
}

impl Started {
    /// The leader's pid (0 when unknown).
    pub(super) fn pid(&self) -> i32 {
        self.child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0)
    }

    /// Hands the group's guard over (to the shell that owns the command from now on).
    pub(super) fn take_group(&mut self) -> GroupGuard {
        std::mem::replace(&mut self.group, GroupGuard::none())
    }

    /// Forgets the group's record once it is over (killed or exited and reaped).
    pub(super) fn forget(&mut self) {
        if let Some((table, pgid)) = self.record.take()
            && let Err(e) = table.remove(pgid)
        {
            tracing::warn!(error = %e, "could not update the process list");
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // A dropped call kills its group (the guard, dropped after this): it is over too.
        self.forget();
    }
}

/// Starts `command` under the supervisor in `cwd`, output to `stdout`/`stderr`; records the
/// group (durably) before the command runs. A `detached` command does not die with the engine
/// and is not recorded: it is meant to outlive it.
pub(super) async fn start(
    command: &str,
    cwd: &Path,
    stdout: OwnedFd,
    stderr: OwnedFd,
    record: Option<RecordAs>,
    detached: bool,
    sandboxing: &crate::Sandboxing,
) -> Result<Started, ToolFailure> {
    let sandbox = sandboxing.to_enter().map_err(|why| {
        ToolFailure::new(
            format!("The command was not run: its sandbox could not be built ({why})."),
            "sandbox_unavailable",
        )
    })?;
    let sandboxed = sandbox.is_some();
    // Only a recorded group needs to prove itself to a resume.
    let token = match (&record, detached) {
        (Some(_), false) => Some(Token::new().map_err(|e| {
            ToolFailure::new(
                format!("Could not make the command's supervisor token, so it was not run: {e}"),
                "spawn_failed",
            )
        })?),
        _ => None,
    };
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(supervisor::SCRIPT)
        .arg(supervisor::ARG0)
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(tool_env::for_tools())
        .env_remove(supervisor::TOKEN_VAR)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(!detached);
    if let Some(token) = &token {
        cmd.env(supervisor::TOKEN_VAR, token.value());
    }
    // SAFETY: getpid is async-signal-safe; called here, in the engine, before the fork.
    let engine = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe calls (the sandbox's system calls, prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            // First, so that nothing below runs unconfined, and before the death signal is
            // armed: entering a user namespace changes credentials, which clears it.
            if let Some(sandbox) = &sandbox {
                sandbox.enter()?;
            }
            if detached {
                return Ok(());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The engine died between the fork and the prctl: the signal will never come.
            if libc::getppid() != engine {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    // The Command keeps our copies of the pipe's write end; until they are closed the read
    // side would never see end-of-file.
    drop(cmd);
    let child = spawned.map_err(|e| {
        ToolFailure::new(
            format!(
                "Failed to start bash in {} (sandboxed: {sandboxed}): {e}",
                cwd.display()
            ),
            "spawn_failed",
        )
    })?;
    let pgid = child
        .id()
        .and_then(|id| libc::pid_t::try_from(id).ok())
        .filter(|pid| *pid > 1);
    let mut started = Started {
        child,
        group: GroupGuard { pgid },
        record: None,
    };
    if let (Some(record), Some(pgid), false) = (record, pgid, detached) {
        let start_time = proc_stat(pgid).map(|s| s.start_time).ok_or_else(|| {
            ToolFailure::new(
                "The command's shell ended before it started.",
                "spawn_failed",
            )
        })?;
        let RecordAs {
            table,
            tool_call_id,
            shell_id,
            command,
        } = record;
        let group = GroupRecord {
            pgid,
            start_time,
            tool_call_id,
            boot_id: boot_id(),
            shell_id,
            command: Some(command),
            supervisor_sha256: token.as_ref().map(Token::sha256),
        };
        // Written in place, not on the blocking pool: a small file's fsync, and a pool task
        // cancelled by a runtime shutting down would turn the crash being simulated or
        // suffered into a recorded tool failure.
        let added = table.add(group);
        if let Err(e) = added {
            // Never run a command a crash could leave behind unrecorded.
            return Err(ToolFailure::new(
                format!("Could not record the command's process group, so it was not run: {e}"),
                "spawn_failed",
            ));
        }
        started.record = Some((table, pgid));
    }
    let go = match started.child.stdin.take() {
        Some(mut stdin) => stdin.write_all(b"go\n").await,
        None => Err(std::io::Error::other("no stdin")),
    };
    go.map_err(|e| ToolFailure::new(format!("Failed to start the command: {e}"), "spawn_failed"))?;
    Ok(started)
}

/// Waits (boundedly) for a killed shell so it does not linger as a zombie.
pub(super) async fn reap(child: &mut tokio::process::Child) {
    let _ = tokio::time::timeout(REAP_TIMEOUT, child.wait()).await;
}
