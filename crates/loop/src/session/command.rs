//! The commands a [`super::SessionHandle`] sends its actor task, each with the channel its
//! answer comes back on.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::SnapshotRewind;
use turnstile_replay::RewindError;

use super::compaction_options::{CompactOptions, CompactionReport};
use super::log_entry::LogEntry;
use super::send::{Outcome, SendOptions};
use crate::autopilot::AgentMode;

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
    SetTitle {
        title: String,
        done: oneshot::Sender<Result<(), String>>,
    },
    SwitchModel {
        model: String,
        reasoning_effort: Option<String>,
        done: oneshot::Sender<Result<(), String>>,
    },
    SkipCustomInstructions {
        skip: bool,
        done: oneshot::Sender<Result<(), String>>,
    },
    SetMode {
        mode: AgentMode,
        done: oneshot::Sender<Result<(), String>>,
    },
    Log {
        entry: LogEntry,
        done: oneshot::Sender<Result<Uuid, String>>,
    },
    Compact {
        options: CompactOptions,
        done: oneshot::Sender<Result<CompactionReport, String>>,
    },
    Mcp {
        change: McpChange,
        done: oneshot::Sender<Result<bool, String>>,
    },
    Cut {
        target: String,
        kind: turnstile_replay::CutKind,
        done: oneshot::Sender<Result<Result<SnapshotRewind, RewindError>, String>>,
    },
    Shutdown {
        done: oneshot::Sender<Result<(), String>>,
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
