//! A session: an actor task that owns the journal writer and the folded state, runs one
//! message at a time through the agent loop, and publishes every event to subscribers.
//!
//! Sends made while a message is running are queued and run in order (the SDK clients send
//! and then wait; queueing keeps a second send from failing). `abort` cancels the running
//! message and every message queued behind it: a queued message that was aborted is recorded
//! as its `user.message` with no turn (no LLM call is recorded that was never made).
//! Slash commands a client queues wait in the same queue (`queued_command.rs`); a client
//! sees and trims what waits (`send_queue.rs`).
//!
//! This file is a facade: every item lives in a child module and is re-exported here.

mod actor;
mod agent_jobs;
mod background;
mod builtin_call;
mod command;
mod compaction;
mod compaction_options;
mod config;
mod continue_pending;
mod conversation;
mod denials;
mod emitter;
mod ended_shells;
mod error;
mod handle;
mod history;
mod hooks_glue;
mod join;
mod lock;
mod log_entry;
mod lost_shells;
mod mcp_glue;
mod message;
mod message_loop;
mod metrics;
mod metrics_now;
mod open;
mod pending;
mod permission;
mod pre_mcp_hook;
mod prompting;
mod queued_command;
mod recorded_history;
mod resume_options;
mod retry_backoff;
mod rewind;
mod sandbox;
mod send;
mod send_queue;
mod session_limits;
mod shared;
mod slots;
mod streaming;
mod subagent;
mod summary;
mod tool_call;
mod tools_notice;
mod totals;
mod truncation;
mod turn;
mod turn_spec;
mod usage;
mod user_commands;
mod user_shell;
mod window;
mod working_directory;
mod workspace_file;

pub use command::McpChange;
pub use compaction_options::{CompactOptions, CompactionReport, InfiniteSessions};
pub use config::{LiveOptions, SessionConfig, SessionParts};
pub use error::LoopError;
pub use handle::SessionHandle;
pub use history::{
    chat_messages, default_system_prompt, request_messages, request_messages_without_images,
};
pub use log_entry::{LogEntry, LogLevel};
pub use metrics::SessionMetrics;
pub use queued_command::EnqueueError;
pub use resume_options::{ContinuedRequests, ResumeOptions, ResumeReport};
pub use sandbox::configured_processes;
pub use send::{Outcome, SendOptions};
pub use send_queue::{MAX_QUEUED_COMMANDS, QueueRefused, QueuedItem, QueuedKind};
pub use session_limits::valid_limits;
pub use slots::{DEFAULT_PARALLEL_AGENTS, DEFAULT_PARALLEL_TOOLS};
pub use summary::SUMMARY_INSTRUCTION;
pub use user_commands::UserShellResult;
