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

use recording::{RecordedCall, Reply};

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
        if self.position(&mut cursor, request).is_err() {
            // `take_call` reports the misplaced conversation when the call is made.
            return Vec::new();
        }
        self.calls
            .get(cursor.next)
            .map(|c| c.history.clone())
            .unwrap_or_default()
    }

    /// How many recorded calls have not been made yet.
    pub fn remaining(&self) -> usize {
        self.calls.len().saturating_sub(lock(&self.cursor).next)
    }

    /// The recorded reply to this request: the next one of its origin.
    fn take_reply(&self, request: &ChatRequest) -> Result<Reply, ModelError> {
        match &request.origin {
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

fn fixture_error(error: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ModelErrorKind::Fixture,
        format!("cannot read the recording: {error}"),
    )
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
mod tests {
    use super::*;
    use serde_json::json;
    use turnstile_journal::payload::{
        Abort, AssistantMessage, AssistantTurnEnd, AssistantTurnStart, CompactionComplete,
        SessionError, UserMessage,
    };

    fn turn(id: &str) -> Event {
        Event::new(
            &AssistantTurnStart {
                turn_id: id.into(),
                ..Default::default()
            },
            None,
        )
    }

    fn turn_end(id: &str) -> Event {
        Event::new(
            &AssistantTurnEnd {
                turn_id: id.into(),
                ..Default::default()
            },
            None,
        )
    }

    /// A successful compaction that replaced 3 messages.
    fn compacted() -> Event {
        Event::new(
            &CompactionComplete {
                success: true,
                summary_content: Some("s".into()),
                pre_compaction_messages_length: Some(3),
                ..Default::default()
            },
            None,
        )
    }

    fn user(text: &str) -> Event {
        Event::new(
            &UserMessage {
                content: text.into(),
                ..Default::default()
            },
            None,
        )
    }

    fn answer(text: &str) -> Event {
        Event::new(
            &AssistantMessage {
                message_id: text.into(),
                content: text.into(),
                ..Default::default()
            },
            None,
        )
    }

    fn request(history: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            messages: history,
            ..Default::default()
        }
    }

    fn said(text: &str) -> ChatMessage {
        ChatMessage::user(text)
    }

    fn answered(text: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: Some(text.into()),
            tool_calls: vec![],
        }
    }

    async fn ask(
        provider: &ReplayProvider,
        request: &ChatRequest,
    ) -> Result<ModelResponse, ModelError> {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        provider
            .complete(request, tx, CancellationToken::new())
            .await
    }

    #[tokio::test]
    async fn recorded_failures_fail_again_and_resumed_conversations_align() {
        let error = Event::new(
            &SessionError {
                error_type: "http".into(),
                message: "context too long".into(),
                status_code: Some(400),
                ..Default::default()
            },
            None,
        );
        let end = turn_end("0");
        let provider = ReplayProvider::from_events(vec![
            user("one"),
            turn("0"),
            answer("first"),
            user("two"),
            turn("0"),
            end,
            error,
            user("three"),
            turn("0"),
            answer("second"),
        ])
        .unwrap();
        assert_eq!(provider.remaining(), 3);
        let fresh = request(vec![said("one")]);
        assert_eq!(ask(&provider, &fresh).await.unwrap().content, "first");
        let failed = ask(&provider, &fresh).await.unwrap_err();
        assert_eq!(
            (failed.error_type(), failed.status_code),
            ("http", Some(400))
        );
        assert_eq!(failed.message, "context too long");

        // A new provider asked to continue after "three" starts at the matching call.
        let resumed = ReplayProvider::from_events(vec![
            user("one"),
            turn("0"),
            answer("first"),
            user("two"),
            turn("0"),
            Event::new(
                &Abort {
                    reason: "user_initiated".into(),
                },
                None,
            ),
            user("three"),
            turn("0"),
            answer("second"),
        ])
        .unwrap();
        let history = request(vec![
            said("one"),
            answered("first"),
            said("two"),
            said("three"),
        ]);
        assert_eq!(ask(&resumed, &history).await.unwrap().content, "second");
        assert_eq!(resumed.remaining(), 0);

        let elsewhere =
            ReplayProvider::from_events(vec![user("one"), turn("0"), answer("a")]).unwrap();
        let lost = request(vec![said("x"), answered("y"), said("z"), said("w")]);
        // No point of the recording: no history steps, and the call fails.
        assert!(elsewhere.recorded_history(&lost).unwrap().is_empty());
        let e = ask(&elsewhere, &lost).await.unwrap_err();
        assert!(e.message.contains("not a point of the recording"), "{e}");
    }

    #[tokio::test]
    async fn a_turn_that_ended_without_outcome_is_no_call() {
        let end = Event::new(
            &AssistantTurnEnd {
                turn_id: "0".into(),
                ..Default::default()
            },
            None,
        );
        let provider =
            ReplayProvider::from_events(vec![user("go"), turn("0"), end, turn("1"), answer("a")])
                .unwrap();
        assert_eq!(provider.remaining(), 1);
        let req = request(vec![said("go")]);
        assert_eq!(ask(&provider, &req).await.unwrap().content, "a");
    }

    #[tokio::test]
    async fn an_unanswered_call_waits_for_cancellation() {
        let provider = ReplayProvider::from_events(vec![user("go"), turn("0")]).unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let req = request(vec![said("go")]);
        let call = provider.complete(&req, tx, cancel.clone());
        cancel.cancel();
        assert_eq!(call.await.unwrap_err().kind, ModelErrorKind::Cancelled);
    }

    fn agent_answer(agent: &str, text: &str) -> Event {
        let mut event = answer(text);
        event.agent_id = Some(agent.into());
        event
    }

    fn from(origin: CallOrigin) -> ChatRequest {
        ChatRequest {
            messages: vec![said("go")],
            origin,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn each_agent_and_each_summary_call_gets_its_own_recorded_answers() {
        let summary = |success: bool, text: &str| {
            Event::new(
                &CompactionComplete {
                    success,
                    summary_content: success.then(|| text.to_owned()),
                    error: (!success).then(|| format!("the summary request failed: {text}")),
                    status_code: (!success).then_some(500),
                    ..Default::default()
                },
                None,
            )
        };
        let provider = ReplayProvider::from_events(vec![
            user("go"),
            turn("0"),
            answer("main 1"),
            agent_answer("a", "a 1"),
            agent_answer("b", "b 1"),
            agent_answer("a", "a 2"),
            summary(false, "busy"),
            turn("1"),
            answer("main 2"),
            summary(true, "<overview>so far</overview>"),
        ])
        .unwrap();
        assert_eq!(provider.remaining(), 2);
        let agent = |id: &str| from(CallOrigin::Agent(id.into()));
        // The agents ask in another order than they were recorded in, between the main calls.
        assert_eq!(ask(&provider, &agent("b")).await.unwrap().content, "b 1");
        assert_eq!(
            ask(&provider, &from(CallOrigin::Main))
                .await
                .unwrap()
                .content,
            "main 1"
        );
        assert_eq!(ask(&provider, &agent("a")).await.unwrap().content, "a 1");
        assert_eq!(ask(&provider, &agent("a")).await.unwrap().content, "a 2");
        let spent = ask(&provider, &agent("a")).await.unwrap_err();
        assert!(
            spent.message.contains("sub-agent a (2 were recorded)"),
            "{spent}"
        );
        let failed = ask(&provider, &from(CallOrigin::Summary))
            .await
            .unwrap_err();
        assert_eq!(
            (failed.message.as_str(), failed.status_code),
            ("busy", Some(500))
        );
        assert_eq!(
            ask(&provider, &from(CallOrigin::Main))
                .await
                .unwrap()
                .content,
            "main 2"
        );
        let summary = ask(&provider, &from(CallOrigin::Summary)).await.unwrap();
        assert_eq!(summary.content, "<overview>so far</overview>");
        assert!(summary.tool_calls.is_empty());
        let none = ask(&provider, &from(CallOrigin::Summary))
            .await
            .unwrap_err();
        assert!(
            none.message
                .contains("no more compactions (2 were recorded)"),
            "{none}"
        );
    }

    /// The steps before each main call, as `(compactions, truncations)`, calling in order.
    async fn steps_before_each_call(provider: &ReplayProvider) -> Vec<(usize, usize)> {
        let mut steps = Vec::new();
        while provider.remaining() > 0 {
            let history = provider.recorded_history(&from(CallOrigin::Main)).unwrap();
            let compactions = history
                .iter()
                .filter(|s| matches!(s, HistoryStep::Compact { .. }))
                .count();
            steps.push((compactions, history.len() - compactions));
            ask(provider, &from(CallOrigin::Main)).await.unwrap();
        }
        steps
    }

    #[tokio::test]
    async fn compactions_and_truncations_come_before_the_call_that_first_saw_them() {
        let end = || turn_end("0");
        let complete = compacted;
        let truncation = Event::with_raw_data(
            "session.truncation".into(),
            serde_json::value::to_raw_value(&json!({"messagesRemovedDuringTruncation": 2}))
                .unwrap(),
            None,
        );
        let provider = ReplayProvider::from_events(vec![
            user("one"),
            turn("0"),
            answer("a"),
            end(),
            // Between turns (turnstile's): the next call.
            complete(),
            turn("1"),
            // Inside a turn (the runtime's, behind it): the second turn start after it.
            complete(),
            answer("b"),
            end(),
            turn("2"),
            answer("c"),
            end(),
            turn("3"),
            truncation,
            answer("d"),
            end(),
            turn("4"),
            complete(),
            answer("e"),
            end(),
            // Or the next prompt, when it comes first.
            user("two"),
            turn("0"),
            answer("f"),
        ])
        .unwrap();
        assert_eq!(
            steps_before_each_call(&provider).await,
            [(0, 0), (1, 0), (0, 0), (1, 1), (0, 0), (1, 0)]
        );
        assert!(matches!(
            ReplayProvider::from_events(vec![user("x"), turn("0"), complete()])
                .unwrap()
                .summaries[0],
            Reply::Summary(_)
        ));
    }

    #[tokio::test]
    async fn a_resumed_conversation_gets_the_history_steps_of_its_own_point() {
        let provider = ReplayProvider::from_events(vec![
            user("one"),
            turn("0"),
            answer("a"),
            turn_end("0"),
            user("two"),
            compacted(),
            turn("0"),
            answer("b"),
        ])
        .unwrap();
        let resumed = request(vec![said("one"), answered("a"), said("two")]);
        // Asked before the first call, as the loop asks: the steps before the call at this
        // point (the compaction), not those before the recording's first call (none).
        let steps = provider.recorded_history(&resumed).unwrap();
        assert!(
            matches!(
                steps.as_slice(),
                [HistoryStep::Compact { replaced: Some(3) }]
            ),
            "{steps:?}"
        );
        assert_eq!(ask(&provider, &resumed).await.unwrap().content, "b");
        assert_eq!(provider.remaining(), 0);
    }

    #[tokio::test]
    async fn path_map_rewrites_tool_arguments_at_path_boundaries() {
        let message = Event::new(
            &AssistantMessage {
                message_id: "m".into(),
                tool_requests: Some(vec![turnstile_journal::payload::ToolRequest {
                    tool_call_id: "c".into(),
                    name: "view".into(),
                    arguments: Some(
                        json!({"path": "/rec/p/a.txt", "other": ["/rec/project", "/rec/p"]}),
                    ),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            None,
        );
        let provider = ReplayProvider::from_events(vec![user("go"), turn("0"), message])
            .unwrap()
            .with_path_map("/rec/p", "/tmp/w");
        let answer = ask(&provider, &request(vec![said("go")])).await.unwrap();
        assert_eq!(
            answer.tool_calls[0].arguments_value(),
            json!({"path": "/tmp/w/a.txt", "other": ["/rec/project", "/tmp/w"]})
        );
    }
}
