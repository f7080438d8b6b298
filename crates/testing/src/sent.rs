//! What a journal says the model was sent at each LLM call, checked against the requests a
//! model server received: a main-agent turn carries the folded conversation as it stood at
//! its `assistant.turn_start`; a compaction's summary call carries the oldest part of it and
//! the summary instruction. This is the journal-as-the-one-truth property: the fold rebuilds
//! every request, so a resume sends what the loop would have sent.

use serde_json::Value;
use turnstile_journal::Event;
use turnstile_loop::session::{SUMMARY_INSTRUCTION, request_messages};
use turnstile_providers::ChatMessage;
use turnstile_replay::Folder;

/// Role, text and tool call ids of one message: what the comparison looks at.
pub type Shape = (String, String, Vec<String>);

/// What checking a journal against the requests found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentCheck {
    /// Main-agent turns checked.
    pub turns: usize,
    /// Summary calls checked.
    pub summaries: usize,
}

/// The shape of a message the loop builds.
pub fn shape_of_message(m: &ChatMessage) -> Shape {
    match m {
        ChatMessage::System { content } => ("system".into(), content.clone(), Vec::new()),
        ChatMessage::User { content, .. } => ("user".into(), content.clone(), Vec::new()),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => (
            "assistant".into(),
            content.clone().unwrap_or_default(),
            tool_calls.iter().map(|c| c.id.clone()).collect(),
        ),
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => ("tool".into(), content.clone(), vec![tool_call_id.clone()]),
    }
}

/// The shape of a Chat Completions message as a server received it (the text of a content
/// array is its first part's).
pub fn shape_of_wire(m: &Value) -> Shape {
    let role = m["role"].as_str().unwrap_or_default().to_owned();
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .first()
            .and_then(|p| p["text"].as_str())
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    };
    let mut ids: Vec<String> = m["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| c["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(id) = m["tool_call_id"].as_str() {
        ids.push(id.to_owned());
    }
    (role, text, ids)
}

/// Checks that `requests` (Chat Completions bodies, in the order received) are exactly the LLM
/// calls of `events` (a journal in order): one per `assistant.turn_start` and one per
/// `session.compaction_start`, each carrying what the fold says. The error names the call.
pub fn check_sent(events: &[Event], requests: &[Value]) -> Result<SentCheck, String> {
    let mut folder = Folder::new();
    let mut check = SentCheck::default();
    let mut next = 0usize;
    // Non-system messages a summary call was sent, to compare with what its completion replaces.
    let mut summarized: Option<(usize, u64)> = None;
    for (index, event) in events.iter().enumerate() {
        let line = index + 1;
        folder.apply(event);
        let ty = event.event_type.as_str();
        let data: Value = serde_json::from_str(event.data.get()).unwrap_or(Value::Null);
        let main = event.agent_id.is_none() && data.get("agentId").is_none();
        match ty {
            "assistant.turn_start" | "session.compaction_start" => {
                let Some(request) = requests.get(next) else {
                    return Err(format!(
                        "line {line}: {ty} is LLM call {} but the server received only {} requests",
                        next + 1,
                        requests.len()
                    ));
                };
                next += 1;
                let sent: Vec<Shape> = request["messages"]
                    .as_array()
                    .map(|m| m.iter().map(shape_of_wire).collect())
                    .unwrap_or_default();
                let expected: Vec<Shape> = request_messages(folder.state())
                    .iter()
                    .map(shape_of_message)
                    .collect();
                if ty == "assistant.turn_start" {
                    if main && sent != expected {
                        return Err(mismatch(line, next, &expected, &sent));
                    }
                    check.turns += usize::from(main);
                    continue;
                }
                let Some((last, history)) = sent.split_last() else {
                    return Err(format!("line {line}: summary call {next} sent no messages"));
                };
                if last.0 != "user" || !last.1.starts_with(SUMMARY_INSTRUCTION) {
                    return Err(format!(
                        "line {line}: LLM call {next} does not end with the summary instruction: {last:?}"
                    ));
                }
                if !expected.starts_with(history) {
                    return Err(mismatch(line, next, &expected, history));
                }
                let first =
                    usize::from(matches!(expected.first(), Some((r, _, _)) if r == "system"));
                summarized = Some((line, (history.len() - first) as u64));
                check.summaries += 1;
            }
            "session.compaction_complete" if data["success"] == true => {
                if let Some((start, sent)) = summarized.take() {
                    let removed = data["messagesRemoved"].as_u64();
                    if removed != Some(sent) {
                        return Err(format!(
                            "line {line}: the compaction replaces {removed:?} messages but its summary call (line {start}) was sent {sent}"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if next != requests.len() {
        return Err(format!(
            "the journal has {next} LLM calls but the server received {} requests",
            requests.len()
        ));
    }
    Ok(check)
}

/// The first difference between what the fold expected and what was sent.
fn mismatch(line: usize, call: usize, expected: &[Shape], sent: &[Shape]) -> String {
    let at = expected
        .iter()
        .zip(sent)
        .position(|(e, s)| e != s)
        .unwrap_or(expected.len().min(sent.len()));
    format!(
        "line {line}: LLM call {call} sent {} messages, the fold rebuilds {}; first difference at message {at}: sent {:?}, rebuilt {:?}",
        sent.len(),
        expected.len(),
        sent.get(at),
        expected.get(at)
    )
}
