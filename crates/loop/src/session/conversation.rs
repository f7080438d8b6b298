//! A sub-agent's conversation between its rounds: what a `write_agent` message continues.
//! The actor keeps one per agent, by its `task` call id.

use turnstile_providers::ChatMessage;
use turnstile_tools::task::AgentType;

/// A sub-agent's conversation between its rounds: what a `write_agent` message continues.
pub(super) struct Conversation {
    pub(super) kind: AgentType,
    pub(super) model: String,
    /// Its system prompt, recorded again at the start of each round, as the runtime does.
    pub(super) system: String,
    /// Every message of its model calls so far.
    pub(super) history: Vec<ChatMessage>,
}
