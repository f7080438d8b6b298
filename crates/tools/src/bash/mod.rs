//! `bash`: runs a command with `bash -c` in the session's working directory, in a shell of
//! the session's [`Shells`] (named by `shellId`, or numbered from 0).
//!
//! - stdout and stderr share one pipe, so the model sees them interleaved in the order they
//!   were written, as in a terminal; a sync call streams chunks to `ctx.partial`.
//! - The command runs in its own process group under a supervisor (`process.rs`): a crash of
//!   the engine takes the group with it, and its record in `processes.json` lets a resume
//!   stop what survived and name the shells that were lost.
//! - Sync (the default): waits `initial_wait` seconds (30 by default, raised to at least 30,
//!   at most 600, as the runtime does) and answers with the output and
//!   `<shellId: N completed with exit code C>`; a command still running then goes on in the
//!   background, and the answer says so (`read_bash`, `stop_bash` follow it).
//! - `mode: "async"` answers at once with the shellId; `detach: true` with it makes the
//!   command independent of the session (not stopped when it closes, not killed with the
//!   engine), its output written to a log file.
//! - An abort stops a sync command's whole group, `sleep 100 & sleep 100` included.
//! - Only the first and last 32 KiB of output are kept, so a runaway command cannot exhaust
//!   memory.

pub(crate) mod output;
mod process;
mod pump;
pub mod user;

pub use output::{OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES};
pub(crate) use process::GroupGuard;

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use turnstile_journal::payload::ShellToolInfo;

use super::args;
use super::shells::{MAX_WAIT_SECS, Shell, ShellMode, ShellSpec, Shells};
use super::{AsyncTool, PermissionAsk, ToolContext, ToolFailure, ToolOutput, ToolSpec};
use turnstile_permissions::shell;

/// The `bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashTool;

/// The wait of a sync call that gives no `initial_wait`, in seconds.
pub const DEFAULT_INITIAL_WAIT_SECS: f64 = 30.0;

/// The checked arguments of one call.
pub struct BashArgs {
    command: String,
    description: Option<String>,
    mode: ShellMode,
    detach: bool,
    shell_id: Option<String>,
    initial_wait_secs: f64,
}

fn parse(args: &Value) -> Result<BashArgs, ToolFailure> {
    let command = args::required_str(args, "command")?;
    if command.trim().is_empty() {
        return Err(ToolFailure::invalid(
            "Parameter 'command' must not be empty.",
        ));
    }
    let description = args::optional_str(args, "description")?
        .filter(|d| !d.trim().is_empty())
        .map(str::to_owned);
    let mode = match args::optional_str(args, "mode")? {
        None | Some("sync") => ShellMode::Sync,
        Some("async") => ShellMode::Async,
        Some(other) => {
            return Err(ToolFailure::invalid(format!(
                "Invalid input: \"mode\": Invalid enum value. Expected 'sync' | 'async', received '{other}'"
            )));
        }
    };
    // The runtime ignores detach outside async mode.
    let detach = mode == ShellMode::Async && args::optional_bool(args, "detach")? == Some(true);
    let shell_id = args::optional_str(args, "shellId")?
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned);
    let initial_wait_secs =
        args::optional_f64(args, "initial_wait")?.unwrap_or(DEFAULT_INITIAL_WAIT_SECS);
    if !initial_wait_secs.is_finite() || initial_wait_secs < 0.0 {
        return Err(ToolFailure::invalid(
            "Parameter 'initial_wait' must be a number of seconds (30 to 600).",
        ));
    }
    Ok(BashArgs {
        command: command.to_owned(),
        description,
        mode,
        detach,
        shell_id,
        initial_wait_secs: initial_wait_secs.min(MAX_WAIT_SECS),
    })
}

impl AsyncTool for BashTool {
    const NAME: &'static str = "bash";
    type Args = BashArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".to_owned(),
            description: format!(
                "Runs a command with bash in the working directory and returns its stdout and stderr as they came, followed by `<shellId: ID completed with exit code N>`. Each call starts a fresh process: variables and `cd` do not carry over.\n* A sync call waits initial_wait seconds (30-600, default 30); a command still running then goes on in the background: follow it with read_bash, end it with stop_bash.\n* mode \"async\" starts the command in the background and answers at once with its shellId; with detach it also outlives the session (use it for servers).\n* Output beyond {} KiB is cut in the middle.",
                (OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command to run."},
                    "description": {"type": "string", "description": "A short description of what the command does (up to 100 characters), shown to the user."},
                    "shellId": {"type": "string", "description": "(Optional) A name for this command's shell, to follow it with read_bash and stop_bash. Each command still runs in a fresh process in the working directory."},
                    "mode": {"type": "string", "enum": ["sync", "async"], "description": "\"sync\" (default) waits for the command; \"async\" runs it in the background (read its output with read_bash)."},
                    "detach": {"type": "boolean", "description": "(Optional) With mode \"async\": the process runs independently and stays alive after the session ends. Otherwise an async command is stopped when the session closes."},
                    "initial_wait": {"type": "number", "description": "(Optional) Seconds a sync call waits for the command (30-600, default 30) before leaving it running in the background."}
                },
                "required": ["command", "description"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<BashArgs, ToolFailure> {
        parse(args)
    }

    fn needs(
        &self,
        a: &BashArgs,
        _ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        let intention = a.description.clone().unwrap_or_else(|| a.command.clone());
        Ok(Some(PermissionAsk::shell(&a.command, intention)))
    }

    async fn act(&self, a: BashArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        execute(a, ctx).await
    }

    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        let description = args::optional_str(args, "description").ok().flatten();
        description
            .filter(|d| !d.trim().is_empty())
            .or_else(|| args::optional_str(args, "command").ok().flatten())
            .map(str::to_owned)
    }

    fn shell_info(&self, args: &Value) -> Option<ShellToolInfo> {
        let a = parse(args).ok()?;
        let analysis = shell::analyze(&a.command);
        Some(ShellToolInfo {
            possible_paths: analysis.redirect_paths(),
            has_write_file_redirection: analysis.write_redirection(),
            display_command: None,
        })
    }
}

fn spawn_failure(what: &str, e: std::io::Error) -> ToolFailure {
    ToolFailure::new(format!("Failed to {what}: {e}"), "spawn_failed")
}

/// Starts the command in a new shell of `shells` and leaves it to the pump.
async fn start_shell(a: &BashArgs, ctx: &ToolContext) -> Result<Arc<Shell>, ToolFailure> {
    let shells: &Shells = &ctx.shells;
    let id = shells.new_id(a.shell_id.as_deref());
    let log = a.detach.then(|| shells.log_path(&id));
    let (stdout, stderr, pipe) = match &log {
        // A detached command must not write into a pipe the engine holds: it outlives it.
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| spawn_failure(&format!("create {}", path.display()), e))?;
            let err = file
                .try_clone()
                .map_err(|e| spawn_failure("open the log twice", e))?;
            (OwnedFd::from(file), OwnedFd::from(err), None)
        }
        None => {
            // One pipe for both streams keeps their relative order.
            let (reader, writer) =
                std::io::pipe().map_err(|e| spawn_failure("create a pipe for the output", e))?;
            let writer_err = writer
                .try_clone()
                .map_err(|e| spawn_failure("create a pipe for the output", e))?;
            let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
                .map_err(|e| spawn_failure("read the command's output", e))?;
            (OwnedFd::from(writer), OwnedFd::from(writer_err), Some(pipe))
        }
    };
    let record = ctx.processes.clone().map(|table| process::RecordAs {
        table,
        tool_call_id: ctx.tool_call_id.clone().unwrap_or_default(),
        shell_id: Some(id.clone()),
        command: a.command.clone(),
    });
    let mut started = process::start(
        &a.command,
        &ctx.cwd,
        stdout,
        stderr,
        record,
        a.detach,
        &ctx.sandbox,
    )
    .await?;
    let spec = ShellSpec {
        command: a.command.clone(),
        description: a.description.clone().unwrap_or_default(),
        mode: a.mode,
        log,
        cwd: ctx.cwd.clone(),
    };
    let pid = started.pid();
    let shell = shells.insert(id, spec, pid, started.take_group());
    if a.mode == ShellMode::Sync {
        shell.stream_to(ctx.partial.clone());
    }
    pump::spawn(Arc::clone(&shell), started, pipe);
    Ok(shell)
}

async fn execute(a: BashArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolFailure::cancelled());
    }
    let shell = start_shell(&a, ctx).await?;
    if a.mode == ShellMode::Async {
        let how = if a.detach {
            "detached background"
        } else {
            "background"
        };
        return Ok(ToolOutput::text(format!(
            "<command started in {how} with shellId: {}>",
            shell.id()
        )));
    }
    let wait = Duration::from_secs_f64(a.initial_wait_secs).max(ctx.shells.min_wait());
    let ended = tokio::select! {
        ended = shell.wait(wait) => ended,
        _ = ctx.cancel.cancelled() => {
            ctx.shells.stop(shell.id());
            return Err(ToolFailure::cancelled());
        },
    };
    shell.stream_to(None);
    let waited = if ended { 0.0 } else { wait.as_secs_f64() };
    Ok(shell.result(waited))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PermissionKind, Tool};
    use std::path::Path;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir)
    }

    async fn run(dir: &Path, args: Value) -> Result<ToolOutput, ToolFailure> {
        BashTool.run(args, &ctx(dir)).await
    }

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0;
        // A zombie waiting for a reaper is dead for our purposes.
        exists
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|stat| {
                    stat.rsplit_once(')')
                        .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
                })
                .unwrap_or(false)
    }

    #[tokio::test]
    async fn output_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            dir.path(),
            json!({"command": "echo hello; echo world", "description": "d"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "hello\nworld\n<shellId: 0 completed with exit code 0>"
        );

        let out = run(
            dir.path(),
            json!({"command": "printf 'no newline'; exit 3", "description": "d"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "no newline\n<shellId: 0 completed with exit code 3>"
        );

        let out = run(dir.path(), json!({"command": "true", "description": "d"}))
            .await
            .unwrap();
        assert_eq!(out.content, "\n<shellId: 0 completed with exit code 0>");
    }

    #[tokio::test]
    async fn stderr_is_interleaved_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            dir.path(),
            json!({"command": "echo out1; echo err1 >&2; echo out2; echo err2 1>&2", "description": "d"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "out1\nerr1\nout2\nerr2\n<shellId: 0 completed with exit code 0>"
        );
    }

    #[tokio::test]
    async fn runs_in_cwd_with_null_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            dir.path(),
            json!({"command": "pwd; cat; echo done", "description": "d"}),
        )
        .await
        .unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            out.content,
            format!(
                "{}\ndone\n<shellId: 0 completed with exit code 0>",
                real.display()
            )
        );
    }

    #[tokio::test]
    async fn a_sync_call_past_its_wait_goes_on_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path());
        c.shells = std::sync::Arc::new(Shells::default().with_min_wait(Duration::ZERO));
        let gate = dir.path().join("gate");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&gate)
                .status()
                .unwrap()
                .success()
        );
        let out = BashTool
            .run(
                json!({"command": "echo partial; read _ < gate; echo done", "description": "d", "initial_wait": 0.5}),
                &c,
            )
            .await
            .unwrap();
        // Whether "partial" came within the wait depends on the machine; the rest does not.
        assert!(
            out.content.ends_with("<command with shellId: 0 is still running after 0.5 seconds. The command is still running. Use read_bash to continue waiting for output, or stop_bash to stop it.>"),
            "{}",
            out.content
        );
        std::fs::write(&gate, "go\n").unwrap();
        let shell = c.shells.get("0").unwrap();
        assert!(shell.wait(Duration::from_secs(60)).await);
        assert_eq!(
            shell.report(0.0),
            "partial\ndone\n<shellId: 0 completed with exit code 0>"
        );
    }

    #[tokio::test]
    async fn async_calls_answer_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let out = BashTool
            .run(
                json!({"command": "sleep 300", "description": "d", "mode": "async"}),
                &c,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "<command started in background with shellId: 0>"
        );
        let out = BashTool
            .run(
                json!({"command": "echo hi; echo err >&2", "description": "d", "mode": "async", "detach": true, "shellId": "d1"}),
                &c,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "<command started in detached background with shellId: d1>"
        );
        let detached = c.shells.get("d1").unwrap();
        assert!(detached.wait(Duration::from_secs(60)).await);
        assert_eq!(
            detached.report(0.0),
            "Output:\nhi\nerr\n<detached command with shellId: d1 completed with exit code 0>"
        );
        // Closing stops the attached shell, not the detached one (already done here).
        let stopped = c.shells.stop_all();
        assert_eq!(
            stopped
                .iter()
                .map(|s| s.id().to_owned())
                .collect::<Vec<_>>(),
            ["0"]
        );
        let _ = std::fs::remove_file(c.shells.log_path("d1"));
    }

    #[tokio::test]
    async fn cancel_stops_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let token = c.cancel.clone();
        let started = std::time::Instant::now();
        let pid_file = dir.path().join("sh.pid");
        let canceller = tokio::spawn(async move {
            // Cancel once the command is surely running (a loaded machine may be slow to start it).
            for _ in 0..500 {
                if std::fs::metadata(&pid_file).is_ok_and(|m| m.len() > 0) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            token.cancel();
        });
        let err = BashTool
            .run(
                json!({"command": "echo $$ > sh.pid; sleep 100", "description": "d"}),
                &c,
            )
            .await
            .unwrap_err();
        canceller.await.unwrap();
        assert_eq!(err.code.as_deref(), Some("cancelled"));
        assert_eq!(err.message, crate::INTERRUPTED_MESSAGE);
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(dir.path().join("sh.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The shell is a member of the killed group, not the reaped leader: SIGKILL reaches it
        // asynchronously.
        let gone = (0..250).any(|_| {
            if alive(pid) {
                std::thread::sleep(Duration::from_millis(20));
                false
            } else {
                true
            }
        });
        assert!(gone, "the command's shell {pid} survived the cancel");
    }

    #[tokio::test]
    async fn output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            dir.path(),
            json!({"command": "head -c 5000000 /dev/zero | tr '\\0' a; echo; echo END", "description": "d"}),
        )
        .await
        .unwrap();
        assert!(out.content.len() < OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES + 200);
        assert!(out.content.contains("bytes omitted ...]"));
        assert!(out.content.starts_with("aaaa"));
        assert!(
            out.content
                .ends_with("a\nEND\n<shellId: 0 completed with exit code 0>")
        );
        let omitted: u64 = out
            .content
            .split("[... ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            omitted,
            5_000_000 + 5 - (OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) as u64
        );
    }

    #[tokio::test]
    async fn partial_output_is_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut c = ctx(dir.path());
        c.partial = Some(tx);
        let out = BashTool
            .run(
                json!({"command": "echo a; sleep 0.2; echo b", "description": "d"}),
                &c,
            )
            .await
            .unwrap();
        drop(c);
        let mut streamed = String::new();
        while let Some(chunk) = rx.recv().await {
            streamed.push_str(&chunk);
        }
        assert_eq!(streamed, "a\nb\n");
        assert_eq!(out.content, "a\nb\n<shellId: 0 completed with exit code 0>");
    }

    #[tokio::test]
    async fn background_job_does_not_hold_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = run(
            dir.path(),
            json!({"command": "sleep 3 & echo $! > bg.pid; echo started", "description": "d"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "started\n<shellId: 0 completed with exit code 0>"
        );
        assert!(started.elapsed() < Duration::from_millis(2800));
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Clean up the job the test started.
        // SAFETY: signalling a process this test created.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }

    #[test]
    fn bad_args_fail() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        for args in [
            json!({"description": "d"}),
            json!({"command": "  "}),
            json!({"command": "ls", "initial_wait": -1}),
            json!({"command": "ls", "initial_wait": "soon"}),
            json!({"command": "ls", "mode": "later"}),
        ] {
            assert_eq!(
                BashTool.permission(&args, &c).unwrap_err().code.as_deref(),
                Some("invalid_arguments"),
                "{args}"
            );
        }
        let err = BashTool
            .permission(&json!({"command": "ls", "mode": "later"}), &c)
            .unwrap_err();
        assert_eq!(
            err.message,
            "Invalid input: \"mode\": Invalid enum value. Expected 'sync' | 'async', received 'later'"
        );
    }

    #[test]
    fn permission_request_describes_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let ask = BashTool
            .permission(
                &json!({"command": "git status && echo hi > out.txt", "description": "Check the repo"}),
                &ctx(dir.path()),
            )
            .unwrap()
            .unwrap();
        assert_eq!(ask.kind, PermissionKind::Shell);
        assert_eq!(ask.subject, "git status && echo hi > out.txt");
        assert_eq!(ask.intention, "Check the repo");
        assert_eq!(
            ask.request,
            json!({
                "kind": "shell",
                "fullCommandText": "git status && echo hi > out.txt",
                "intention": "Check the repo",
                "commands": [{"identifier": "git", "readOnly": true}, {"identifier": "echo", "readOnly": false}],
                "commandSegments": [
                    {"identifier": "git", "fullCommandText": "git status"},
                    {"identifier": "echo", "fullCommandText": "echo hi > out.txt"}
                ],
                "possiblePaths": ["out.txt"],
                "possibleUrls": [],
                "hasWriteFileRedirection": true,
                "canOfferSessionApproval": true
            })
        );
        assert_eq!(
            BashTool.intention_summary(
                &json!({"command": "ls", "description": "List"}),
                &ctx(dir.path())
            ),
            Some("List".to_owned())
        );
    }
}
