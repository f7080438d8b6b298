//! A provider that answers from a recorded journal, one recorded LLM call per call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use turnstile_journal::{Event, JournalReader, ReadMode};

mod recording;

use recording::{RecordedCall, Reply, fixture_error};

use super::{
    BoxFuture, CallOrigin, ChatMessage, ChatRequest, HistoryStep, ModelError, ModelErrorKind,
    ModelEvent, ModelProvider, ModelResponse,
};

/// A [`ModelProvider`] that answers each call, in order, the way the recorded call was answered.
///
/// A recorded call is a top-level `assistant.turn_start` and what came of it:
/// - an answer: one `assistant.message` of the main agent (the pieces of a message the runtime
///   split into chunks — same `apiCallId`, or `chunkIndex` > 0 — are joined back; sub-agent
///   messages are skipped). Tool calls keep their recorded ids, with the arguments as JSON text.
///   `assistant.usage` is never on disk, so answers carry no usage. When the request asks for
///   streaming, the text and each tool call are also sent as one delta each;
/// - a failure: no answer, then a `session.error`: the call fails with the recorded
///   `errorType`, `statusCode` and `message`;
/// - no outcome: no answer, then an `abort`, a `session.resume` (the process died) or the end
///   of the journal: the call waits until it is cancelled.
///
/// A sub-agent's call ([`CallOrigin::Agent`]) is answered from that agent's own recorded
/// answers (its `assistant.message`s under the same `agentId`), in order, however the agents'
/// calls interleave with each other and with the main agent's; a compaction's summary call
/// ([`CallOrigin::Summary`]) from the recorded `session.compaction_complete`s, in order: the
/// `summaryContent` of a successful one, the `error` (and `statusCode`) of a failed one.
///
/// A provider whose first request already holds assistant messages (a resumed conversation,
/// e.g. `turnstile resume --provider replay`) starts at the recorded call made at the same point
/// of the conversation: the one with as many user and assistant messages before it.
///
/// Recordings hold absolute paths of the directory they ran in; [`Self::with_path_map`] makes
/// tool-call arguments point into the directory the replay runs in instead.
#[derive(Debug)]
pub struct ReplayProvider {
    answers: Vec<ModelResponse>,
    calls: Vec<RecordedCall>,
    /// Each sub-agent's answers, by its `agentId`.
    agent_answers: HashMap<String, Vec<ModelResponse>>,
    /// The compactions' summary calls, in order.
    summaries: Vec<Reply>,
    cursor: Mutex<Cursor>,
    path_map: Option<(String, String)>,
}

#[derive(Debug, Default)]
struct Cursor {
    next: usize,
    started: bool,
    /// Each sub-agent's next answer.
    agent_next: HashMap<String, usize>,
    /// The next summary call.
    summary_next: usize,
    /// The next main-agent call is one the recording does not hold
    /// ([`ReplayProvider::leave_next_call_unanswered`]).
    unrecorded_next: bool,
}

impl ReplayProvider {
    /// Reads the recorded calls of a journal (`events.jsonl`).
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

    /// Takes the recorded calls from events (in journal order).
    pub fn from_events(events: Vec<Event>) -> Result<Self, ModelError> {
        let recording = recording::read(events)?;
        Ok(ReplayProvider {
            answers: recording.answers,
            calls: recording.calls,
            agent_answers: recording.agent_answers,
            summaries: recording.summaries,
            cursor: Mutex::new(Cursor::default()),
            path_map: None,
        })
    }

    /// Rewrites `recorded_dir` to `replay_dir` in every string of the tool-call arguments it
    /// answers with (see [`Self::rewrite_paths`]), so calls recorded in one working directory
    /// run in another.
    pub fn with_path_map(
        mut self,
        recorded_dir: impl Into<String>,
        replay_dir: impl Into<String>,
    ) -> Self {
        let (from, to) = (recorded_dir.into(), replay_dir.into());
        self.path_map = (!from.is_empty() && from != to).then_some((from, to));
        self
    }

    /// Replaces the directory path `from` by `to` in every string inside `value` (object keys
    /// excepted): wherever `from` occurs and is not followed by a letter, digit, `_` or `-`
    /// (so `/work/p` maps `/work/p/a.txt` and `/work/p` but not `/work/project`). This is the
    /// substitution [`Self::with_path_map`] applies, and what a comparison undoes.
    pub fn rewrite_paths(value: &mut Value, from: &str, to: &str) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(mapped) = rewrite_path_text(s, from, to) {
                    *s = mapped;
                }
            }
            Value::Array(items) => {
                for item in items {
                    Self::rewrite_paths(item, from, to);
                }
            }
            Value::Object(map) => {
                for item in map.values_mut() {
                    Self::rewrite_paths(item, from, to);
                }
            }
            _ => {}
        }
    }

    /// Every recorded answer, in order.
    pub fn answers(&self) -> &[ModelResponse] {
        &self.answers
    }

    /// What the recording did to the history before the main agent's call for `request` (the
    /// first request of a resumed conversation positions the provider first, as
    /// [`Self::take_call`] would).
    fn next_history(&self, request: &ChatRequest) -> Vec<HistoryStep> {
        let mut cursor = lock(&self.cursor);
        if cursor.unrecorded_next || self.position(&mut cursor, request).is_err() {
            // `take_call` reports the misplaced conversation when the call is made.
            return Vec::new();
        }
        self.calls
            .get(cursor.next)
            .map(|c| c.history.clone())
            .unwrap_or_default()
    }

    /// Makes the next main-agent call one the recording does not hold (`false` takes that
    /// back): it takes no recorded call and waits until it is cancelled. For a prompt the
    /// recording holds without its call, as the Copilot CLI's `session.history.truncate`
    /// leaves one: it removes the call from its journal, so a replay makes the call, aborts
    /// it and truncates it away, and the recorded calls after it stay in their places.
    pub fn leave_next_call_unanswered(&self, unanswered: bool) {
        lock(&self.cursor).unrecorded_next = unanswered;
    }

    /// How many recorded calls have not been made yet.
    pub fn remaining(&self) -> usize {
        self.calls.len().saturating_sub(lock(&self.cursor).next)
    }

    /// The recorded reply to this request: the next one of its origin.
    fn take_reply(&self, request: &ChatRequest) -> Result<Reply, ModelError> {
        match &request.origin {
            CallOrigin::Main if std::mem::take(&mut lock(&self.cursor).unrecorded_next) => {
                Ok(Reply::Pending)
            }
            CallOrigin::Main => Ok(self.take_call(request)?.reply),
            CallOrigin::Agent(agent) => {
                let mut cursor = lock(&self.cursor);
                let next = cursor.agent_next.entry(agent.clone()).or_default();
                let recorded = self.agent_answers.get(agent).map_or(0, Vec::len);
                if *next >= recorded {
                    return Err(ModelError::new(
                        ModelErrorKind::Fixture,
                        format!(
                            "the recording has no more answers of the sub-agent {agent} \
                             ({recorded} were recorded)"
                        ),
                    ));
                }
                *next += 1;
                Ok(Reply::Agent(agent.clone(), *next - 1))
            }
            CallOrigin::Summary => {
                let mut cursor = lock(&self.cursor);
                let Some(reply) = self.summaries.get(cursor.summary_next) else {
                    return Err(ModelError::new(
                        ModelErrorKind::Fixture,
                        format!(
                            "the recording has no more compactions ({} were recorded)",
                            self.summaries.len()
                        ),
                    ));
                };
                cursor.summary_next += 1;
                Ok(reply.clone())
            }
        }
    }

    /// The main agent's recorded call for this request: the next one, except that the first
    /// request of a resumed conversation starts at the matching point of the recording.
    fn take_call(&self, request: &ChatRequest) -> Result<RecordedCall, ModelError> {
        let mut cursor = lock(&self.cursor);
        self.position(&mut cursor, request)?;
        let Some(call) = self.calls.get(cursor.next) else {
            return Err(ModelError::new(
                ModelErrorKind::Fixture,
                format!(
                    "the recording has no more assistant messages ({} were recorded)",
                    self.answers.len()
                ),
            ));
        };
        cursor.next += 1;
        Ok(call.clone())
    }

    /// Before the first main-agent call: a request that already holds assistant messages (a
    /// resumed conversation) moves the cursor to the recorded call made at the same point,
    /// the one with as many user and assistant messages before it. Later calls leave it.
    fn position(&self, cursor: &mut Cursor, request: &ChatRequest) -> Result<(), ModelError> {
        if cursor.started {
            return Ok(());
        }
        let answers_before = count(request, |m| matches!(m, ChatMessage::Assistant { .. }));
        if answers_before > 0 {
            let users_before = count(request, |m| matches!(m, ChatMessage::User { .. }));
            cursor.next = self
                .calls
                .iter()
                .position(|c| c.users_before == users_before && c.answers_before == answers_before)
                .ok_or_else(|| {
                    ModelError::new(
                        ModelErrorKind::Fixture,
                        format!(
                            "the conversation so far ({users_before} user and \
                             {answers_before} assistant messages) is not a point of the \
                             recording, so no recorded answer follows it"
                        ),
                    )
                })?;
        }
        cursor.started = true;
        Ok(())
    }

    fn mapped(&self, mut answer: ModelResponse) -> ModelResponse {
        if let Some((from, to)) = &self.path_map {
            for call in &mut answer.tool_calls {
                let mut args = call.arguments_value();
                Self::rewrite_paths(&mut args, from, to);
                call.arguments = match args {
                    Value::String(raw) => raw,
                    other => other.to_string(),
                };
            }
        }
        answer
    }
}

fn count(request: &ChatRequest, what: impl Fn(&ChatMessage) -> bool) -> usize {
    request.messages.iter().filter(|m| what(m)).count()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `text` with `from` replaced by `to` where `from` ends at a path boundary.
fn rewrite_path_text<'a>(text: &'a str, from: &str, to: &str) -> Cow<'a, str> {
    if from.is_empty() || !text.contains(from) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        let boundary = after
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
        out.push_str(&rest[..at]);
        out.push_str(if boundary { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

impl ModelProvider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    /// Always `Some`: a replay compacts and truncates where the recording did, never by its
    /// own measure (the recording holds no per-call token counts to measure by).
    fn recorded_history(&self, request: &ChatRequest) -> Option<Vec<HistoryStep>> {
        Some(self.next_history(request))
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
            let answer = match self.take_reply(request)? {
                Reply::Answer(index) => self.mapped(self.answers[index].clone()),
                Reply::Agent(agent, index) => {
                    self.mapped(self.agent_answers[&agent][index].clone())
                }
                Reply::Summary(answer) => answer,
                Reply::Fail(error) => return Err(error),
                Reply::Pending => {
                    cancel.cancelled().await;
                    return Err(ModelError::cancelled());
                }
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
            Ok(answer)
        })
    }
}

#[cfg(test)]
mod tests;
