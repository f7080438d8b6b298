//! Counting and open-work tracking per event, shared by the fold and the audit.
//!
//! Both read the same few `data` fields through the lenient decoder (`raw/fields.rs`) and run
//! this one step function, so a fold and an audit of the same journal always agree on turns,
//! messages, tool outcomes, task completion, errors, resumes and open work.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::open_work::{Abandoned, OpenToolCall, OpenTurn, OpenWork, ToolStart, TurnEnd};
use crate::raw::fields::{Fields, Kind, Store};

/// Distinct tool names counted separately; further names share [`OTHER_TOOLS`].
pub const MAX_TOOL_NAMES: usize = 4096;
/// Bucket for tool names beyond [`MAX_TOOL_NAMES`].
pub const OTHER_TOOLS: &str = "(other)";
/// Tool name for a result whose call was never requested or started.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// Counts of a session's events.
///
/// LLM calls are `turns + agent answer calls + compaction_calls` ([`Counters::llm_calls`]):
/// every call has its `assistant.turn_start`, its `session.compaction_start`, or, for a
/// sub-agent of the Copilot CLI (which records no turn events for its agents' calls), its
/// `assistant.message`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// `assistant.turn_start` events: LLM calls made, sub-agents included.
    pub turns: u64,
    /// The sub-agents' share of `turns`, by `agentId`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_turns: BTreeMap<String, u64>,
    /// LLM calls of sub-agents recorded without turn events (the Copilot CLI's): one
    /// `assistant.message` with an `agentId` and no open turn of that agent is one call, by
    /// `agentId`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_answer_calls: BTreeMap<String, u64>,
    /// User messages typed by a person (or a client).
    pub user_messages: u64,
    /// User messages autopilot injected to keep going.
    pub autopilot_continuations: u64,
    /// Finished tool calls by tool name.
    pub tool_calls: BTreeMap<String, ToolOutcomes>,
    /// The last `session.task_complete`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_complete: Option<TaskCompletion>,
    /// `session.error` events.
    pub errors: u64,
    /// `abort` events.
    pub aborts: u64,
    /// `session.resume` events.
    pub resumes: u64,
    /// `session.compaction_start` events: summary calls to the model, outside any turn.
    #[serde(default)]
    pub compaction_calls: u64,
    /// Work a crash left open and the resumed session gave up (not a violation).
    #[serde(default, skip_serializing_if = "AbandonedCounts::is_zero")]
    pub abandoned: AbandonedCounts,
}

impl Counters {
    /// Every LLM call the journal records, of every kind.
    pub fn llm_calls(&self) -> u64 {
        self.turns + self.agent_answer_calls.values().sum::<u64>() + self.compaction_calls
    }

    /// The LLM calls of the agent `agent` (`None`: the main agent, with the compactions'
    /// summary calls, which are made for it).
    pub fn llm_calls_of(&self, agent: Option<&str>) -> u64 {
        match agent {
            Some(agent) => {
                self.agent_turns.get(agent).copied().unwrap_or(0)
                    + self.agent_answer_calls.get(agent).copied().unwrap_or(0)
            }
            None => {
                let agents: u64 = self.agent_turns.values().sum();
                self.turns - agents.min(self.turns) + self.compaction_calls
            }
        }
    }
}

/// Successful and failed results of one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcomes {
    /// `tool.execution_complete` with `success: true`.
    pub ok: u64,
    /// `tool.execution_complete` with `success: false`.
    pub failed: u64,
}

/// A `session.task_complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompletion {
    /// The agent's summary.
    pub summary: Option<String>,
    /// Whether the completion was accepted (absent in older journals).
    pub success: Option<bool>,
}

/// Counts of the work resumed sessions gave up (see [`Abandoned`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbandonedCounts {
    /// Turns left without an end.
    pub turns: u64,
    /// Tool calls left without a result.
    pub tool_calls: u64,
    /// Permission and external-tool requests left without an answer.
    pub requests: u64,
}

impl AbandonedCounts {
    /// True when nothing was abandoned.
    pub fn is_zero(&self) -> bool {
        *self == AbandonedCounts::default()
    }

    fn add(&mut self, a: &Abandoned) {
        self.turns += a.turns.len() as u64;
        self.tool_calls += a.tool_calls.len() as u64;
        self.requests += (a.permissions.len() + a.external_tools.len()) as u64;
    }
}

/// What one event did to the open work (for the audit's violations and the fold's history).
#[derive(Debug)]
pub(crate) enum Step {
    /// Nothing worth reporting.
    Plain,
    /// A turn started; the same agent's previous turn was still open.
    TurnReplaced(OpenTurn),
    /// A turn ended.
    TurnEnded(TurnEnd),
    /// A tool call started.
    ToolStarted(ToolStart),
    /// A tool call finished; `None` when it was never requested or started.
    ToolCompleted(Option<OpenToolCall>),
    /// New work after a resume gave up what the crashed process left open (the event itself
    /// then applied normally: the given-up turn is not replaced, it is closed).
    Abandoned(Box<Abandoned>),
}

/// Applies one event (its kind, agent, line and lenient fields) to the counters and open work.
///
/// The first user message or turn start after a `session.resume` first gives up what the
/// previous process left open (the Copilot runtime's crash-and-resume shape).
pub(crate) fn track(
    open: &mut OpenWork,
    counts: &mut Counters,
    kind: Kind,
    agent: Option<&str>,
    line: u64,
    d: &Fields,
    store: &Store,
) -> Step {
    // A skill's context joins the running turn: it neither starts nor ends anything.
    if kind == Kind::UserMessage && d.skill_context {
        return Step::Plain;
    }
    let abandoned = match kind {
        Kind::TurnStart | Kind::UserMessage => open.abandon_left_over(),
        _ => None,
    };
    if let Some(a) = &abandoned {
        counts.abandoned.add(a);
    }
    let step = match kind {
        Kind::TurnStart => {
            counts.turns += 1;
            if let Some(agent) = agent {
                *counts.agent_turns.entry(agent.to_owned()).or_default() += 1;
            }
            let turn_id = store.opt(d.turn_id).unwrap_or("");
            match open.turn_start(agent, turn_id, line, store.opt(d.interaction_id), None) {
                Some(old) => Step::TurnReplaced(old),
                None => Step::Plain,
            }
        }
        Kind::TurnEnd => Step::TurnEnded(open.turn_end(agent, store.opt(d.turn_id).unwrap_or(""))),
        Kind::UserMessage => {
            if d.autopilot == Some(true) {
                counts.autopilot_continuations += 1;
            } else {
                counts.user_messages += 1;
            }
            open.user_message(agent);
            Step::Plain
        }
        Kind::AssistantMessage => {
            // The Copilot CLI writes no turn events for a sub-agent's call, only its message.
            if let Some(agent) = agent
                && open.turn_of(Some(agent)).is_none()
            {
                *counts
                    .agent_answer_calls
                    .entry(agent.to_owned())
                    .or_default() += 1;
            }
            let requests = d
                .requests(store)
                .iter()
                .filter_map(|(id, name)| Some((store.opt(*id)?, store.opt(*name).unwrap_or(""))));
            open.assistant_message(agent, requests, line, store.opt(d.model));
            Step::Plain
        }
        Kind::ToolStart => match store.opt(d.tool_call_id) {
            Some(id) => Step::ToolStarted(open.tool_start(
                agent,
                id,
                store.opt(d.tool_name).unwrap_or(""),
                line,
                None,
            )),
            None => Step::Plain,
        },
        Kind::ToolComplete => {
            let Some(id) = store.opt(d.tool_call_id) else {
                return Step::Plain;
            };
            let call = open.tool_complete(id);
            let name = call.as_ref().map_or(UNKNOWN_TOOL, |c| c.name.as_str());
            let tools = &mut counts.tool_calls;
            let key = if tools.contains_key(name) || tools.len() < MAX_TOOL_NAMES {
                name
            } else {
                OTHER_TOOLS
            };
            let entry = match tools.get_mut(key) {
                Some(entry) => entry,
                None => tools.entry(key.to_owned()).or_default(),
            };
            // A result without `success: true` did not succeed.
            if d.success == Some(true) {
                entry.ok += 1;
            } else {
                entry.failed += 1;
            }
            Step::ToolCompleted(call)
        }
        Kind::PermissionRequested => {
            if let Some(request) = store.opt(d.request_id) {
                open.permission_requested(request, store.opt(d.permission_tool_call_id), line);
            }
            Step::Plain
        }
        Kind::PermissionCompleted => {
            if let Some(request) = store.opt(d.request_id) {
                open.permission_completed(request);
            }
            Step::Plain
        }
        Kind::ExternalRequested => {
            if let (Some(request), Some(call)) =
                (store.opt(d.request_id), store.opt(d.tool_call_id))
            {
                open.external_requested(
                    agent,
                    request,
                    call,
                    store.opt(d.tool_name).unwrap_or(""),
                    line,
                );
            }
            Step::Plain
        }
        Kind::ExternalCompleted => {
            if let Some(request) = store.opt(d.request_id) {
                open.external_completed(request);
            }
            Step::Plain
        }
        Kind::TaskComplete => {
            counts.task_complete = Some(TaskCompletion {
                summary: store.opt(d.summary).map(str::to_owned),
                success: d.success,
            });
            open.task_complete(agent);
            Step::Plain
        }
        Kind::SessionError => {
            counts.errors += 1;
            open.loop_stopped(agent);
            Step::Plain
        }
        Kind::CompactionStart => {
            counts.compaction_calls += 1;
            Step::Plain
        }
        Kind::Abort => {
            counts.aborts += 1;
            open.loop_stopped(agent);
            Step::Plain
        }
        Kind::SessionResume => {
            counts.resumes += 1;
            open.resumed(line);
            Step::Plain
        }
        Kind::SystemMessage | Kind::Other => Step::Plain,
    };
    match abandoned {
        Some(a) => Step::Abandoned(Box::new(a)),
        None => step,
    }
}
