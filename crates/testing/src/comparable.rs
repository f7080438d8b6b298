//! A journal as two runs of the same scripted session must agree on it: each event's type,
//! `agentId` and `data` less the volatile fields (`turnstile_diff::volatile`) and the model server's
//! ids of its answers, the volatile events left out. Two journals are the same session when
//! these lists are equal; where they differ first is where the runs parted.

use std::path::Path;

use serde_json::{Value, json};

use crate::error::FixtureError;
use crate::journal::read_journal;
use turnstile_diff::volatile::{is_volatile_event, strip_volatile};

/// Fields of `data` the model server names, by event type: not compared because a session
/// resumed against another server (or another process of it) gets other ids for the same
/// answers. A fixture replay answers with the recorded ids, so its check keeps them.
const ANSWER_IDS: &[(&str, &str)] = &[("assistant.message", "apiCallId")];

/// The events of the journal at `path` with what differs between any two runs removed (ids,
/// timestamps, durations, sizes), in journal order.
pub fn comparable_events(path: &Path) -> Result<Vec<Value>, FixtureError> {
    let mut out = Vec::new();
    for line in read_journal(path)? {
        let kind = line.event_type().to_owned();
        let mut data = line.data();
        if is_volatile_event(&kind, &data) {
            continue;
        }
        strip_volatile(&kind, &mut data);
        for (_, field) in ANSWER_IDS.iter().filter(|(t, _)| *t == kind) {
            if let Value::Object(map) = &mut data {
                map.shift_remove(*field);
            }
        }
        let mut value = json!({"type": kind, "data": data});
        if let Some(agent) = &line.event.agent_id {
            value["agentId"] = json!(agent);
        }
        out.push(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(dir: &Path, name: &str, lines: &[Value]) -> std::path::PathBuf {
        let path = dir.join(name);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn event(id: &str, parent: Option<&str>, ts: &str, kind: &str, data: Value) -> Value {
        json!({"type": kind, "data": data, "id": id, "timestamp": ts, "parentId": parent})
    }

    #[test]
    fn ids_and_times_do_not_count_the_agents_words_do() {
        let dir = tempfile::tempdir().unwrap();
        let a = journal(
            dir.path(),
            "a.jsonl",
            &[event(
                "11111111-1111-4111-8111-111111111111",
                None,
                "2026-12-01T10:00:00.000Z",
                "assistant.message",
                json!({"messageId": "m1", "content": "hello", "apiCallId": "chatcmpl-1"}),
            )],
        );
        let b = journal(
            dir.path(),
            "b.jsonl",
            &[event(
                "22222222-2222-4222-8222-222222222222",
                None,
                "2027-01-01T10:00:00.000Z",
                "assistant.message",
                json!({"messageId": "m2", "content": "hello", "apiCallId": "chatcmpl-4"}),
            )],
        );
        let c = journal(
            dir.path(),
            "c.jsonl",
            &[event(
                "33333333-3333-4333-8333-333333333333",
                None,
                "2026-12-01T10:00:00.000Z",
                "assistant.message",
                json!({"messageId": "m1", "content": "goodbye"}),
            )],
        );
        let (a, b, c) = (
            comparable_events(&a).unwrap(),
            comparable_events(&b).unwrap(),
            comparable_events(&c).unwrap(),
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
