//! Work that is started and not yet finished: turns, tool calls, permission and external-tool
//! requests, and whether the agent loop was still running.
//!
//! Both [`crate::Folder`] and the audit drive this one tracker, so the open work a fold reports
//! and the open work an audit reports cannot disagree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Most tool calls tracked as open at once; beyond it the oldest are dropped (and counted), so a
/// damaged journal with millions of unanswered calls cannot exhaust memory.
pub const MAX_OPEN_TOOL_CALLS: usize = 65_536;

/// Most pending permission or external-tool requests tracked at once (same reason).
pub const MAX_PENDING_REQUESTS: usize = 65_536;

/// A turn (one LLM call) that started and has not ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenTurn {
    /// `turnId` of the `assistant.turn_start`.
    pub turn_id: String,
    /// Sub-agent that runs the turn; `None` for the main agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Line (1-based event number) of the `assistant.turn_start`.
    pub line: u64,
    /// Interaction of the turn, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// Model of the turn, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tool calls the turn's `assistant.message` requested.
    pub tool_requests: u32,
    /// The turn recorded `session.task_complete`: the loop stops after it.
    pub task_completed: bool,
    /// An `abort` or `session.error` came while the turn was open: the loop stops after it,
    /// even though the turn's closing events (interrupted results, turn end) follow.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// A tool call requested by the model or started by the engine, without a result yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenToolCall {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// A `tool.execution_start` was recorded (else it was only requested).
    pub started: bool,
    /// Line of the request (or of the start when there was no request).
    pub line: u64,
    /// Line of the turn that was open when the call was made, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_line: Option<u64>,
    /// `turnId` of that turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Interaction of that turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// Model that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sub-agent that made the call; `None` for the main agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Order in which calls were opened (results are written in this order).
    pub seq: u64,
    /// Already reported as unfinished when its turn ended (reported once only).
    pub reported: bool,
}

/// A `permission.requested` without its `permission.completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPermission {
    /// The request's id.
    pub request_id: String,
    /// The tool call it is about, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Line of the request.
    pub line: u64,
    /// Order of the requests.
    pub seq: u64,
}

/// An `external_tool.requested` whose tool call has no result yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingExternalTool {
    /// The request's id.
    pub request_id: String,
    /// The tool call it runs.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Line of the request.
    pub line: u64,
    /// Order of the requests.
    pub seq: u64,
}

/// What `assistant.turn_end` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// It closed the open turn; `unfinished` lists the ids of that turn's tool calls that have
    /// no result (each reported once).
    Closed {
        /// The turn that ended.
        turn: OpenTurn,
        /// Tool calls of the turn still without a result, not reported before.
        unfinished: Vec<String>,
    },
    /// It closed the open turn, but that turn had another `turnId`.
    Mismatch {
        /// The turn that was open.
        open: OpenTurn,
    },
    /// No turn of that agent was open.
    NoOpenTurn,
}

/// What `tool.execution_start` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStart {
    /// A call nobody had requested (user- or runtime-initiated tools do this).
    Fresh,
    /// A call the model had requested.
    Requested,
    /// The call had already started, at this line.
    Duplicate(u64),
}

/// The open work of a session at one point of its journal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenWork {
    /// Open turns, at most one per agent (main agent first when both exist).
    pub turns: Vec<OpenTurn>,
    /// Open tool calls by id.
    pub tool_calls: BTreeMap<String, OpenToolCall>,
    /// Pending permission requests by request id.
    pub permissions: BTreeMap<String, PendingPermission>,
    /// Pending external-tool requests by request id.
    pub external_tools: BTreeMap<String, PendingExternalTool>,
    /// The main agent's loop was running: a user message awaits the end of its turns.
    pub interaction_active: bool,
    /// Tool calls or requests dropped because more than the caps were open at once.
    pub dropped: u64,
    /// Line of a `session.resume` that found work open: what was opened before it is what a
    /// crash left, abandoned by the first new work unless something closes it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_over_at: Option<u64>,
    next_seq: u64,
}

/// What a crash left open, given up by the first new work after a `session.resume` (the
/// Copilot runtime writes no result and no turn end for it; it is not a violation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Abandoned {
    /// Line of the `session.resume`.
    pub resume_line: u64,
    /// Turns without an end.
    pub turns: Vec<OpenTurn>,
    /// Tool calls without a result, in the order they were opened.
    pub tool_calls: Vec<OpenToolCall>,
    /// Permission requests without an answer.
    pub permissions: Vec<PendingPermission>,
    /// External-tool requests whose call has no result.
    pub external_tools: Vec<PendingExternalTool>,
}

impl Abandoned {
    /// True when nothing was given up.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
            && self.tool_calls.is_empty()
            && self.permissions.is_empty()
            && self.external_tools.is_empty()
    }
}

impl OpenWork {
    /// True when nothing is open and the loop is idle.
    pub fn is_idle(&self) -> bool {
        !self.interaction_active && !self.has_open_items()
    }

    /// True when a turn, tool call or request is open (what a resume plan must close).
    pub fn has_open_items(&self) -> bool {
        !self.turns.is_empty()
            || !self.tool_calls.is_empty()
            || !self.permissions.is_empty()
            || !self.external_tools.is_empty()
    }

    /// Open tool calls in the order they were opened.
    pub fn tool_calls_in_order(&self) -> Vec<&OpenToolCall> {
        let mut calls: Vec<&OpenToolCall> = self.tool_calls.values().collect();
        calls.sort_by_key(|c| c.seq);
        calls
    }

    /// Pending permission requests in the order they were made.
    pub fn permissions_in_order(&self) -> Vec<&PendingPermission> {
        let mut items: Vec<&PendingPermission> = self.permissions.values().collect();
        items.sort_by_key(|p| p.seq);
        items
    }

    /// Pending external-tool requests in the order they were made.
    pub fn external_tools_in_order(&self) -> Vec<&PendingExternalTool> {
        let mut items: Vec<&PendingExternalTool> = self.external_tools.values().collect();
        items.sort_by_key(|p| p.seq);
        items
    }

    /// The open turn of an agent.
    pub fn turn_of(&self, agent: Option<&str>) -> Option<&OpenTurn> {
        self.turns.iter().find(|t| t.agent_id.as_deref() == agent)
    }

    fn turn_of_mut(&mut self, agent: Option<&str>) -> Option<&mut OpenTurn> {
        self.turns
            .iter_mut()
            .find(|t| t.agent_id.as_deref() == agent)
    }

    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// `session.resume` at `line`: remembers that what is open now was left by the previous
    /// process (turnstile's own resume closes it right after; the Copilot runtime never does).
    pub fn resumed(&mut self, line: u64) {
        self.resumed_over_at = self.has_open_items().then_some(line);
    }

    /// New work after a resume (a user message or a turn start): gives up what the previous
    /// process left open and nothing closed since; `None` when there is nothing.
    pub fn abandon_left_over(&mut self) -> Option<Abandoned> {
        let at = self.resumed_over_at.take()?;
        let before = |line: u64| line < at;
        let (turns, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.turns)
            .into_iter()
            .partition(|t| before(t.line));
        self.turns = kept;
        let tool_calls = take_before(&mut self.tool_calls, at, |c| (c.line, c.seq));
        let permissions = take_before(&mut self.permissions, at, |p| (p.line, p.seq));
        let external_tools = take_before(&mut self.external_tools, at, |p| (p.line, p.seq));
        let abandoned = Abandoned {
            resume_line: at,
            turns,
            tool_calls,
            permissions,
            external_tools,
        };
        (!abandoned.is_empty()).then_some(abandoned)
    }

    /// `user.message`: the main agent's loop starts (or continues, for autopilot nudges).
    pub fn user_message(&mut self, agent: Option<&str>) {
        if agent.is_none() {
            self.interaction_active = true;
        }
    }

    /// `assistant.turn_start`; returns the turn of the same agent it replaces, if one was open.
    pub fn turn_start(
        &mut self,
        agent: Option<&str>,
        turn_id: &str,
        line: u64,
        interaction_id: Option<&str>,
        model: Option<&str>,
    ) -> Option<OpenTurn> {
        let turn = OpenTurn {
            turn_id: turn_id.to_owned(),
            agent_id: agent.map(str::to_owned),
            line,
            interaction_id: interaction_id.map(str::to_owned),
            model: model.map(str::to_owned),
            tool_requests: 0,
            task_completed: false,
            stopped: false,
        };
        let replaced = match self
            .turns
            .iter()
            .position(|t| t.agent_id.as_deref() == agent)
        {
            Some(i) => Some(std::mem::replace(&mut self.turns[i], turn)),
            None => {
                // Keep the main agent first: the resume plan closes sub-agent turns before it.
                if agent.is_none() {
                    self.turns.push(turn);
                } else {
                    self.turns.insert(0, turn);
                }
                None
            }
        };
        if agent.is_none() {
            self.interaction_active = true;
        }
        replaced
    }

    /// `assistant.message`: its tool requests become open calls.
    pub fn assistant_message<'a>(
        &mut self,
        agent: Option<&str>,
        requests: impl IntoIterator<Item = (&'a str, &'a str)>,
        line: u64,
        model: Option<&str>,
    ) {
        let (turn_line, turn_id, interaction_id) = match self.turn_of(agent) {
            Some(t) => (
                Some(t.line),
                Some(t.turn_id.clone()),
                t.interaction_id.clone(),
            ),
            None => (None, None, None),
        };
        let mut added = 0u32;
        for (id, name) in requests {
            added += 1;
            if self.tool_calls.contains_key(id) {
                continue;
            }
            let seq = self.seq();
            self.insert_call(OpenToolCall {
                tool_call_id: id.to_owned(),
                name: name.to_owned(),
                started: false,
                line,
                turn_line,
                turn_id: turn_id.clone(),
                interaction_id: interaction_id.clone(),
                model: model.map(str::to_owned),
                agent_id: agent.map(str::to_owned),
                seq,
                reported: false,
            });
        }
        if let Some(turn) = self.turn_of_mut(agent) {
            turn.tool_requests = turn.tool_requests.saturating_add(added);
        }
    }

    fn insert_call(&mut self, call: OpenToolCall) {
        if self.tool_calls.len() >= MAX_OPEN_TOOL_CALLS
            && let Some(oldest) = self
                .tool_calls
                .values()
                .min_by_key(|c| c.seq)
                .map(|c| c.tool_call_id.clone())
        {
            self.tool_calls.remove(&oldest);
            self.dropped += 1;
        }
        self.tool_calls.insert(call.tool_call_id.clone(), call);
    }

    /// `tool.execution_start`.
    pub fn tool_start(
        &mut self,
        agent: Option<&str>,
        id: &str,
        name: &str,
        line: u64,
        model: Option<&str>,
    ) -> ToolStart {
        if let Some(call) = self.tool_calls.get_mut(id) {
            if call.started {
                return ToolStart::Duplicate(call.line);
            }
            call.started = true;
            call.line = line;
            if call.name.is_empty() {
                call.name = name.to_owned();
            }
            return ToolStart::Requested;
        }
        let (turn_line, turn_id, interaction_id) = match self.turn_of(agent) {
            Some(t) => (
                Some(t.line),
                Some(t.turn_id.clone()),
                t.interaction_id.clone(),
            ),
            None => (None, None, None),
        };
        let seq = self.seq();
        self.insert_call(OpenToolCall {
            tool_call_id: id.to_owned(),
            name: name.to_owned(),
            started: true,
            line,
            turn_line,
            turn_id,
            interaction_id,
            model: model.map(str::to_owned),
            agent_id: agent.map(str::to_owned),
            seq,
            reported: false,
        });
        ToolStart::Fresh
    }

    /// `tool.execution_complete`: returns the call it closed (`None`: no such call was open).
    /// External-tool requests of the call are closed with it.
    pub fn tool_complete(&mut self, id: &str) -> Option<OpenToolCall> {
        let call = self.tool_calls.remove(id);
        if !self.external_tools.is_empty() {
            self.external_tools.retain(|_, p| p.tool_call_id != id);
        }
        call
    }

    /// `permission.requested`.
    pub fn permission_requested(
        &mut self,
        request_id: &str,
        tool_call_id: Option<&str>,
        line: u64,
    ) {
        if self.permissions.len() >= MAX_PENDING_REQUESTS
            && !self.permissions.contains_key(request_id)
            && let Some(oldest) = self
                .permissions
                .values()
                .min_by_key(|p| p.seq)
                .map(|p| p.request_id.clone())
        {
            self.permissions.remove(&oldest);
            self.dropped += 1;
        }
        let seq = self.seq();
        self.permissions.insert(
            request_id.to_owned(),
            PendingPermission {
                request_id: request_id.to_owned(),
                tool_call_id: tool_call_id.map(str::to_owned),
                line,
                seq,
            },
        );
    }

    /// `permission.completed`; false when no such request was pending.
    pub fn permission_completed(&mut self, request_id: &str) -> bool {
        self.permissions.remove(request_id).is_some()
    }

    /// `external_tool.requested`: the request is pending until its tool call has a result.
    pub fn external_requested(
        &mut self,
        agent: Option<&str>,
        request_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        line: u64,
    ) {
        if !self.tool_calls.contains_key(tool_call_id) {
            // The request implies a running call; track it so a resume closes it.
            self.tool_start(agent, tool_call_id, tool_name, line, None);
        }
        if self.external_tools.len() >= MAX_PENDING_REQUESTS
            && !self.external_tools.contains_key(request_id)
            && let Some(oldest) = self
                .external_tools
                .values()
                .min_by_key(|p| p.seq)
                .map(|p| p.request_id.clone())
        {
            self.external_tools.remove(&oldest);
            self.dropped += 1;
        }
        let seq = self.seq();
        self.external_tools.insert(
            request_id.to_owned(),
            PendingExternalTool {
                request_id: request_id.to_owned(),
                tool_call_id: tool_call_id.to_owned(),
                tool_name: tool_name.to_owned(),
                line,
                seq,
            },
        );
    }

    /// `external_tool.completed` (live only: the type is ephemeral).
    pub fn external_completed(&mut self, request_id: &str) {
        self.external_tools.remove(request_id);
    }

    /// `session.task_complete`: the loop stops after the current turn.
    pub fn task_complete(&mut self, agent: Option<&str>) {
        match self.turn_of_mut(agent) {
            Some(turn) => turn.task_completed = true,
            None if agent.is_none() => self.interaction_active = false,
            None => {}
        }
    }

    /// `session.error` or `abort`: the main loop stops (also when the open turn's closing
    /// events come after it, as turnstile writes them).
    pub fn loop_stopped(&mut self, agent: Option<&str>) {
        if agent.is_none() {
            self.interaction_active = false;
        }
        if let Some(turn) = self.turn_of_mut(agent) {
            turn.stopped = true;
        }
    }

    /// `assistant.turn_end`.
    pub fn turn_end(&mut self, agent: Option<&str>, turn_id: &str) -> TurnEnd {
        let Some(i) = self
            .turns
            .iter()
            .position(|t| t.agent_id.as_deref() == agent)
        else {
            return TurnEnd::NoOpenTurn;
        };
        let turn = self.turns.remove(i);
        if agent.is_none() {
            // The loop goes on only when the model called tools and did not finish the task.
            self.interaction_active =
                turn.tool_requests > 0 && !turn.task_completed && !turn.stopped;
        }
        if turn.turn_id != turn_id {
            return TurnEnd::Mismatch { open: turn };
        }
        let mut unfinished = Vec::new();
        for call in self.tool_calls.values_mut() {
            if call.turn_line == Some(turn.line) && !call.reported {
                call.reported = true;
                unfinished.push(call.tool_call_id.clone());
            }
        }
        TurnEnd::Closed { turn, unfinished }
    }
}

/// Removes and returns, in the order they were opened, the items opened before line `at`;
/// `key` gives an item's line and sequence number.
fn take_before<T: Clone>(
    items: &mut BTreeMap<String, T>,
    at: u64,
    key: impl Fn(&T) -> (u64, u64),
) -> Vec<T> {
    let mut taken = Vec::new();
    items.retain(|_, item| {
        let left = key(item).0 < at;
        if left {
            taken.push(item.clone());
        }
        !left
    });
    taken.sort_by_key(|item| key(item).1);
    taken
}
