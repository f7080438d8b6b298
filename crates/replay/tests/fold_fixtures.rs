//! Folding the real runtime's recordings: the expected states are written down as snapshots.

use crate::common;

use common::{FIXTURES, events, fixture_bytes, fixture_path};
use turnstile_replay::{Folder, Message, SessionState, audit_bytes, fold, fold_file};

fn folded(name: &str) -> SessionState {
    let folded = fold_file(&fixture_path(name)).expect("fold");
    assert_eq!(folded.torn_tail_at, None);
    folded.state
}

#[test]
fn c1_new_session() {
    let state = folded("c1-new-session");
    assert_eq!(state.counts.turns, 3);
    assert_eq!(state.event_count, 21);
    assert_eq!(
        state.byte_size,
        fixture_bytes("c1-new-session").len() as u64
    );
    assert!(!state.was_active());
    insta::assert_json_snapshot!("c1-new-session", state);
}

#[test]
fn r1_resumed() {
    let state = folded("r1-resumed");
    assert_eq!(state.counts.turns, 6);
    assert_eq!(state.counts.resumes, 1);
    assert_eq!(
        state.interaction_turns, 3,
        "turnId restarts at 0 after the resume"
    );
    assert!(!state.was_active());
    insta::assert_json_snapshot!("r1-resumed", state);
}

#[test]
fn a2_autopilot() {
    let state = folded("a2-autopilot");
    assert_eq!(state.counts.turns, 4);
    assert_eq!(state.counts.autopilot_continuations, 1);
    assert_eq!(state.session.mode, "autopilot");
    let task = state.counts.task_complete.clone().expect("task complete");
    assert_eq!(task.success, Some(true));
    assert!(!state.was_active(), "task_complete ends the loop");
    let nudge = state.conversation.iter().find_map(|m| match m {
        Message::User {
            content,
            autopilot_continuation: true,
            ..
        } => Some(content.clone()),
        _ => None,
    });
    assert!(
        nudge
            .expect("nudge in the conversation")
            .contains("You have not yet marked the task as complete")
    );
    insta::assert_json_snapshot!("a2-autopilot", state);
}

/// The conversation as the model sees it: system first, then user, assistant with tool
/// requests, one result per call right after its request.
#[test]
fn conversation_shape() {
    let state = folded("c1-new-session");
    let roles: Vec<&str> = state
        .conversation
        .iter()
        .map(|m| match m {
            Message::System { .. } => "system",
            Message::Developer { .. } => "developer",
            Message::User { .. } => "user",
            Message::Assistant { tool_requests, .. } if tool_requests.is_empty() => "assistant",
            Message::Assistant { .. } => "assistant+tools",
            Message::Tool { .. } => "tool",
            Message::Summary { .. } => "summary",
        })
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant+tools",
            "tool",
            "assistant+tools",
            "tool",
            "assistant"
        ]
    );
    match &state.conversation[1] {
        Message::User { content, .. } => assert!(
            content.starts_with("<current_datetime>"),
            "transformed content is what the model saw"
        ),
        other => panic!("{other:?}"),
    }
}

/// Feeding events one by one, from any point, gives the fold of the whole.
#[test]
fn incremental_equals_whole() {
    for name in FIXTURES {
        let all = events(&fixture_bytes(name));
        let whole = fold(&all);
        assert_eq!(whole, folded(name), "{name}: fold(events) = fold_file");
        for cut in 0..=all.len() {
            let first = fold(&all[..cut]);
            let mut folder = Folder::from_state(first);
            for e in &all[cut..] {
                folder.apply(e);
            }
            assert_eq!(folder.into_state(), whole, "{name} resumed at {cut}");
        }
        let round_trip: SessionState =
            serde_json::from_str(&serde_json::to_string(&whole).unwrap()).unwrap();
        assert_eq!(round_trip, whole, "{name}: serde round trip");
    }
}

/// Fold and audit count the same things and see the same open work.
#[test]
fn fold_and_audit_agree() {
    for name in FIXTURES {
        let bytes = fixture_bytes(name);
        let state = folded(name);
        let report = audit_bytes(name, &bytes);
        assert!(report.is_clean(), "{name}: {:?}", report.violations);
        assert_eq!(report.turns, state.counts.turns);
        assert_eq!(report.user_messages, state.counts.user_messages);
        assert_eq!(
            report.autopilot_continuations,
            state.counts.autopilot_continuations
        );
        assert_eq!(report.tool_calls, state.counts.tool_calls);
        assert_eq!(report.task_complete, state.counts.task_complete);
        assert_eq!(report.events, state.event_count);
        assert_eq!(report.open_work, (&state.open_work).into());
    }
}

/// The loop feeds a folder its live stream, ephemeral events included: the journal figures
/// (events, bytes, last id) are those of the disk, and live-only usage is added.
#[test]
fn live_stream_folds_like_the_journal_plus_usage() {
    let live_path = fixture_path("c1-new-session").with_file_name("c1-new-session.live.jsonl");
    let live = events(&std::fs::read(live_path).expect("live fixture"));
    let usage_events = live
        .iter()
        .filter(|e| e.event_type.as_str() == "assistant.usage")
        .count() as u64;
    assert!(usage_events > 0);
    let mut from_live = fold(&live);
    // The client disconnected before `session.shutdown`, the journal's last line.
    let on_disk = events(&fixture_bytes("c1-new-session"));
    assert_eq!(
        on_disk.last().map(|e| e.event_type.as_str()),
        Some("session.shutdown")
    );
    let disk = fold(&on_disk[..on_disk.len() - 1]);
    assert_eq!(from_live.usage.calls, usage_events);
    assert!(from_live.usage.tokens.input > 0);
    assert_eq!(from_live.event_count, disk.event_count);
    assert_eq!(from_live.last_event_id, disk.last_event_id);
    from_live.usage.calls = 0;
    from_live.usage.tokens = Default::default();
    // The runtime drops a `detailedContent` equal to `content` when it persists a result, so
    // its live lines can be longer than its disk lines (turnstile persists what it sends).
    assert!(from_live.byte_size >= disk.byte_size);
    from_live.byte_size = disk.byte_size;
    assert_eq!(from_live, disk);
}

/// A compaction replaces the history before it by its summary, so a long session's state
/// stays about as large as the model's context.
#[test]
fn compaction_keeps_the_conversation_short() {
    let config = common::synth::SynthConfig {
        target_bytes: 4 << 20,
        compaction_every: Some(5),
        ..Default::default()
    };
    let (bytes, truth) = common::synth::session_bytes(&config);
    let state = fold(events(&bytes));
    assert_eq!(state.compactions, truth.compactions);
    assert!(truth.compactions > 3);
    assert!(matches!(state.conversation[0], Message::System { .. }));
    assert!(matches!(state.conversation[1], Message::Summary { .. }));
    assert!(
        state.conversation.len() < 200,
        "{} messages",
        state.conversation.len()
    );
    assert_eq!(state.counts.turns, truth.turns);
}

/// The lines of `bytes` with every `every`-th one in another key order (so it takes the full
/// parse, not the standard-layout fast path).
fn some_relaid_out(bytes: &[u8], every: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in common::lines(bytes).into_iter().enumerate() {
        if i % every == 0 {
            let value: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(line).unwrap();
            let reversed: serde_json::Map<String, serde_json::Value> =
                value.into_iter().rev().collect();
            out.extend_from_slice(&serde_json::to_vec(&reversed).unwrap());
        } else {
            out.extend_from_slice(line);
        }
        out.push(b'\n');
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// `fold_file` (standard-layout lines checked and read in one pass, others fully parsed)
    /// gives the state of folding the journal reader's records one by one.
    #[test]
    fn fold_file_equals_folding_the_readers_records(
        seed in 0u64..1000,
        every in 1usize..12,
        torn in proptest::prelude::any::<bool>(),
    ) {
        let config = common::synth::SynthConfig {
            seed,
            target_bytes: 64 * 1024,
            max_output_bytes: 4096,
            ..common::synth::SynthConfig::default()
        };
        let (bytes, _) = common::synth::session_bytes(&config);
        let mut bytes = some_relaid_out(&bytes, every);
        if torn {
            bytes.extend_from_slice(br#"{"type":"user.message","data":{"con"#);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let folded = fold_file(&path).unwrap();
        let mut folder = Folder::new();
        let reader = turnstile_journal::JournalReader::new(
            &path,
            std::io::BufReader::new(std::fs::File::open(&path).unwrap()),
            turnstile_journal::ReadMode::Lenient,
        );
        for record in reader {
            match record {
                Ok(record) => folder.apply_record(&record),
                Err(turnstile_journal::ReadError::TornTail { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        proptest::prop_assert_eq!(folded.torn_tail_at.is_some(), torn);
        proptest::prop_assert_eq!(&folded.state, folder.state());
    }
}
