//! The task that owns a started command: reads its output into its shell, waits for it to
//! end, forgets its process record and records its exit, whether or not a call still waits.

use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe::Receiver;

use super::process::{self, Started};
use crate::shells::Shell;

/// How long to keep reading after the shell exits: its own output is already in the pipe,
/// but a background job may hold the pipe open forever.
pub(super) const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Runs the pump of `shell` on the runtime; `pipe` is `None` for a detached command (its
/// output goes to its log file).
pub(super) fn spawn(shell: Arc<Shell>, started: Started, pipe: Option<Receiver>) {
    tokio::spawn(pump(shell, started, pipe));
}

async fn pump(shell: Arc<Shell>, mut started: Started, mut pipe: Option<Receiver>) {
    let mut buf = vec![0u8; 16 * 1024];
    let status = loop {
        tokio::select! {
            read = read_some(&mut pipe, &mut buf) => match read {
                Some(n) => shell.push(&buf[..n]),
                None => pipe = None,
            },
            waited = started.child.wait() => break waited,
        }
    };
    let code = match status {
        Ok(status) => {
            shell.reaped();
            status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
        }
        Err(e) => {
            tracing::warn!(shell = shell.id(), error = %e, "could not wait for a shell");
            shell.stop();
            process::reap(&mut started.child).await;
            shell.reaped();
            -1
        }
    };
    started.forget();
    let grace = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(grace);
    while pipe.is_some() {
        tokio::select! {
            read = read_some(&mut pipe, &mut buf) => match read {
                Some(n) => shell.push(&buf[..n]),
                None => pipe = None,
            },
            _ = &mut grace => break,
        }
    }
    shell.finish(code);
}

/// Reads a chunk; `None` at end of file or on an error. Without a pipe, never resolves.
pub(super) async fn read_some(pipe: &mut Option<Receiver>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(pipe) => match pipe.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}
