//! A live session's figures, as a value (the SDK's `session.usage.getMetrics`,
//! `session.metadata.contextInfo` and `recomputeContextTokens` read them); `metrics_now.rs`
//! computes them. A file of its own so the commands can name it without importing the actor.

use turnstile_journal::payload::{SessionShutdown, SessionUsageInfo};

/// A session's figures as of now.
#[derive(Debug, Clone)]
pub struct SessionMetrics {
    /// What `session.shutdown` would report now: requests and tokens by model and by agent,
    /// code changes, time in model calls, the start time.
    pub totals: SessionShutdown,
    /// The request the next turn would send, measured: its tokens and their parts (system,
    /// conversation, tool definitions), calibrated by the model server's last report when
    /// measured with the session's model.
    pub window: SessionUsageInfo,
    /// Input and output tokens of the main agent's last call in this process that reported
    /// usage; zeros before one.
    pub last_call: (u64, u64),
    /// User messages the session was sent (its journal's `user.message`s).
    pub user_messages: u64,
    /// Of the tool definitions' tokens, those of the MCP servers' tools.
    pub mcp_tool_tokens: u64,
    /// The share of the window at which the session compacts before a request.
    pub compaction_threshold: f64,
    /// The share of the window past which a request is cut to fit (the buffer's edge).
    pub buffer_threshold: f64,
}
