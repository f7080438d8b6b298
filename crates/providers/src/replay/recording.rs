//! Reading a recorded journal into the calls a replay answers: each main-agent call with its
//! reply and where it stands in the conversation, each sub-agent's answers by its `agentId`,
//! and the compactions' summary replies.

use std::collections::HashMap;

use turnstile_journal::Event;
use turnstile_journal::payload::{
    AssistantMessage, AssistantTurnStart, CompactionComplete, SessionError, SessionStart,
};

use super::super::{HistoryStep, ModelError, ModelErrorKind, ModelResponse, ToolCall};

/// Model name used when the recording names none.
const UNKNOWN_MODEL: &str = "replay";

/// What a recording holds for a replay.
#[derive(Debug)]
pub(super) struct Recording {
    /// The main agent's answers, in order.
    pub(super) answers: Vec<ModelResponse>,
    /// The main agent's calls, in order.
    pub(super) calls: Vec<RecordedCall>,
    /// Each sub-agent's answers, by its `agentId`.
    pub(super) agent_answers: HashMap<String, Vec<ModelResponse>>,
    /// The compactions' summary calls, in order.
    pub(super) summaries: Vec<Reply>,
}

/// One recorded LLM call.
#[derive(Debug, Clone)]
pub(super) struct RecordedCall {
    pub(super) reply: Reply,
    /// Main-agent user messages before the call (autopilot nudges included).
    pub(super) users_before: usize,
    /// Answers before the call.
    pub(super) answers_before: usize,
    /// What the recording did to the history right before the call.
    pub(super) history: Vec<HistoryStep>,
}

#[derive(Debug, Clone)]
pub(super) enum Reply {
    /// Index into `answers`.
    Answer(usize),
    /// A sub-agent's answer: its id and the index into its answers.
    Agent(String, usize),
    /// A summary's text.
    Summary(ModelResponse),
    Fail(ModelError),
    /// Never answered: wait for cancellation.
    Pending,
}

/// Reads the recorded calls from events (in journal order).
pub(super) fn read(events: Vec<Event>) -> Result<Recording, ModelError> {
    let mut answers: Vec<ModelResponse> = Vec::new();
    let mut calls: Vec<RecordedCall> = Vec::new();
    let mut agent_answers: HashMap<String, Vec<ModelResponse>> = HashMap::new();
    let mut summaries: Vec<Reply> = Vec::new();
    let mut model = UNKNOWN_MODEL.to_string();
    // Whether the last answer may still get more chunks of the same message.
    let mut open_chunks = false;
    // A top-level turn whose call has no outcome yet: (users, answers) before it.
    let mut open_call: Option<(usize, usize)> = None;
    // That turn has ended (a turn that ended with no outcome made no usable call, unless
    // an error or an abort follows).
    let mut open_call_ended = false;
    let mut users = 0usize;
    // History steps for the next main-agent call.
    let mut history: Vec<HistoryStep> = Vec::new();
    // Compactions that completed inside a main-agent turn (the runtime's, in the
    // background), with the main turns started since: the model sees one at the next
    // prompt or at the second turn start after it, as the fold applies it.
    let mut background: Vec<(HistoryStep, usize)> = Vec::new();
    let mut main_turn_open = false;
    for event in &events {
        let top_level = event.agent_id.is_none();
        match event.event_type.as_str() {
            "session.start" => {
                let start: SessionStart = event.payload().map_err(fixture_error)?;
                if let Some(selected) = start.selected_model.filter(|m| !m.is_empty()) {
                    model = selected;
                }
            }
            "assistant.turn_start" => {
                let turn: AssistantTurnStart = event.payload().map_err(fixture_error)?;
                if let Some(m) = turn.model.filter(|m| !m.is_empty()) {
                    model = m;
                }
                open_chunks = false;
                if top_level {
                    open_call = Some((users, answers.len()));
                    open_call_ended = false;
                    main_turn_open = true;
                    for (step, turns) in std::mem::take(&mut background) {
                        if turns >= 1 {
                            history.push(step);
                        } else {
                            background.push((step, turns + 1));
                        }
                    }
                }
            }
            "assistant.turn_end" if top_level => {
                open_call_ended = true;
                main_turn_open = false;
            }
            "assistant.message" => {
                let message: AssistantMessage = event.payload().map_err(fixture_error)?;
                let agent = event
                    .agent_id
                    .clone()
                    .or_else(|| message.parent_tool_call_id.clone());
                if let Some(agent) = agent {
                    add_agent_answer(agent_answers.entry(agent).or_default(), message, &model);
                    continue;
                }
                let answer = answer_of(message.clone(), &model);
                let continues = open_chunks
                    && answers.last().is_some_and(|last| {
                        message.chunk_index.is_some_and(|i| i > 0)
                            || (last.api_call_id.is_some()
                                && last.api_call_id == answer.api_call_id)
                    });
                match answers.last_mut() {
                    Some(last) if continues => {
                        last.content.push_str(&answer.content);
                        last.tool_calls.extend(answer.tool_calls);
                    }
                    _ => {
                        let (users_before, answers_before) =
                            open_call.take().unwrap_or((users, answers.len()));
                        calls.push(RecordedCall {
                            reply: Reply::Answer(answers.len()),
                            users_before,
                            answers_before,
                            history: std::mem::take(&mut history),
                        });
                        answers.push(answer);
                    }
                }
                open_chunks = true;
            }
            "session.compaction_complete" if top_level => {
                let complete: CompactionComplete = event.payload().map_err(fixture_error)?;
                let step = HistoryStep::Compact {
                    replaced: complete
                        .messages_removed
                        .or(complete.pre_compaction_messages_length)
                        .filter(|_| complete.success),
                };
                summaries.push(summary_reply(complete, &model));
                if main_turn_open {
                    background.push((step, 0));
                } else {
                    history.push(step);
                }
            }
            "session.truncation" if top_level => {
                history.push(HistoryStep::Truncate(event.data.clone()));
            }
            "session.error" if top_level => {
                if let Some((users_before, answers_before)) = open_call.take() {
                    let error: SessionError = event.payload().map_err(fixture_error)?;
                    let mut failure = ModelError::new(
                        ModelErrorKind::from_wire(&error.error_type),
                        error.message,
                    );
                    failure.status_code = error.status_code;
                    calls.push(RecordedCall {
                        reply: Reply::Fail(failure),
                        users_before,
                        answers_before,
                        history: std::mem::take(&mut history),
                    });
                }
            }
            "abort" | "session.resume" => {
                open_chunks = false;
                // An abort cancels the call; a process that died mid-call left its turn
                // open (a resume plan closes it after `session.resume`).
                let interrupted = event.event_type.as_str() == "abort" || !open_call_ended;
                if let Some((users_before, answers_before)) =
                    open_call.take().filter(|_| interrupted)
                {
                    calls.push(RecordedCall {
                        reply: Reply::Pending,
                        users_before,
                        answers_before,
                        history: std::mem::take(&mut history),
                    });
                }
            }
            // A new prompt starts a new call for sure.
            "user.message" if top_level => {
                open_chunks = false;
                open_call = None;
                users += 1;
                history.extend(background.drain(..).map(|(step, _)| step));
            }
            _ => {}
        }
    }
    if let Some((users_before, answers_before)) = open_call.filter(|_| !open_call_ended) {
        calls.push(RecordedCall {
            reply: Reply::Pending,
            users_before,
            answers_before,
            history: std::mem::take(&mut history),
        });
    }
    // A joined message is a tool-call answer when any of its chunks called tools.
    for answer in answers
        .iter_mut()
        .chain(agent_answers.values_mut().flatten())
    {
        answer.finish_reason = Some(finish_reason(&answer.tool_calls).to_string());
    }
    Ok(Recording {
        answers,
        calls,
        agent_answers,
        summaries,
    })
}

/// Adds a sub-agent's recorded message to its answers: a piece of the message before it (a
/// later chunk, or the same `apiCallId`) joins it.
fn add_agent_answer(answers: &mut Vec<ModelResponse>, message: AssistantMessage, model: &str) {
    let later_chunk = message.chunk_index.is_some_and(|i| i > 0);
    let answer = answer_of(message, model);
    match answers.last_mut() {
        Some(last)
            if later_chunk
                || (last.api_call_id.is_some() && last.api_call_id == answer.api_call_id) =>
        {
            last.content.push_str(&answer.content);
            last.tool_calls.extend(answer.tool_calls);
        }
        _ => answers.push(answer),
    }
}

/// What a compaction's summary call answered, from its `session.compaction_complete`: the
/// summary, or the failure (turnstile records its own failures behind
/// `the summary request failed: `, which a replay writes again).
fn summary_reply(complete: CompactionComplete, model: &str) -> Reply {
    if complete.success {
        return Reply::Summary(ModelResponse {
            content: complete.summary_content.unwrap_or_default(),
            finish_reason: Some("stop".into()),
            model: model.to_owned(),
            ..Default::default()
        });
    }
    let error = complete.error.unwrap_or_default();
    let message = error
        .strip_prefix("the summary request failed: ")
        .unwrap_or(&error)
        .to_owned();
    let mut failure = ModelError::new(ModelErrorKind::Http, message);
    failure.status_code = complete.status_code;
    Reply::Fail(failure)
}

fn finish_reason(tool_calls: &[ToolCall]) -> &'static str {
    if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn answer_of(message: AssistantMessage, model: &str) -> ModelResponse {
    let tool_calls: Vec<ToolCall> = message
        .tool_requests
        .unwrap_or_default()
        .into_iter()
        .map(|request| ToolCall {
            id: request.tool_call_id,
            name: request.name,
            arguments: match request.arguments {
                Some(value) => value.to_string(),
                None => "{}".to_string(),
            },
        })
        .collect();
    ModelResponse {
        finish_reason: Some(finish_reason(&tool_calls).to_string()),
        content: message.content,
        tool_calls,
        usage: None,
        api_call_id: message.api_call_id,
        model: message
            .model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| model.to_string()),
    }
}

/// The error of a recording that cannot be read (a journal, or an event's payload).
pub(super) fn fixture_error(error: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ModelErrorKind::Fixture,
        format!("cannot read the recording: {error}"),
    )
}
