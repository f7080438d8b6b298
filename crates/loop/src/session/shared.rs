//! What a session's handles and its actor task share: the live subscribers, the running and
//! queued messages and commands (which `abort` cancels), and the actor's figures a handle reads.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::emitter::Subscribers;
use super::send_queue::SendQueue;

pub(super) struct Shared {
    pub(super) subscribers: Subscribers,
    pub(super) running: Mutex<Option<CancellationToken>>,
    /// The messages sent and not yet started and the queued commands (`send_queue.rs`).
    pub(super) queue: SendQueue,
    /// The commands the user runs (`user_shell.rs`), running or waiting to: their request
    /// id (when the client gave one), their tool call id, and what cancels them.
    pub(super) user_shells: Mutex<Vec<super::user_commands::Running>>,
    /// The session's MCP servers (`SessionConfig::mcp`).
    pub(super) mcp: Option<Arc<turnstile_mcp::McpHost>>,
    /// The session's skills (`SessionConfig::skills`), which a client toggles and reloads.
    pub(super) skills: Arc<turnstile_tools::skills::SkillSet>,
    /// Fired when held pending work may go on (`ResumeOptions::hold_pending_work`).
    pub(super) release: CancellationToken,
    /// Turn requests built and measured (the actor's count).
    pub(super) measures: Arc<std::sync::atomic::AtomicU64>,
    /// Set by `suspend`: the emitter records nothing until the session's own close.
    pub(super) suspended: Arc<std::sync::atomic::AtomicBool>,
    /// The files the session's turns changed, when it tracks them (`rewind_files`).
    pub(super) file_snapshots: Option<Arc<crate::rewind_files::FileSnapshots>>,
}
