//! One journal as the comparison walks it: its lines read one at a time, folded into the
//! session's state (so the conversation each LLM call sent is at hand), and turned into
//! [`Step`]s: a request before each main-agent LLM call, then one step for each event the
//! profile compares, normalised.
//!
//! Memory: one line at a time (the reader's bound, `TURNSTILE_MAX_LINE_BYTES`), the fold's
//! state (the conversation the model sees next, as `turnstile resume` holds it), the ids
//! seen (one entry each, for [`Normaliser`]) and the names of the tool calls still running.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadMode, Record};
use turnstile_replay::view::PRE_CALL;
use turnstile_replay::{Folder, Message};

use crate::behaviour::{self, ResumeWindow};
use crate::error::DiffError;
use crate::neutral::neutral_result;
use crate::normalise::Normaliser;
use crate::profile::Profile;
use crate::volatile::{blank_tag, is_volatile_event, strip_volatile};

/// Events after which the conversation is the one before with messages appended (or a fresh
/// call's result inserted after its request): the comparison of the next request carries
/// on from the messages already compared. After any other main-agent event, it starts again
/// from the first message.
const APPENDS: &[&str] = &[
    "user.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.usage",
    "assistant.reasoning",
    "tool.execution_start",
    "tool.execution_partial_result",
    "tool.execution_complete",
    "permission.requested",
    "permission.completed",
    "hook.start",
    "hook.end",
    "session.usage_info",
    "session.info",
    "session.warning",
    "session.task_complete",
    "session.error",
    "session.shutdown",
    "session.start",
];

/// What a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StepKind {
    /// The conversation a main-agent LLM call sent.
    Request,
    /// A `user.message`.
    Prompt,
    /// An `assistant.message`: the model's answer, text and tool requests.
    Answer,
    /// A `tool.execution_start`: the tool's name and arguments.
    ToolCall,
    /// A `tool.execution_complete`: the tool's result.
    ToolResult,
    /// Any other event.
    Event,
}

impl StepKind {
    fn of(event_type: &str) -> StepKind {
        match event_type {
            "user.message" => StepKind::Prompt,
            "assistant.message" => StepKind::Answer,
            "tool.execution_start" => StepKind::ToolCall,
            "tool.execution_complete" => StepKind::ToolResult,
            _ => StepKind::Event,
        }
    }
}

/// Where a step is in its session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Place {
    /// 1-based line of the journal (for a request: the line of its `assistant.turn_start`).
    pub line: u64,
    /// User prompts so far (autopilot nudges not counted).
    pub prompt: u64,
    /// Main-agent LLM calls so far (the one a request is of).
    pub llm_call: u64,
    /// Tool calls started so far, of every agent.
    pub tool_call: u64,
    /// The sub-agent, when the event is one's (normalised).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// One compared step of a journal.
#[derive(Debug, Clone)]
pub struct Step {
    /// What it is.
    pub kind: StepKind,
    /// The event's type (`assistant.turn_start` for a request).
    pub event_type: String,
    /// Where it is.
    pub place: Place,
    /// What is compared, normalised (`null` for a request: the conversation is compared
    /// from the fold).
    pub value: Value,
    /// The tool's name, for tool calls and results.
    pub tool: Option<String>,
}

/// One journal being walked.
pub struct Side {
    path: PathBuf,
    reader: JournalReader,
    folder: Folder,
    norm: Normaliser,
    profile: Profile,
    /// A line read but not applied yet: the request due before it was handed out first.
    stash: Option<Record>,
    /// A main-agent call started whose request has not been handed out.
    call_open: bool,
    /// Line of that call's `assistant.turn_start`.
    call_line: u64,
    place: Place,
    /// The conversation changed otherwise than by appends since the last request.
    rewritten: bool,
    /// Tool calls requested since the last request: their results are appended.
    fresh: HashSet<String>,
    /// Names and numbers of the tool calls started and not finished, by call id.
    running: HashMap<String, (String, u64)>,
    /// After a `session.resume`, before the next prompt or call: what a resumed process closes
    /// of the work the process before it left open (behaviour profile: no step).
    resume_window: ResumeWindow,
}

impl Side {
    /// Opens the journal at `path`.
    pub fn open(path: &Path, profile: Profile, cwd_aliases: &[String]) -> Result<Side, DiffError> {
        let mut norm = Normaliser::new(path);
        for alias in cwd_aliases {
            norm.add_cwd(alias);
        }
        Ok(Side {
            path: path.to_path_buf(),
            reader: JournalReader::open(path, ReadMode::Lenient)?,
            folder: Folder::new(),
            norm,
            profile,
            stash: None,
            call_open: false,
            call_line: 0,
            place: Place::default(),
            rewritten: false,
            fresh: HashSet::new(),
            running: HashMap::new(),
            resume_window: ResumeWindow::default(),
        })
    }

    /// Where the walk is.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// The next step, `None` at the end of the journal.
    pub fn next_step(&mut self) -> Result<Option<Step>, DiffError> {
        loop {
            let record = match self.stash.take() {
                Some(record) => record,
                None => match self.reader.next() {
                    Some(record) => record?,
                    None if self.call_open => return Ok(Some(self.request())),
                    None => return Ok(None),
                },
            };
            let kind = record.event.event_type.as_str();
            let main = record.event.agent_id.is_none();
            if self.call_open && main && !PRE_CALL.contains(&kind) {
                self.stash = Some(record);
                return Ok(Some(self.request()));
            }
            if let Some(step) = self.apply(&record)? {
                return Ok(Some(step));
            }
        }
    }

    /// The request step of the open call (the fold's state is the one before its line).
    fn request(&mut self) -> Step {
        self.call_open = false;
        Step {
            kind: StepKind::Request,
            event_type: "assistant.turn_start".into(),
            place: Place {
                line: self.call_line,
                ..self.place.clone()
            },
            value: Value::Null,
            tool: None,
        }
    }

    /// Folds `record` and gives its step, if the profile compares it.
    fn apply(&mut self, record: &Record) -> Result<Option<Step>, DiffError> {
        let event = &record.event;
        let kind = event.event_type.as_str();
        let main = event.agent_id.is_none();
        let mut data: Value =
            serde_json::from_str(event.data.get()).map_err(|source| DiffError::Data {
                path: self.path.clone(),
                line: record.line,
                source,
            })?;
        self.norm.learn(kind, &data);
        let text =
            |key: &str, data: &Value| data.get(key).and_then(Value::as_str).map(str::to_owned);
        if main {
            let appends = APPENDS.contains(&kind)
                && (kind != "tool.execution_complete"
                    || text("toolCallId", &data).is_some_and(|id| self.fresh.contains(&id)));
            self.rewritten |= !appends;
        }
        self.folder.apply_record(record);
        self.place.line = record.line;
        self.place.agent = None;
        let mut tool = None;
        let mut tool_call = self.place.tool_call;
        match kind {
            "user.message" if main && data["isAutopilotContinuation"] != true => {
                self.place.prompt += 1;
            }
            "assistant.turn_start" if main => {
                self.place.llm_call += 1;
                self.call_open = true;
                self.call_line = record.line;
                self.fresh.clear();
            }
            "assistant.message" if main => {
                for request in data["toolRequests"].as_array().into_iter().flatten() {
                    if let Some(id) = text("toolCallId", request) {
                        self.fresh.insert(id);
                    }
                }
            }
            "tool.execution_start" => {
                self.place.tool_call += 1;
                tool_call = self.place.tool_call;
                if let (Some(id), Some(name)) = (text("toolCallId", &data), text("toolName", &data))
                {
                    tool = Some(name.clone());
                    self.running.insert(id, (name, tool_call));
                }
            }
            "tool.execution_complete" => {
                if let Some((name, n)) =
                    text("toolCallId", &data).and_then(|id| self.running.remove(&id))
                {
                    tool = Some(name);
                    tool_call = n;
                }
            }
            _ => {}
        }
        let closes_left_over = self.resume_window.closes_left_over(kind, main);
        let value = match self.profile {
            Profile::Strict if is_volatile_event(kind, &data) => return Ok(None),
            Profile::Strict => {
                strip_volatile(kind, &mut data);
                let mut value = json!({ "data": data });
                if let Some(agent) = &event.agent_id {
                    value["agentId"] = json!(agent);
                }
                value
            }
            Profile::Behaviour if !main || closes_left_over => return Ok(None),
            Profile::Behaviour => match behaviour::fact(kind, &data, tool.as_deref()) {
                Some(fact) => json!({ "data": fact }),
                None => return Ok(None),
            },
        };
        let mut value = value;
        self.norm.value(&mut value);
        if let Some(agent) = value.get("agentId").and_then(Value::as_str) {
            self.place.agent = Some(agent.to_owned());
        }
        Ok(Some(Step {
            kind: StepKind::of(kind),
            event_type: kind.to_owned(),
            place: Place {
                tool_call,
                ..self.place.clone()
            },
            value,
            tool,
        }))
    }

    /// Whether the conversation changed otherwise than by appends since the last call of
    /// this method.
    pub fn take_rewritten(&mut self) -> bool {
        std::mem::take(&mut self.rewritten)
    }

    /// Messages of the conversation the next (or the open) call sends.
    pub fn conversation_len(&self) -> usize {
        self.folder.state().conversation.len()
    }

    /// Whether message `i` is compared (the behaviour profile leaves the system prompt out:
    /// each runtime has its own).
    pub fn compares_message(&self, i: usize) -> bool {
        !(self.profile == Profile::Behaviour
            && matches!(
                self.folder.state().conversation.get(i),
                Some(Message::System { .. })
            ))
    }

    /// Message `i` of the conversation, normalised.
    pub fn message(&mut self, i: usize) -> Value {
        let Some(message) = self.folder.state().conversation.get(i) else {
            return Value::Null;
        };
        let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.shift_remove("messageId");
            let role = map
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            // Between runtimes, a prompt by what was typed: each wraps it in reminders of its own.
            let typed = map.shift_remove("typed");
            if role == "user"
                && self.profile == Profile::Behaviour
                && let Some(typed) = typed
            {
                map.insert("content".into(), typed);
            }
            if role == "user"
                && let Some(Value::String(content)) = map.get_mut("content")
            {
                *content = blank_tag(content, "current_datetime");
            }
            if role == "tool" && self.profile == Profile::Behaviour {
                let name = map
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if let Some(Value::String(content)) = map.get_mut("content") {
                    *content = neutral_result(&name, content);
                }
            }
        }
        self.norm.value(&mut value);
        value
    }
}
