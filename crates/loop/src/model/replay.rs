//! A provider that answers from a recorded journal, one `assistant.message` per call.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use turnstile_journal::payload::{AssistantMessage, AssistantTurnStart, SessionStart};
use turnstile_journal::{Event, JournalReader, ReadMode};

use super::{
    BoxFuture, ChatRequest, ModelError, ModelEvent, ModelProvider, ModelResponse, ToolCall,
};

/// Model name used when the recording names none.
const UNKNOWN_MODEL: &str = "replay";

/// A [`ModelProvider`] that answers each call, in order, with the next recorded answer.
///
/// An answer is one `assistant.message` of the main agent (the pieces of a message the
/// runtime split into chunks — same `apiCallId`, or `chunkIndex` > 0 — are joined back);
/// sub-agent messages are skipped. Tool calls keep their recorded ids, with the arguments as
/// JSON text. `assistant.usage` is never on disk, so answers carry no usage. When the
/// request asks for streaming, the text and each tool call are also sent as one delta each.
#[derive(Debug)]
pub struct ReplayProvider {
    answers: Vec<ModelResponse>,
    next: AtomicUsize,
}

impl ReplayProvider {
    /// Reads the recorded answers of a journal (`events.jsonl`).
    pub fn from_journal(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let reader = JournalReader::open(path, ReadMode::Lenient).map_err(fixture_error)?;
        let mut events = Vec::new();
        for record in reader {
            events.push(record.map_err(fixture_error)?.event);
        }
        Self::from_events(events).map_err(|mut e| {
            e.message = format!("{}: {}", path.display(), e.message);
            e
        })
    }

    /// Takes the recorded answers from events (in journal order).
    pub fn from_events(events: Vec<Event>) -> Result<Self, ModelError> {
        let mut answers: Vec<ModelResponse> = Vec::new();
        let mut model = UNKNOWN_MODEL.to_string();
        // Whether the last answer may still get more chunks of the same message.
        let mut open_chunks = false;
        for event in &events {
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
                }
                "assistant.message" => {
                    let message: AssistantMessage = event.payload().map_err(fixture_error)?;
                    if event.agent_id.is_some() || message.parent_tool_call_id.is_some() {
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
                        _ => answers.push(answer),
                    }
                    open_chunks = true;
                }
                // A new prompt (or anything the user did) starts a new call for sure.
                "user.message" | "session.resume" | "abort" => open_chunks = false,
                _ => {}
            }
        }
        // A joined message is a tool-call answer when any of its chunks called tools.
        for answer in &mut answers {
            answer.finish_reason = Some(finish_reason(&answer.tool_calls).to_string());
        }
        Ok(ReplayProvider {
            answers,
            next: AtomicUsize::new(0),
        })
    }

    /// Every recorded answer, in order.
    pub fn answers(&self) -> &[ModelResponse] {
        &self.answers
    }

    /// How many answers have not been given yet.
    pub fn remaining(&self) -> usize {
        self.answers
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }
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

fn fixture_error(error: impl std::fmt::Display) -> ModelError {
    ModelError::new("fixture", format!("cannot read the recording: {error}"))
}

impl ModelProvider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            if cancel.is_cancelled() {
                return Err(ModelError::cancelled());
            }
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(answer) = self.answers.get(index) else {
                return Err(ModelError::new(
                    "fixture",
                    format!(
                        "the recording has no more assistant messages ({} were recorded)",
                        self.answers.len()
                    ),
                ));
            };
            if request.stream {
                if !answer.content.is_empty() {
                    let _ = events.send(ModelEvent::TextDelta(answer.content.clone()));
                }
                for call in &answer.tool_calls {
                    let _ = events.send(ModelEvent::ToolCallDelta {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments_delta: call.arguments.clone(),
                    });
                }
            }
            Ok(answer.clone())
        })
    }
}
