//! The commands a [`super::SessionHandle`] sends its actor task, each with the channel its
//! answer comes back on. An answer is the value or a [`LoopError`] whose variant says what
//! failed (the journal, a journal read, a cut that cannot be made); a handle passes it on as
//! it is, and answers [`LoopError::Closed`] itself when the task is gone.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::SnapshotRewind;

use super::compaction_options::{CompactOptions, CompactionReport};
use super::error::LoopError;
use super::log_entry::LogEntry;
use super::send::{Outcome, SendOptions};
use crate::autopilot::AgentMode;

/// Where the actor answers a command: its value, or what failed.
pub(super) type Reply<T> = oneshot::Sender<Result<T, LoopError>>;

/// What a handle asks the actor task, in the order it was asked.
pub(super) enum Command {
    Send {
        prompt: String,
        options: SendOptions,
        message_id: String,
        /// Cancelled by `abort`, whether the message is running or still queued.
        cancel: CancellationToken,
        /// It was sent while another message ran or waited (so it joined the pending queue).
        waited: bool,
        done: oneshot::Sender<Outcome>,
    },
    /// A slash command a client queued (`queued_command.rs`): taken in order with the
    /// messages, held for its host when it has one.
    Enqueued {
        request_id: String,
        command: String,
        hosted: bool,
        /// Cancelled when a client drops it from the queue, or by `abort`.
        cancel: CancellationToken,
    },
    SetTitle {
        title: String,
        done: Reply<()>,
    },
    SwitchModel {
        model: String,
        reasoning_effort: Option<String>,
        done: Reply<()>,
    },
    SkipCustomInstructions {
        skip: bool,
        done: Reply<()>,
    },
    SetVision {
        vision: bool,
        done: Reply<()>,
    },
    SetMode {
        mode: AgentMode,
        done: Reply<()>,
    },
    SetOptions {
        options: super::config::LiveOptions,
        done: Reply<()>,
    },
    SetWorkingDirectory {
        cwd: std::path::PathBuf,
        done: Reply<()>,
    },
    Log {
        entry: LogEntry,
        done: Reply<Uuid>,
    },
    Record {
        event_type: String,
        data: Box<serde_json::value::RawValue>,
        done: Reply<Uuid>,
    },
    Compact {
        options: CompactOptions,
        done: Reply<CompactionReport>,
    },
    Mcp {
        change: McpChange,
        done: Reply<bool>,
    },
    Cut {
        target: String,
        kind: turnstile_replay::CutKind,
        done: Reply<SnapshotRewind>,
    },
    Shutdown {
        done: Reply<()>,
    },
    /// The session's figures now (`metrics.rs`); answered while a message runs too.
    Metrics {
        model: Option<String>,
        done: Reply<super::metrics::SessionMetrics>,
    },
    /// A command the user runs in the session's shell (`user_shell.rs`); taken after the
    /// messages sent before it, as a message is.
    UserShell {
        command: String,
        tool_call_id: String,
        /// Cancelled by `cancel_user_shell` or the session closing.
        cancel: CancellationToken,
        done: Reply<super::user_commands::UserShellResult>,
    },
    /// A client joins the running session (`join.rs`); taken while a message runs.
    Join {
        continue_pending_work: Option<bool>,
        done: Reply<()>,
    },
}

/// A client's change to a session's MCP servers (`session.mcp.enable|disable|reload`,
/// `startServer|stopServer|restartServer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpChange {
    /// Start the server if it is not running, from `config` when given (a new server is
    /// added), else from the configuration it has.
    Start {
        /// The server.
        name: String,
        /// Its configuration, when the client gives one.
        config: Option<Box<turnstile_mcp::ServerConfig>>,
    },
    /// Stop the server (its configuration is kept) and offer none of its tools.
    Stop(String),
    /// Stop the server if it runs and start it again, from `config` when given.
    Restart {
        /// The server.
        name: String,
        /// Its new configuration, when the client gives one.
        config: Option<Box<turnstile_mcp::ServerConfig>>,
    },
    /// Start the server again if it is disabled or failed.
    Enable(String),
    /// Stop the server and offer none of its tools.
    Disable(String),
    /// Restart every server that is not disabled.
    Reload,
}
