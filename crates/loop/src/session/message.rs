//! The facts of one message that its turns share (ids, mode, cancellation, headers, where its
//! background agents go); the loop that runs a message is `message_loop.rs`.

use tokio_util::sync::CancellationToken;

use super::agent_jobs::BackgroundSender;
use crate::autopilot::AgentMode;

/// Per-message facts the turns need.
pub(super) struct Message<'a> {
    pub(super) interaction_id: String,
    pub(super) message_id: String,
    pub(super) mode: AgentMode,
    pub(super) cancel: &'a CancellationToken,
    pub(super) task_completed: bool,
    /// Extra HTTP headers of this message's model calls (`SendOptions::request_headers`).
    pub(super) headers: Vec<(String, String)>,
    /// Where the turns hand the background agents they start or wake (`None`: they run
    /// inside the call, `background.rs`).
    pub(super) agents: Option<BackgroundSender>,
    /// The next turn was started by an agent going idle, not by the user.
    pub(super) woken: bool,
    /// How many times an `agentStop` hook's block kept this message going.
    pub(super) stop_blocks: u32,
}

impl<'a> Message<'a> {
    /// A message's facts, before any turn.
    pub(super) fn new(
        interaction_id: String,
        message_id: String,
        mode: AgentMode,
        cancel: &'a CancellationToken,
        headers: Vec<(String, String)>,
    ) -> Self {
        Message {
            interaction_id,
            message_id,
            mode,
            cancel,
            task_completed: false,
            headers,
            agents: None,
            woken: false,
            stop_blocks: 0,
        }
    }
}
