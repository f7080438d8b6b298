//! Whose turn the one turn loop (`turn.rs::run_turn`) runs, the main agent's or a
//! sub-agent's, and so everything that differs between the two: the envelope's `agentId`,
//! the `interactionId`, where the request comes from, whether the call's stream is announced,
//! how the tool calls run, and the steps only one of them takes.
//!
//! A leaf (no `impl Actor`): `turn.rs` runs a spec, `subagent.rs` builds one per turn of its
//! agent, and neither imports the other.

use std::time::Instant;

use turnstile_journal::payload::SessionUsageInfo;

use super::message::Message;
use turnstile_providers::ChatMessage;
use turnstile_tools::task::AgentType;

/// One turn to run: whose it is and what that changes.
pub(super) struct TurnSpec<'a, 'm> {
    /// The envelope's `agentId` of every event of the turn (and the `parentToolCallId` of
    /// its message and usage): `None` for the main agent, the `task` call's id for a
    /// sub-agent, as the runtime records them.
    pub(super) agent: Option<&'a str>,
    /// The `interactionId` the turn's events carry: the message's, or the sub-agent's round.
    pub(super) interaction_id: &'a str,
    /// The message the turn serves (mode, cancellation, extra headers).
    pub(super) msg: &'a Message<'m>,
    /// Whether the call's stream is announced live (`streaming.rs`): the main agent's is; a
    /// sub-agent's pieces are not shown, only its complete `assistant.message`.
    pub(super) stream: bool,
    /// What only one kind of agent does.
    pub(super) kind: Kind<'a, 'm>,
}

/// The steps and state of one kind of agent's turn.
pub(super) enum Kind<'a, 'm> {
    /// The main agent: its request from the folded conversation, kept in the window
    /// (`window.rs`) with the MCP tools as they are now; the notices of ended shells and
    /// agents; `session.usage_info`; its tool calls run together (`tool_call.rs::tools`).
    Main(MainTurn),
    /// A sub-agent: its request from its own conversation with its tool subset; its tool
    /// calls run one after the other (`subagent.rs::tools_one_by_one`).
    Sub(SubTurn<'a, 'm>),
}

/// What the main agent's turn learns on the way and hands back.
pub(super) struct MainTurn {
    /// The first call of the message in this process (`session.usage_info`'s `isInitial`).
    pub(super) initial: bool,
    /// The request's plain estimate, announced once the turn has started.
    pub(super) estimate: SessionUsageInfo,
    /// The estimate is the vocabulary's count: only then does it teach the calibration.
    pub(super) exact: bool,
    /// The estimate's total, to calibrate against the server's report.
    pub(super) estimated: u64,
    /// The tool definitions' tokens as `session.usage_info` announced them.
    pub(super) tool_tokens: Option<u64>,
    /// `task_complete` succeeded in this turn.
    pub(super) task_completed: bool,
}

/// A sub-agent's turn: its agent, its conversation, what it has spent.
pub(super) struct SubTurn<'a, 'm> {
    pub(super) child: &'a Child<'a, 'm>,
    /// Its conversation so far; the turn adds its answer and tool results.
    pub(super) history: &'a mut Vec<ChatMessage>,
    pub(super) spent: &'a mut Spent,
    /// The tool definitions' tokens of its request.
    pub(super) tool_tokens: Option<u64>,
    /// The answer's text, once the model answered.
    pub(super) answer: String,
}

/// One running sub-agent: who it is and what its calls share.
pub(super) struct Child<'a, 'm> {
    /// Its id: the parent's tool call id (`agentId`, `parentToolCallId`).
    pub(super) id: &'a str,
    pub(super) kind: AgentType,
    pub(super) model: String,
    pub(super) interaction_id: String,
    pub(super) msg: &'a Message<'m>,
}

/// What a sub-agent has spent so far (`subagent.completed`/`failed`).
pub(super) struct Spent {
    pub(super) started: Instant,
    pub(super) tool_calls: u64,
    pub(super) tokens: u64,
}

impl<'a, 'm> TurnSpec<'a, 'm> {
    /// A turn of the main agent; `initial`: the first call of the message in this process.
    pub(super) fn main(msg: &'a Message<'m>, initial: bool) -> Self {
        TurnSpec {
            agent: None,
            interaction_id: &msg.interaction_id,
            msg,
            stream: true,
            kind: Kind::Main(MainTurn {
                initial,
                estimate: SessionUsageInfo::default(),
                exact: false,
                estimated: 0,
                tool_tokens: None,
                task_completed: false,
            }),
        }
    }

    /// A turn of the sub-agent `child` over its conversation `history`.
    pub(super) fn sub(
        child: &'a Child<'a, 'm>,
        history: &'a mut Vec<ChatMessage>,
        spent: &'a mut Spent,
    ) -> Self {
        TurnSpec {
            agent: Some(child.id),
            interaction_id: &child.interaction_id,
            msg: child.msg,
            stream: false,
            kind: Kind::Sub(SubTurn {
                child,
                history,
                spent,
                tool_tokens: None,
                answer: String::new(),
            }),
        }
    }

    /// The `x-initiator` of the turn's call, as the Copilot CLI marks its calls: the
    /// message's first main call is the user's, the calls after tool results (or after an
    /// agent woke the main agent) and every call of a sub-agent the agent's.
    pub(super) fn initiator(&self, turn: u64) -> &'static str {
        match self.kind {
            Kind::Main(_) if turn == 0 && !self.msg.woken => "user",
            _ => "agent",
        }
    }

    /// Whether an abort is recorded by this turn (`abort`). The main agent's is; a
    /// sub-agent's abort is its parent's: the parent's `task` call is interrupted and the
    /// parent's tool calls record the one `abort` (`tool_call.rs::complete_in_order`).
    pub(super) fn records_abort(&self) -> bool {
        matches!(self.kind, Kind::Main(_))
    }

    /// The text a sub-agent's turn answered with (empty for the main agent's, whose answer
    /// the fold keeps).
    pub(super) fn into_answer(self) -> String {
        match self.kind {
            Kind::Sub(sub) => sub.answer,
            Kind::Main(_) => String::new(),
        }
    }
}
