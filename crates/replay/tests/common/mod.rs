//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod synth;

use std::path::PathBuf;

use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_replay::Message;

/// The recordings of the real runtime.
pub const FIXTURES: [&str; 4] = [
    "c1-new-session",
    "r1-resumed",
    "a2-autopilot",
    "k1-killed-resumed",
];

/// Path of a recording.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../fixtures/copilot-runtime/{name}.events.jsonl"
    ))
}

/// The requests recorded next to a recording (`<name>.requests.json`, a list).
pub fn recorded_requests(name: &str) -> Vec<Value> {
    let path = fixture_path(name).with_file_name(format!("{name}.requests.json"));
    let text = std::fs::read(path).expect("requests recorded");
    let requests: Value = serde_json::from_slice(&text).expect("requests are JSON");
    requests.as_array().expect("a list").clone()
}

/// Asserts that folding `all` from any cut (the state at the cut as a checkpoint would hold
/// it, then the rest) ends in `state`.
pub fn assert_resumes_from_every_cut(all: &[Event], state: &turnstile_replay::SessionState) {
    for cut in 0..=all.len() {
        let mut folder = turnstile_replay::Folder::from_state(turnstile_replay::fold(&all[..cut]));
        for e in &all[cut..] {
            folder.apply(e);
        }
        assert_eq!(&folder.into_state(), state, "resumed at {cut}");
    }
}

/// Bytes of a recording.
pub fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).expect("fixture exists")
}

/// Lines of journal bytes (without newlines).
pub fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// Events of journal bytes.
pub fn events(bytes: &[u8]) -> Vec<Event> {
    lines(bytes)
        .into_iter()
        .map(|l| Event::from_line(l).expect("valid line"))
        .collect()
}

/// The indices of the `assistant.turn_start` events: where each LLM call's request was made.
pub fn turn_starts(events: &[Event]) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.event_type.as_str() == "assistant.turn_start")
        .map(|(i, _)| i)
        .collect()
}

/// Journal bytes of events.
pub fn journal(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        e.write_persisted(&mut out);
        out.push(b'\n');
    }
    out
}

/// Every tool request in the conversation has exactly one result, right after its request.
pub fn assert_valid_history(messages: &[Message], context: &str) {
    let mut i = 0;
    while i < messages.len() {
        if let Message::Assistant { tool_requests, .. } = &messages[i] {
            let mut answered = Vec::new();
            let mut j = i + 1;
            while let Some(Message::Tool { tool_call_id, .. }) = messages.get(j) {
                answered.push(tool_call_id.clone());
                j += 1;
            }
            let mut wanted: Vec<String> = tool_requests
                .iter()
                .map(|r| r.tool_call_id.clone())
                .collect();
            wanted.sort();
            answered.sort();
            assert_eq!(answered, wanted, "{context}: results after message {i}");
            i = j;
        } else {
            assert!(
                !matches!(messages[i], Message::Tool { .. }),
                "{context}: stray tool result at {i}"
            );
            i += 1;
        }
    }
}

/// The messages of a recorded chat completion request, in the shape [`conversation_shape`]
/// gives: role, text, tool call ids, the call a result answers.
pub fn request_shape(messages: &Value) -> Vec<Value> {
    messages
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let calls: Vec<&str> = m["tool_calls"]
                .as_array()
                .map(|c| c.iter().filter_map(|c| c["id"].as_str()).collect())
                .unwrap_or_default();
            json!({
                "role": m["role"],
                "content": m["content"].as_str().unwrap_or(""),
                "calls": calls,
                "answers": m["tool_call_id"],
            })
        })
        .collect()
}

/// A folded conversation as the model receives it, in the shape of [`request_shape`].
pub fn conversation_shape(conversation: &[Message]) -> Vec<Value> {
    conversation.iter().map(wire_shape).collect()
}

/// The parts of a message the comparison with a recorded request looks at.
fn wire_shape(m: &Message) -> Value {
    let (role, content, calls, answers) = match m {
        Message::System { content } => ("system", content.as_str(), vec![], Value::Null),
        Message::Developer { content } => ("developer", content.as_str(), vec![], Value::Null),
        Message::User { content, .. } => ("user", content.as_str(), vec![], Value::Null),
        Message::Assistant {
            content,
            tool_requests,
            ..
        } => (
            "assistant",
            content.as_str(),
            tool_requests
                .iter()
                .map(|r| r.tool_call_id.as_str())
                .collect(),
            Value::Null,
        ),
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => ("tool", content.as_str(), vec![], json!(tool_call_id)),
        Message::Summary { .. } => {
            let text = m.summary_text().unwrap_or_default();
            return json!({"role": "user", "content": text, "calls": [], "answers": null});
        }
    };
    json!({"role": role, "content": content, "calls": calls, "answers": answers})
}
