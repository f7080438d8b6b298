//! A stdio server's process: started in a process group of its own that dies with the
//! engine, its stderr kept (the last few KiB) to explain a failed start, killed as a group.
//! Its environment is the engine's without its secrets (`turnstile_permissions::tool_env`),
//! plus the configuration's `env`: a secret reaches a server only when its entry names it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::transport::TokioChildProcess;
use tokio::io::AsyncReadExt;

use turnstile_sandbox::Sandboxing;

use crate::error::McpError;

/// How much of a server's stderr is kept.
const STDERR_TAIL: usize = 4096;

/// The last bytes a server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    /// The kept text, trimmed.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }

    fn push(&self, chunk: &[u8]) {
        if let Ok(mut kept) = self.0.lock() {
            kept.extend_from_slice(chunk);
            if kept.len() > STDERR_TAIL {
                let cut = kept.len() - STDERR_TAIL;
                kept.drain(..cut);
            }
        }
    }
}

/// The server's process group, killed when this is dropped or [`ChildGuard::kill`]ed.
#[derive(Debug)]
pub struct ChildGuard {
    pid: u32,
    stderr: StderrTail,
    /// The task reading stderr; it ends when the process closes it (exits).
    reader: Option<tokio::task::JoinHandle<()>>,
    killed: bool,
}

impl ChildGuard {
    /// The server's process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its stderr once the process closed it (it exited), waiting at most a second: what a
    /// server said before it died explains a failed start.
    pub async fn stderr_at_exit(&mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), reader).await;
        }
        self.stderr.text()
    }

    /// Kills the process group (the server and whatever it started, e.g. `npx`'s node).
    pub fn kill(&mut self) {
        if self.killed {
            return;
        }
        self.killed = true;
        if let Ok(pgid) = i32::try_from(self.pid)
            && pgid > 1
        {
            // SAFETY: kill(2) takes no pointers; a negative pid names the group the child
            // leads, which exists while the child is not reaped (the transport reaps it after).
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `command` as a stdio MCP server in `cwd` with the tools' environment and `env`
/// added on top (its `$NAME` references replaced by the engine's variables, as the Copilot CLI
/// launches it, secrets included: the configuration asked for them by name), confined by
/// `sandboxing` (entered first, before anything else of the child runs).
pub(crate) fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    sandboxing: &Sandboxing,
) -> Result<(TokioChildProcess, ChildGuard), McpError> {
    let sandbox = sandboxing.to_enter().map_err(|why| McpError::Spawn {
        command: command.to_owned(),
        message: format!("not started: its sandbox could not be built ({why})"),
    })?;
    let mut cmd = tokio::process::Command::new(command);
    let env = crate::env::expand_all(env, |name| std::env::var(name).ok());
    cmd.args(args)
        .env_clear()
        .envs(turnstile_permissions::tool_env::for_tools())
        .envs(env)
        .current_dir(cwd)
        .process_group(0);
    // Compared with the child's parent after PR_SET_PDEATHSIG: a different parent means the
    // engine died before the signal was armed (comparing with 1 would refuse every server of
    // an engine that is itself PID 1, as in a container).
    let engine = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and calls only prctl(2),
    // getppid(2) and the sandbox's `enter` (system calls only, no allocation), which are
    // async-signal-safe; it reads a copied integer and the shared sandbox, and touches no
    // other memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            // The sandbox first: entering a user namespace clears the parent-death signal.
            if let Some(sandbox) = &sandbox {
                sandbox.enter()?;
            }
            // The server dies with the engine, even when the engine is SIGKILLed.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != engine {
                return Err(std::io::Error::other("the engine exited"));
            }
            Ok(())
        });
    }
    let spawn_error = |e: std::io::Error| McpError::Spawn {
        command: command.to_owned(),
        message: e.to_string(),
    };
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_error)?;
    let pid = transport.id().ok_or_else(|| McpError::Spawn {
        command: command.to_owned(),
        message: "the process exited at once".into(),
    })?;
    let tail = StderrTail::default();
    let reader = stderr.map(|mut stderr| {
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.push(&buf[..n]);
            }
        })
    });
    Ok((
        transport,
        ChildGuard {
            pid,
            stderr: tail,
            reader,
            killed: false,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_is_bounded() {
        let tail = StderrTail::default();
        for _ in 0..100 {
            tail.push(&[b'x'; 1000]);
        }
        tail.push(b"end");
        let text = tail.text();
        assert_eq!(text.len(), STDERR_TAIL);
        assert!(text.ends_with("end"));
    }
}
