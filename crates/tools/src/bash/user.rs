//! A command the user runs in the session's shell (`session.shell.executeUserRequested`), not
//! the model: started the way `bash` starts one (its own process group under the supervisor,
//! recorded in `processes.json`, in the session's working directory and kernel sandbox), but
//! run to its end or its cancellation with no shell of the session's (`read_bash` and
//! `list_bash` do not see it) and no wait limit: the user ends it.
//!
//! stdout and stderr share one pipe, as in a terminal; only the first and last 32 KiB of the
//! output are kept, as `bash` keeps them.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::output::{CappedOutput, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, PartialStream};
use super::process::{self, RecordAs};
use super::pump::{DRAIN_GRACE, read_some};
use crate::Sandboxing;
use crate::processes::ProcessTable;

/// The error of a command cancelled while it ran (the Copilot CLI's words).
pub const CANCELLED: &str = "Shell command canceled.";
/// The error of a command cancelled before it started (the Copilot CLI's words).
pub const CANCELLED_BEFORE_START: &str = "Aborted before shell command could start.";

/// What the command runs with: the session's.
pub struct UserCommand<'a> {
    /// The command line, run with `bash -c`.
    pub command: &'a str,
    /// The session's working directory.
    pub cwd: &'a Path,
    /// The session's sandbox (the one its `bash` tool's commands enter).
    pub sandbox: &'a Sandboxing,
    /// Where the process group is recorded while it runs, so a resume after a crash stops it.
    pub processes: Option<Arc<ProcessTable>>,
    /// The call's id (recorded with the group).
    pub tool_call_id: &'a str,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCommandOutcome {
    /// What it wrote to stdout and stderr, in order (the middle left out past the bound), its
    /// last line break removed.
    pub output: String,
    /// Its exit status (128 + the signal when a signal ended it); `None` when it was not
    /// started or was cancelled.
    pub exit_code: Option<i32>,
    /// Why there is no exit code ([`CANCELLED`], [`CANCELLED_BEFORE_START`], or why it could
    /// not start).
    pub failure: Option<String>,
    /// Whether it ran inside the kernel sandbox.
    pub sandboxed: bool,
}

impl UserCommandOutcome {
    fn failed(why: impl Into<String>, output: String, sandboxed: bool) -> Self {
        UserCommandOutcome {
            output,
            exit_code: None,
            failure: Some(why.into()),
            sandboxed,
        }
    }

    /// It ran and exited with 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs `cmd` to its end, or until `cancel` fires (its whole process group is then killed);
/// output chunks go to `partial` as they come.
pub async fn run(
    cmd: UserCommand<'_>,
    partial: Option<UnboundedSender<String>>,
    cancel: &CancellationToken,
) -> UserCommandOutcome {
    let sandboxed = matches!(cmd.sandbox, Sandboxing::On(_));
    if cancel.is_cancelled() {
        return UserCommandOutcome::failed(CANCELLED_BEFORE_START, String::new(), sandboxed);
    }
    let pipe = match std::io::pipe().and_then(|(r, w)| Ok((r, w.try_clone()?, w))) {
        Ok(ends) => ends,
        Err(e) => {
            let why = format!("Failed to create a pipe for the output: {e}");
            return UserCommandOutcome::failed(why, String::new(), sandboxed);
        }
    };
    let (reader, writer_err, writer) = pipe;
    let reader = match tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
        Ok(reader) => reader,
        Err(e) => {
            let why = format!("Failed to read the command's output: {e}");
            return UserCommandOutcome::failed(why, String::new(), sandboxed);
        }
    };
    let record = cmd.processes.map(|table| RecordAs {
        table,
        tool_call_id: cmd.tool_call_id.to_owned(),
        shell_id: None,
        command: cmd.command.to_owned(),
    });
    let started = process::start(
        cmd.command,
        cmd.cwd,
        OwnedFd::from(writer),
        OwnedFd::from(writer_err),
        record,
        false,
        cmd.sandbox,
    )
    .await;
    let mut started = match started {
        Ok(started) => started,
        Err(failure) => {
            return UserCommandOutcome::failed(failure.message, String::new(), sandboxed);
        }
    };
    let mut output = CappedOutput::new(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
    let mut stream = PartialStream::new(partial);
    let mut pipe = Some(reader);
    let mut buf = vec![0u8; 16 * 1024];
    let status = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break None,
            read = read_some(&mut pipe, &mut buf) => match read {
                Some(n) => {
                    output.push(&buf[..n]);
                    stream.push(&buf[..n]);
                }
                None => pipe = None,
            },
            waited = started.child.wait() => break Some(waited),
        }
    };
    let exit_code = match status {
        // Cancelled: the whole group goes, the command's children with it.
        None => {
            started.group.kill();
            process::reap(&mut started.child).await;
            None
        }
        Some(Ok(status)) => {
            started.group.disarm();
            Some(
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            )
        }
        Some(Err(e)) => {
            started.group.kill();
            process::reap(&mut started.child).await;
            started.forget();
            let why = format!("Failed to wait for the command: {e}");
            return UserCommandOutcome::failed(why, render(&output), sandboxed);
        }
    };
    started.forget();
    // The command's own output is in the pipe already; a background job it left may hold the
    // pipe open, so the rest is read for a short grace only.
    let grace = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(grace);
    while pipe.is_some() && exit_code.is_some() {
        tokio::select! {
            read = read_some(&mut pipe, &mut buf) => match read {
                Some(n) => {
                    output.push(&buf[..n]);
                    stream.push(&buf[..n]);
                }
                None => pipe = None,
            },
            _ = &mut grace => break,
        }
    }
    stream.finish();
    let text = render(&output);
    match exit_code {
        Some(code) => UserCommandOutcome {
            output: text,
            exit_code: Some(code),
            failure: None,
            sandboxed,
        },
        None => UserCommandOutcome::failed(CANCELLED, text, sandboxed),
    }
}

/// The kept output without its last line break (the runtime's `Output:` block adds its own).
fn render(output: &CappedOutput) -> String {
    let mut text = output.render();
    if text.ends_with('\n') {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run_in(dir: &Path, command: &str, cancel: &CancellationToken) -> UserCommandOutcome {
        let cmd = UserCommand {
            command,
            cwd: dir,
            sandbox: &Sandboxing::Off,
            processes: None,
            tool_call_id: "t",
        };
        run(cmd, None, cancel).await
    }

    #[tokio::test]
    async fn output_of_both_streams_and_the_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let done = run_in(dir.path(), "echo out; echo err >&2; exit 3", &cancel).await;
        assert_eq!(done.output, "out\nerr");
        assert_eq!(done.exit_code, Some(3));
        assert!(!done.success());
        let done = run_in(dir.path(), "pwd", &cancel).await;
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(done.output, real.display().to_string());
        assert!(done.success());
    }

    #[tokio::test]
    async fn a_cancelled_command_before_it_starts_does_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let done = run_in(dir.path(), "touch ran", &cancel).await;
        assert_eq!(done.failure.as_deref(), Some(CANCELLED_BEFORE_START));
        assert!(!dir.path().join("ran").exists());
    }
}
