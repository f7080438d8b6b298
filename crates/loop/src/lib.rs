//! The agent loop: session actor, prompts, hooks, autopilot.
//!
//! Only this crate calls models (through `turnstile-providers`), runs tools and owns a journal
//! writer (journal <- replay, providers <- loop <- server <- cli). The tools it runs are
//! `turnstile-tools`, the policy that decides which calls need approval is
//! `turnstile-permissions`; neither depends on this crate. A [`session::SessionHandle`] runs one message
//! at a time: `user.message`, then turns of exactly one LLM call each (`assistant.turn_start`,
//! streamed deltas, `assistant.message`, tool events, `assistant.turn_end`) until the model
//! answers without tools, autopilot nudges, and `session.idle` last.

pub mod autopilot;
pub mod client;
pub mod hooks;
pub mod prompt;
pub mod rewind_files;
pub mod session;

pub use autopilot::AgentMode;
pub use session::{
    CompactOptions, CompactionReport, ContinuedRequests, InfiniteSessions, LiveOptions, LogEntry,
    LogLevel, LoopError, McpChange, Outcome, ResumeOptions, ResumeReport, SendOptions,
    SessionConfig, SessionHandle, SessionMetrics, SessionParts,
};
