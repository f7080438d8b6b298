//! The agent loop: session actor, tools, permissions, hooks, autopilot.
//!
//! Only this crate calls models (through `turnstile-providers`), runs tools and owns a journal
//! writer (journal <- replay, providers <- loop <- server <- cli). A [`session::SessionHandle`] runs one message
//! at a time: `user.message`, then turns of exactly one LLM call each (`assistant.turn_start`,
//! streamed deltas, `assistant.message`, tool events, `assistant.turn_end`) until the model
//! answers without tools, autopilot nudges, and `session.idle` last.

pub mod autopilot;
pub mod client;
pub mod hooks;
pub mod permissions;
pub mod prompt;
pub mod session;
pub mod skills;
pub mod tools;

pub use autopilot::AgentMode;
pub use session::{
    CompactOptions, CompactionReport, InfiniteSessions, LogEntry, LogLevel, LoopError, McpChange,
    Outcome, ResumeOptions, ResumeReport, SendOptions, SessionConfig, SessionHandle, SessionParts,
};
