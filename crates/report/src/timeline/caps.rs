//! How much of a journal a timeline keeps: every text is clipped and every list capped here, so
//! memory follows these numbers, never the journal.

/// Bytes of a tool call's arguments kept.
pub const ARGUMENTS_CAP: usize = 2 << 10;
/// Bytes of a tool result, an answer or a prompt kept.
pub const TEXT_CAP: usize = 4 << 10;
/// Bytes of a note or mark kept.
pub const NOTE_CAP: usize = 1 << 10;
/// Tool calls kept per turn; the rest are counted.
pub const MAX_CALLS_PER_TURN: usize = 128;
/// Notes kept per turn or call; the rest are dropped.
pub const MAX_NOTES: usize = 64;
/// Agents with a lane of their own; the turns of any further agent share [`OTHER_AGENTS`].
pub const MAX_LANES: usize = 16;
/// The lane of agents beyond [`MAX_LANES`].
pub const OTHER_AGENTS: &str = "other agents";
/// Sub-agent names remembered (a `task` call's name waits here for its agent's events).
pub const MAX_AGENT_NAMES: usize = 4096;
/// Bytes of a sub-agent's name or kind kept.
pub const NAME_CAP: usize = 120;
/// Models listed in the header's model history; later switches are still marked.
pub const MAX_MODELS: usize = 32;
