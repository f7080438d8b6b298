//! Sub-agents' names: the lane of a sub-agent is keyed by the envelope's `agentId` (the id of
//! the `task` call that spawned it), which means nothing to a reader. Its name comes from the
//! `task` call's arguments (`name`, else `description`) and from `subagent.started`
//! (`agentDisplayName`, else `agentName`); both are remembered by that id.

use serde_json::Value;
use turnstile_journal::payload::{SubagentCompleted, SubagentFailed, SubagentStarted};

use super::caps::{MAX_AGENT_NAMES, NAME_CAP};
use super::header::AgentName;
use super::state::{At, Timeline};
use crate::items::{Clipped, Item, MarkKind, NoteKind};

/// The tool whose calls spawn sub-agents, in both runtimes.
const TASK_TOOL: &str = "task";

impl Timeline {
    /// Remembers the name a `task` call gives the agent it spawns.
    pub(super) fn on_task_call(&mut self, call_id: &str, tool: &str, arguments: Option<&Value>) {
        if tool != TASK_TOOL {
            return;
        }
        let field = |key: &str| {
            arguments
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
        };
        if let Some(name) = field("name").or_else(|| field("description"))
            && let Some(agent) = self.agent_entry(call_id)
        {
            agent.name = Some(short(name));
        }
    }

    pub(super) fn on_subagent_started(&mut self, s: &SubagentStarted, at: At, out: &mut Vec<Item>) {
        let kind = if s.agent_display_name.is_empty() {
            &s.agent_name
        } else {
            &s.agent_display_name
        };
        if !kind.is_empty()
            && let Some(agent) = self.agent_entry(&s.tool_call_id)
        {
            agent.kind = Some(short(kind));
        }
        let text = format!("sub-agent {}started", self.named(&s.tool_call_id, &at));
        self.note_or_mark(at, NoteKind::Info, MarkKind::Info, false, &text, out);
    }

    pub(super) fn on_subagent_completed(
        &mut self,
        s: &SubagentCompleted,
        at: At,
        out: &mut Vec<Item>,
    ) {
        let text = format!("sub-agent {}completed", self.named(&s.tool_call_id, &at));
        self.note_or_mark(at, NoteKind::Info, MarkKind::Info, false, &text, out);
    }

    pub(super) fn on_subagent_failed(&mut self, s: &SubagentFailed, at: At, out: &mut Vec<Item>) {
        let text = format!(
            "sub-agent {}failed: {}",
            self.named(&s.tool_call_id, &at),
            s.error
        );
        self.note_or_mark(at, NoteKind::Error, MarkKind::Error, true, &text, out);
    }

    /// The agent's name and a space, or its id when the journal names it nowhere; nothing when
    /// the event is filed under the agent itself, whose name the page shows beside it already.
    fn named(&self, id: &str, at: &At) -> String {
        if at.lane.as_deref() == Some(id) {
            return String::new();
        }
        let name = self.facts.agents.get(id).and_then(AgentName::label);
        format!("{} ", name.as_deref().unwrap_or(id))
    }

    /// The entry for `id`, made when there is room.
    fn agent_entry(&mut self, id: &str) -> Option<&mut AgentName> {
        let agents = &mut self.facts.agents;
        if !agents.contains_key(id) && agents.len() >= MAX_AGENT_NAMES {
            return None;
        }
        Some(agents.entry(id.to_owned()).or_default())
    }
}

fn short(s: &str) -> String {
    let clip = Clipped::new(s.trim(), NAME_CAP);
    if clip.left_out > 0 {
        format!("{}…", clip.shown)
    } else {
        clip.shown
    }
}
