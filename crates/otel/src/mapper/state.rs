//! The mapping's state: the agents, model calls and tool calls open, and what was counted;
//! `mod.rs` maps events over it, `agents.rs` and `chat.rs` open and end its spans.

use std::collections::HashMap;

use crate::open::OpenSpan;

/// The most spans open at once (tool calls, agents, model calls). A journal that opens more
/// without ending them (hostile, or broken) gets no span for the extra ones; they are counted
/// in [`Counts::dropped`].
pub const MAX_OPEN_SPANS: usize = 10_000;

/// Sub-agent names remembered (for a follow-up round's span); later agents' rounds are named
/// by their id only.
pub const MAX_AGENT_NAMES: usize = 4096;

/// What the export carries besides the spans' shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapOptions {
    /// Message contents, tool arguments and results (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
    /// Off unless the user opts in, as the conventions ask.
    pub capture_content: bool,
}

/// What a mapping saw besides its spans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Spans handed out.
    pub spans: u64,
    /// Spans handed out unfinished (open at the end or cut by a resume).
    pub unfinished: u64,
    /// Spans not made because [`MAX_OPEN_SPANS`] were open.
    pub dropped: u64,
    /// Lines that could not be read (bad JSON, over the line limit); skipped.
    pub unreadable: u64,
    /// The journal ends in a torn line (a writer cut off mid-line); it was left out.
    pub torn_tail: bool,
}

pub(super) struct Tool {
    pub(super) span: OpenSpan,
}

/// The mapping's state; see the module doc.
pub struct Mapper {
    pub(super) options: MapOptions,
    pub(super) session: String,
    pub(super) provider: &'static str,
    pub(super) model: Option<String>,
    pub(super) agent_name: String,
    pub(super) main: Option<Agent>,
    pub(super) subagents: HashMap<String, Agent>,
    /// Sub-agents' names by id, for the spans of their follow-up rounds.
    pub(super) names: HashMap<String, String>,
    pub(super) tools: HashMap<String, Tool>,
    pub(super) last_ms: i64,
    pub(super) counts: Counts,
    /// Whether `assistant.usage` gives only the counts the journal lacks (input and cache
    /// tokens): a live session's notices come beside its messages, whose output tokens and
    /// finish the spans already carry ([`Mapper::usage_beside_messages`]).
    pub(super) usage_inputs_only: bool,
}

/// One agent's context: the main agent's interaction, or a sub-agent.
pub(super) struct Agent {
    pub(super) span: OpenSpan,
    /// Its model call in progress.
    pub(super) chat: Option<Chat>,
    /// Whether its model calls are framed by `assistant.turn_start`/`turn_end`; the Copilot
    /// runtime's sub-agents record only the answers.
    pub(super) turns: bool,
    /// When it last did something: where an unframed model call starts.
    pub(super) last_ms: i64,
    pub(super) output_tokens: u64,
    pub(super) input_tokens: Option<u64>,
    pub(super) model: Option<String>,
    /// Its last answer's text (the interaction's output, with content capture on).
    pub(super) last_answer: Option<String>,
}

/// A model call in progress.
pub(super) struct Chat {
    pub(super) span: OpenSpan,
    pub(super) answered: bool,
}
