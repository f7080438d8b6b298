//! The real runtime's compaction (`p1-compacted`) and truncations (`t1-truncated`), replayed:
//! the replay compacts and truncates where the recording did, so before every main-agent
//! call its view holds the same messages as the recording's view there (which
//! `crates/replay/tests/compaction.rs` and `truncation.rs` hold equal to the requests the
//! runtime sent).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use turnstile_replay::{Message, view_at};
use turnstile_testing::Fixture;

fn manifest(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime-replay")
        .join(format!("{name}.fixture.json"))
}

/// What of a message both engines send alike: its role, the typed text of a prompt, the
/// calls an answer makes and the call a result answers, a summary's text.
fn shape(message: &Message) -> Value {
    match message {
        Message::System { .. } => json!(["system"]),
        Message::Developer { content } => json!(["developer", content]),
        Message::User { content, typed, .. } => json!(["user", typed.as_ref().unwrap_or(content)]),
        Message::Assistant { tool_requests, .. } => {
            let calls: Vec<&str> = tool_requests
                .iter()
                .map(|r| r.tool_call_id.as_str())
                .collect();
            json!(["assistant", calls])
        }
        Message::Tool { tool_call_id, .. } => json!(["tool", tool_call_id]),
        Message::Summary { content, .. } => json!(["summary", content]),
    }
}

fn views(journal: &Path) -> Vec<Vec<Value>> {
    let turns = view_at(journal, None).unwrap().turns;
    (1..=turns)
        .map(|call| {
            let view = view_at(journal, Some(call)).unwrap();
            view.state.conversation.iter().map(shape).collect()
        })
        .collect()
}

/// Replays `name` and returns the recording's and the replay's view before each call.
fn replayed(name: &str) -> (Vec<Vec<Value>>, Vec<Vec<Value>>, PathBuf, tempfile::TempDir) {
    let fixture = Fixture::load(manifest(name)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = fixture.replay().state_dir(state.path()).run().unwrap();
    let recorded = views(fixture.journal_path());
    let replay = views(&run.journal);
    (recorded, replay, run.journal.clone(), state)
}

fn count(journal: &Path, event_type: &str) -> usize {
    let needle = format!("\"type\":\"{event_type}\"");
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

#[test]
fn a_replayed_background_compaction_gives_the_next_prompt_the_recorded_summary() {
    let (recorded, replay, journal, _state) = replayed("p1");
    assert_eq!(recorded.len(), 10);
    assert_eq!(replay, recorded);
    // The second prompt's call sees the summary of what the first message did, and no more.
    let last = replay.last().unwrap();
    assert_eq!(last[1][0], "summary", "{last:?}");
    assert!(
        last[1][1]
            .as_str()
            .unwrap()
            .starts_with("<overview>Summary 1:")
    );
    assert!(!replay[8].iter().any(|m| m[0] == "summary"));
    assert_eq!(count(&journal, "session.compaction_complete"), 1);
}

#[test]
fn replayed_truncations_hide_what_the_recorded_ones_hid() {
    let (recorded, replay, journal, _state) = replayed("t1");
    assert_eq!(recorded.len(), 12);
    assert_eq!(replay, recorded);
    // The tenth call lost the four oldest messages after the prompt; the next prompt's call
    // truncates the whole history again, six messages.
    assert_eq!(replay[9].len() + 4, replay[8].len() + 2);
    assert_eq!(count(&journal, "session.truncation"), 2);
    assert_eq!(count(&journal, "session.compaction_complete"), 2);
}
