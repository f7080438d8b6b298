//! The work a turn's calls hand the message's agent runner (`background.rs`): an agent to
//! start or to wake, sent over a channel so the turn does not wait for it.

use tokio::sync::mpsc;

use turnstile_tools::task::TaskArgs;

/// Work for the message's agent runner.
pub(super) enum AgentJob {
    /// The first round of the agent of a background `task` call (its id, its checked call).
    Start(String, TaskArgs),
    /// The next round of the idle agent of a `task` call, woken by a message.
    Wake(String, String),
}

/// Where a turn's calls hand their agents' work to the message's runner.
pub(super) type BackgroundSender = mpsc::UnboundedSender<AgentJob>;
