//! Autopilot: when the model stops without calling `task_complete`, the engine nudges it.

/// The nudge appended as a `user.message` (`isAutopilotContinuation: true`).
pub const NUDGE: &str = "You have not yet marked the task as complete using the task_complete tool. If you were planning, stop planning and start implementing. You aren't done until you have fully completed the task.\n\nIMPORTANT: Do NOT call task_complete if:\n- You have open questions or ambiguities - make good decisions and keep working\n- You encountered an error - try to resolve it or find an alternative approach\n- There are remaining steps - complete them first\n\nKeep working autonomously until the task is truly finished, then call task_complete.";

/// Default for `--max-autopilot-continues`.
pub const DEFAULT_MAX_CONTINUES: u32 = 5;

/// How a message is run: the session's mode for one send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentMode {
    /// The loop ends when the model stops calling tools.
    #[default]
    Interactive,
    /// `task_complete` is offered and the model is nudged until it calls it.
    Autopilot,
    /// Runs as interactive; the prompt the model reads starts with [`PLAN_PREFIX`], as in the
    /// Copilot CLI's plan mode.
    Plan,
}

/// What the Copilot CLI puts before the prompt text of a plan-mode message.
pub const PLAN_PREFIX: &str = "[[PLAN]] ";

impl AgentMode {
    /// The schema's name of the mode (`session.idle` `mode`, `user.message` `agentMode`).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::Interactive => "interactive",
            AgentMode::Autopilot => "autopilot",
            AgentMode::Plan => "plan",
        }
    }

    /// Parses the schema's name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "interactive" => Some(AgentMode::Interactive),
            "autopilot" => Some(AgentMode::Autopilot),
            "plan" => Some(AgentMode::Plan),
            _ => None,
        }
    }
}
