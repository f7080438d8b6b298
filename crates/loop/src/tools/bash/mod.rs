//! `bash`: runs a command with `bash -c` in the session's working directory.
//!
//! - stdout and stderr share one pipe, so the model sees them interleaved in
//!   the order they were written, as in a terminal; chunks are streamed to
//!   `ctx.partial` as they arrive.
//! - The command runs in its own process group; on timeout or cancellation
//!   the whole group gets SIGKILL, so `sleep 100 & sleep 100` leaves nothing.
//!   Nor does a crash of the engine: the group dies with it, and its record
//!   in the session's `processes.json` lets a resume stop what survived
//!   (`process.rs`, `tools::processes`).
//! - `initial_wait` (seconds, default 120) is the timeout. In the runtime it
//!   is how long a sync call waits before the command goes on in the
//!   background; without async shells we stop the command instead.
//! - Background jobs the command starts and leaves running when the shell
//!   exits normally are left alone, as a terminal would; output they write
//!   after the shell exits is not captured.
//! - `mode: "async"` and `detach` fail: async shells are not supported yet.
//! - Only the first and last 32 KiB of output are kept, so a runaway command
//!   cannot exhaust memory.

mod output;
mod process;

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::args;
use super::shell::{self, ShellAnalysis};
use super::{
    BoxFuture, PermissionAsk, PermissionKind, Tool, ToolContext, ToolFailure, ToolOutput, ToolSpec,
};
use output::{CappedOutput, PartialStream};

/// The `bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashTool;

/// The timeout when the call gives no `initial_wait`, in seconds.
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;
/// Bytes of output kept from the start of the output.
pub const OUTPUT_HEAD_BYTES: usize = 32 * 1024;
/// Bytes of output kept from the end of the output.
pub const OUTPUT_TAIL_BYTES: usize = 32 * 1024;
/// Bytes streamed to `ctx.partial` at most; past that the UI has seen enough
/// and the events would only bloat the stream.
const PARTIAL_LIMIT_BYTES: usize = 1024 * 1024;
/// How long to keep reading after the shell exits: its own output is already
/// in the pipe, but a background job may hold the pipe open forever.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// The checked arguments of one call.
struct BashArgs {
    command: String,
    description: Option<String>,
    timeout: Duration,
    timeout_secs: f64,
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
    match args::optional_str(args, "mode")? {
        None | Some("sync") => {}
        Some("async") => return Err(async_unsupported()),
        Some(other) => {
            return Err(ToolFailure::invalid(format!(
                "Parameter 'mode' must be \"sync\" or \"async\", not \"{other}\"."
            )));
        }
    }
    if args::optional_bool(args, "detach")? == Some(true) {
        return Err(async_unsupported());
    }
    // shellId names a persistent shell in the runtime; every call here gets a
    // fresh one, so it is accepted and ignored.
    let timeout_secs = args::optional_f64(args, "initial_wait")?.unwrap_or(DEFAULT_TIMEOUT_SECS);
    let timeout = Duration::try_from_secs_f64(timeout_secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            ToolFailure::invalid("Parameter 'initial_wait' must be a positive number of seconds.")
        })?;
    Ok(BashArgs {
        command: command.to_owned(),
        description,
        timeout,
        timeout_secs,
    })
}

fn async_unsupported() -> ToolFailure {
    ToolFailure::new(
        "Async shells (mode \"async\" or detach) are not supported yet. Run the command in sync mode; use initial_wait to give it more time.",
        "unsupported",
    )
}

impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".to_owned(),
            description: format!(
                "Runs a command with bash in the working directory and returns its stdout and stderr as they came, followed by `<exited with exit code N>`. Each call starts a fresh shell: variables and `cd` do not carry over. The command is stopped (with everything it started) if it runs longer than initial_wait seconds (default {DEFAULT_TIMEOUT_SECS}). Output beyond {} KiB is cut in the middle.",
                (OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command to run."},
                    "description": {"type": "string", "description": "A short description of what the command does, shown to the user."},
                    "initial_wait": {"type": "number", "description": "Seconds the command may run before it is stopped (default 120)."},
                    "mode": {"type": "string", "enum": ["sync", "async"], "description": "Only \"sync\" is supported for now."},
                    "shellId": {"type": "string", "description": "Accepted for compatibility; every call runs in a fresh shell."},
                    "detach": {"type": "boolean", "description": "Not supported yet; leave unset."}
                },
                "required": ["command", "description"]
            }),
            ..ToolSpec::default()
        }
    }

    fn permission(
        &self,
        args: &Value,
        _ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        let a = parse(args)?;
        let intention = a.description.clone().unwrap_or_else(|| a.command.clone());
        let analysis = shell::analyze(&a.command);
        let request = shell_request(&a.command, &intention, &analysis);
        Ok(Some(PermissionAsk {
            kind: PermissionKind::Shell,
            request,
            intention,
            subject: a.command,
            shell: Some(std::sync::Arc::new(analysis)),
        }))
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let a = parse(&args)?;
            execute(&a, ctx).await
        })
    }

    fn intention_summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        let description = args::optional_str(args, "description").ok().flatten();
        description
            .filter(|d| !d.trim().is_empty())
            .or_else(|| args::optional_str(args, "command").ok().flatten())
            .map(str::to_owned)
    }
}

/// The schema's `PermissionRequestShell` (without `toolCallId`).
fn shell_request(command: &str, intention: &str, analysis: &ShellAnalysis) -> Value {
    // One entry per distinct command; it is read-only only if every use of it is.
    let mut commands: Vec<(String, bool)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for segment in &analysis.segments {
        match index.get(segment.identifier.as_str()) {
            Some(&i) => commands[i].1 &= segment.read_only,
            None => {
                index.insert(&segment.identifier, commands.len());
                commands.push((segment.identifier.clone(), segment.read_only));
            }
        }
    }
    json!({
        "kind": "shell",
        "fullCommandText": command,
        "intention": intention,
        "commands": commands
            .iter()
            .map(|(identifier, read_only)| json!({"identifier": identifier, "readOnly": read_only}))
            .collect::<Vec<_>>(),
        "commandSegments": analysis
            .segments
            .iter()
            .map(|s| json!({"identifier": s.identifier, "fullCommandText": s.text}))
            .collect::<Vec<_>>(),
        "possiblePaths": analysis.redirect_paths(),
        "possibleUrls": analysis.urls.iter().map(|u| json!({"url": u})).collect::<Vec<_>>(),
        "hasWriteFileRedirection": analysis.write_redirection(),
        // Approving "this command for the session" needs something to name it by.
        "canOfferSessionApproval": !commands.is_empty(),
    })
}

async fn execute(a: &BashArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolFailure::cancelled());
    }
    let io_failure = |what: &str, e: std::io::Error| {
        ToolFailure::new(format!("Failed to {what}: {e}"), "spawn_failed")
    };
    // One pipe for both streams keeps their relative order.
    let (reader, writer) =
        std::io::pipe().map_err(|e| io_failure("create a pipe for the output", e))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| io_failure("create a pipe for the output", e))?;

    let table = ctx
        .processes
        .clone()
        .map(|t| (t, ctx.tool_call_id.clone().unwrap_or_default()));
    let mut started = process::start(
        &a.command,
        &ctx.cwd,
        OwnedFd::from(writer),
        OwnedFd::from(writer_err),
        table,
    )
    .await?;
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| io_failure("read the command's output", e))?;

    let mut output = CappedOutput::new(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
    let mut stream = PartialStream::new(ctx.partial.clone());
    let mut buf = vec![0u8; 16 * 1024];
    let mut eof = false;
    let deadline = tokio::time::sleep(a.timeout);
    tokio::pin!(deadline);

    let status = loop {
        tokio::select! {
            read = pipe.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    output.push(&buf[..n]);
                    stream.push(&buf[..n]);
                }
            },
            waited = started.child.wait() => match waited {
                Ok(status) => break status,
                Err(e) => {
                    started.group.kill();
                    return Err(ToolFailure::new(format!("Failed to wait for the command: {e}"), "spawn_failed"));
                }
            },
            _ = &mut deadline => {
                started.group.kill();
                process::reap(&mut started.child).await;
                let mut message = format!(
                    "The command timed out after {} seconds and was stopped (it and every process it started were killed). Give it a larger initial_wait if it needs more time.",
                    a.timeout_secs
                );
                let so_far = output.render();
                if !so_far.is_empty() {
                    message.push_str("\nOutput before it was stopped:\n");
                    message.push_str(&so_far);
                }
                return Err(ToolFailure::new(message, "timeout"));
            },
            _ = ctx.cancel.cancelled() => {
                started.group.kill();
                process::reap(&mut started.child).await;
                return Err(ToolFailure::cancelled());
            },
        }
    };
    // The shell is gone and reaped: its group id may be reused, so never signal it again.
    started.group.disarm();
    started.forget();

    let grace = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(grace);
    while !eof {
        tokio::select! {
            read = pipe.read(&mut buf) => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    output.push(&buf[..n]);
                    stream.push(&buf[..n]);
                }
            },
            _ = &mut grace => break,
        }
    }
    stream.finish();

    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let mut content = output.render();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&format!("<exited with exit code {code}>"));
    Ok(ToolOutput::text(content))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(out.content, "hello\nworld\n<exited with exit code 0>");

        let out = run(
            dir.path(),
            json!({"command": "printf 'no newline'; exit 3", "description": "d"}),
        )
        .await
        .unwrap();
        assert_eq!(out.content, "no newline\n<exited with exit code 3>");

        let out = run(dir.path(), json!({"command": "true", "description": "d"}))
            .await
            .unwrap();
        assert_eq!(out.content, "<exited with exit code 0>");
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
            "out1\nerr1\nout2\nerr2\n<exited with exit code 0>"
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
            format!("{}\ndone\n<exited with exit code 0>", real.display())
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let err = run(
            dir.path(),
            json!({
                "command": "sleep 100 & echo $! > bg.pid; sh -c 'echo $$ > fg.pid; exec sleep 100'",
                "description": "d",
                "initial_wait": 2
            }),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("timeout"));
        assert!(
            err.message.contains("timed out after 2 seconds"),
            "{}",
            err.message
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        for file in ["bg.pid", "fg.pid"] {
            let pid: i32 = std::fs::read_to_string(dir.path().join(file))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let gone = (0..100).any(|_| {
                if alive(pid) {
                    std::thread::sleep(Duration::from_millis(20));
                    false
                } else {
                    true
                }
            });
            assert!(gone, "{file} process {pid} survived the timeout");
        }
    }

    #[tokio::test]
    async fn timeout_reports_output_so_far() {
        let dir = tempfile::tempdir().unwrap();
        let err = run(
            dir.path(),
            json!({"command": "echo partial; sleep 100", "description": "d", "initial_wait": 0.5}),
        )
        .await
        .unwrap_err();
        assert!(
            err.message
                .ends_with("Output before it was stopped:\npartial\n"),
            "{}",
            err.message
        );
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
        assert_eq!(err.message, crate::tools::INTERRUPTED_MESSAGE);
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
        assert!(out.content.ends_with("a\nEND\n<exited with exit code 0>"));
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
        assert_eq!(out.content, "a\nb\n<exited with exit code 0>");
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
        assert_eq!(out.content, "started\n<exited with exit code 0>");
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

    #[tokio::test]
    async fn async_mode_and_bad_args_fail() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        for args in [
            json!({"command": "ls", "description": "d", "mode": "async"}),
            json!({"command": "ls", "description": "d", "detach": true}),
        ] {
            let err = BashTool.permission(&args, &c).unwrap_err();
            assert_eq!(err.code.as_deref(), Some("unsupported"));
            assert!(err.message.contains("not supported yet"));
            assert_eq!(
                BashTool.run(args, &c).await.unwrap_err().code.as_deref(),
                Some("unsupported")
            );
        }
        for args in [
            json!({"description": "d"}),
            json!({"command": "  "}),
            json!({"command": "ls", "initial_wait": 0}),
            json!({"command": "ls", "initial_wait": "soon"}),
            json!({"command": "ls", "mode": "later"}),
        ] {
            assert_eq!(
                BashTool.permission(&args, &c).unwrap_err().code.as_deref(),
                Some("invalid_arguments"),
                "{args}"
            );
        }
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
