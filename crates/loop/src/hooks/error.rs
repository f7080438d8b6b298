//! Why a hook invocation failed. The loop records the `Display` text in `hook.end` and goes
//! on; callers that need to tell failures apart match the variants.

use std::path::PathBuf;
use std::process::ExitStatus;

/// A hook that did not produce a usable result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookRunError {
    /// The hook file's content differs from (or is gone since) what the session started with.
    #[error(
        "hook file {} changed since the session started; its hooks do not run until a new session starts in a trusted folder",
        path.display()
    )]
    FileChanged {
        /// The hook file.
        path: PathBuf,
    },
    /// A hook points at a file that was never loaded (a bug in the loader, not the user's).
    #[error("hook file unknown")]
    UnknownFile,
    /// `bash` could not be started for the hook's command.
    #[error("cannot start hook `{command}`: {source}")]
    Spawn {
        /// The hook's command line.
        command: String,
        /// Why the process did not start.
        source: std::io::Error,
    },
    /// The session's sandbox for hooks could not be built, so no hook runs.
    #[error("hook `{command}` was not run: its sandbox could not be built ({why})")]
    SandboxUnavailable {
        /// The hook's command line.
        command: String,
        /// Why the sandbox is missing.
        why: String,
    },
    /// One of the hook process's pipes was not set up.
    #[error("hook {0} unavailable")]
    PipeUnavailable(&'static str),
    /// The hook input could not be encoded as JSON.
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
    /// Reading the hook's output or waiting for it failed.
    #[error("{source}")]
    Io {
        /// The hook's command line.
        command: String,
        /// The failed read or wait.
        source: std::io::Error,
    },
    /// The hook ran past its `timeoutSec`; it was killed.
    #[error("hook `{command}` timed out after {secs}s")]
    TimedOut {
        /// The hook's command line.
        command: String,
        /// The timeout that was exceeded, in seconds.
        secs: u64,
    },
    /// The hook exited unsuccessfully (non-zero status or a signal).
    #[error("hook `{command}` failed ({status}): {stderr}")]
    Failed {
        /// The hook's command line.
        command: String,
        /// How the process ended.
        status: ExitStatus,
        /// Its standard error, trimmed (lossily decoded).
        stderr: String,
    },
    /// The hook printed something on stdout that is not JSON.
    #[error("hook `{command}` printed something that is not JSON: {source}")]
    BadOutput {
        /// The hook's command line.
        command: String,
        /// Where parsing failed.
        source: serde_json::Error,
    },
    /// The SDK client answering `hooks.invoke` failed or answered with an error.
    #[error("{0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The hook call to the client was cut short by an abort or the session closing.
    #[error("the hook call was interrupted (abort or session closed)")]
    Interrupted,
}
