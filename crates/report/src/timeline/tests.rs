//! The timeline's tests: journals as event lists, items checked.

use super::*;
use crate::items::Turn;
use serde_json::json;
use turnstile_journal::{EventType, Timestamp};

/// Events in order, `ms` after an epoch, with an optional agent.
fn run(events: &[(&str, serde_json::Value, i64, Option<&str>)]) -> Vec<Item> {
    run_with_facts(events).0
}

/// [`run`], and the header's facts at the end.
fn run_with_facts(
    events: &[(&str, serde_json::Value, i64, Option<&str>)],
) -> (Vec<Item>, SessionFacts) {
    let mut timeline = Timeline::new();
    let mut out = Vec::new();
    for (i, (kind, data, ms, agent)) in events.iter().enumerate() {
        let mut event = Event::with_raw_data(
            EventType::new(kind),
            serde_json::value::to_raw_value(data).unwrap(),
            None,
        );
        event.timestamp = Timestamp::from_millis(1_795_970_035_000 + ms);
        event.agent_id = agent.map(str::to_owned);
        let record = Record {
            line: i as u64 + 1,
            offset: 0,
            len: 0,
            event,
        };
        timeline.push(Ok(record), &mut out);
    }
    timeline.finish(&mut out);
    (out, timeline.facts().clone())
}

fn turns(items: &[Item]) -> Vec<&Turn> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Turn(t) => Some(t),
            Item::Mark(_) => None,
        })
        .collect()
}

fn marks(items: &[Item]) -> Vec<MarkKind> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Mark(m) => Some(m.kind),
            Item::Turn(_) => None,
        })
        .collect()
}

fn start() -> (&'static str, serde_json::Value, i64, Option<&'static str>) {
    (
        "session.start",
        json!({"sessionId": "s", "version": 1, "producer": "turnstile", "copilotVersion": "1", "startTime": "t"}),
        0,
        None,
    )
}

#[test]
fn a_turn_splits_into_model_and_tool_time_with_its_call_and_permission() {
    let items = run(&[
        start(),
        ("assistant.turn_start", json!({"turnId": "0"}), 10, None),
        (
            "assistant.message",
            json!({"messageId": "m", "content": "", "outputTokens": 12}),
            110,
            None,
        ),
        (
            "tool.execution_start",
            json!({"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "rm -rf build"}}),
            120,
            None,
        ),
        (
            "permission.requested",
            json!({"requestId": "r1", "permissionRequest": {"kind": "shell", "fullCommandText": "rm -rf build", "toolCallId": "c1"}}),
            121,
            None,
        ),
        (
            "permission.completed",
            json!({"requestId": "r1", "toolCallId": "c1", "result": {"kind": "denied-by-rules", "rules": ["shell(rm)"]}}),
            122,
            None,
        ),
        (
            "tool.execution_complete",
            json!({"toolCallId": "c1", "success": false, "error": {"message": "Permission denied", "code": "denied"}}),
            150,
            None,
        ),
        ("assistant.turn_end", json!({"turnId": "0"}), 160, None),
    ]);
    let turns = turns(&items);
    assert_eq!(turns.len(), 1);
    let t = turns[0];
    assert_eq!((t.model_ms, t.tool_ms, t.total_ms), (100, 30, 150));
    assert_eq!(t.output_tokens, Some(12));
    assert!(t.ended);
    let call = &t.calls[0];
    assert_eq!(call.name, "bash");
    assert_eq!(call.duration_ms, Some(30));
    assert_eq!(call.arguments.shown, r#"{"command":"rm -rf build"}"#);
    let outcome = call.outcome.as_ref().unwrap();
    assert!(!outcome.success && outcome.code.as_deref() == Some("denied"));
    assert_eq!(call.notes.len(), 1);
    assert_eq!(
        call.notes[0].text.shown,
        "shell rm -rf build: denied-by-rules (shell(rm))"
    );
    assert!(call.notes[0].bad);
}

#[test]
fn a_resume_without_a_shutdown_is_a_crash_and_a_clean_one_is_not() {
    let items = run(&[
        start(),
        ("assistant.turn_start", json!({"turnId": "0"}), 10, None),
        (
            "session.resume",
            json!({"resumeTime": "t", "eventCount": 2}),
            20,
            None,
        ),
        ("assistant.turn_end", json!({"turnId": "0"}), 21, None),
        (
            "session.shutdown",
            json!({"shutdownType": "routine", "totalApiDurationMs": 0, "sessionStartTime": 0, "codeChanges": {"linesAdded": 0, "linesRemoved": 0, "filesModified": []}, "modelMetrics": {"m": {"requests": {"count": 2}, "usage": {"inputTokens": 5, "outputTokens": 6}}}}),
            30,
            None,
        ),
        (
            "session.resume",
            json!({"resumeTime": "t", "eventCount": 5}),
            40,
            None,
        ),
    ]);
    assert_eq!(
        marks(&items),
        [
            MarkKind::Start,
            MarkKind::Crash,
            MarkKind::Resume,
            MarkKind::Shutdown,
            MarkKind::Resume
        ]
    );
    let t = turns(&items)[0];
    assert_eq!(
        t.notes[0].text.shown,
        "the session was resumed while this turn was open"
    );
}

#[test]
fn sub_agents_get_lanes_and_an_unended_turn_is_handed_out_at_the_end() {
    let items = run(&[
        ("assistant.turn_start", json!({"turnId": "0"}), 0, None),
        (
            "assistant.turn_start",
            json!({"turnId": "0"}),
            1,
            Some("sub-1"),
        ),
        (
            "session.error",
            json!({"errorType": "http", "message": "boom"}),
            2,
            Some("sub-1"),
        ),
        (
            "assistant.turn_end",
            json!({"turnId": "0"}),
            3,
            Some("sub-1"),
        ),
    ]);
    let turns = turns(&items);
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].lane.as_deref(), Some("sub-1"));
    assert_eq!(turns[0].notes[0].kind, NoteKind::Error);
    assert_eq!(turns[1].lane, None);
    assert!(!turns[1].ended);
}

#[test]
fn texts_calls_and_lanes_are_capped() {
    let mut events = vec![("assistant.turn_start", json!({"turnId": "0"}), 0, None)];
    for i in 0..(MAX_CALLS_PER_TURN + 10) {
        events.push(("tool.execution_start", json!({"toolCallId": format!("c{i}"), "toolName": "view", "arguments": {"p": "x".repeat(10_000)}}), 1, None));
        events.push(("tool.execution_complete", json!({"toolCallId": format!("c{i}"), "success": true, "result": {"content": "y".repeat(100_000)}}), 2, None));
    }
    let agents: Vec<String> = (0..MAX_LANES + 5).map(|i| format!("agent-{i}")).collect();
    for a in &agents {
        events.push((
            "assistant.turn_start",
            json!({"turnId": "0"}),
            3,
            Some(a.as_str()),
        ));
        events.push((
            "assistant.turn_end",
            json!({"turnId": "0"}),
            4,
            Some(a.as_str()),
        ));
    }
    let items = run(&events);
    let turns = turns(&items);
    let main = turns.iter().find(|t| t.lane.is_none()).unwrap();
    assert_eq!(main.calls.len(), MAX_CALLS_PER_TURN);
    assert_eq!(main.calls_left_out, 10);
    let call = &main.calls[0];
    assert_eq!(call.arguments.shown.len(), ARGUMENTS_CAP);
    let result = &call.outcome.as_ref().unwrap().text;
    assert_eq!(
        (result.shown.len(), result.left_out),
        (TEXT_CAP, 100_000 - TEXT_CAP)
    );
    let mut lanes: Vec<_> = turns.iter().filter_map(|t| t.lane.clone()).collect();
    lanes.sort();
    lanes.dedup();
    assert_eq!(lanes.len(), MAX_LANES + 1, "{lanes:?}");
    assert!(lanes.contains(&OTHER_AGENTS.to_owned()));
}

#[test]
fn a_nudge_without_content_shows_what_the_model_read() {
    let items = run(&[
        ("user.message", json!({"content": "fix it"}), 0, None),
        (
            "user.message",
            json!({"content": "", "transformedContent": "You have not yet marked the task as complete", "isAutopilotContinuation": true}),
            1,
            None,
        ),
    ]);
    let texts: Vec<(MarkKind, &str)> = items
        .iter()
        .filter_map(|i| match i {
            Item::Mark(m) => Some((m.kind, m.text.shown.as_str())),
            Item::Turn(_) => None,
        })
        .collect();
    assert_eq!(
        texts,
        [
            (MarkKind::Prompt, "fix it"),
            (
                MarkKind::Nudge,
                "You have not yet marked the task as complete"
            )
        ]
    );
}

#[test]
fn data_that_does_not_fit_its_type_is_marked_not_dropped() {
    let items = run(&[("tool.execution_start", json!({"toolName": 5}), 0, None)]);
    assert_eq!(marks(&items), [MarkKind::Unreadable]);
}

#[test]
fn a_line_over_the_readers_limit_is_drawn_as_an_oversized_mark_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let good = |n: u128| {
        format!(
            r#"{{"type":"session.info","data":{{}},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}}"#,
            turnstile_journal::Uuid::from_u128(n)
        )
    };
    let long = format!(
        r#"{{"type":"user.message","data":{{"content":"{}"}}}}"#,
        "x".repeat(3 << 20)
    );
    std::fs::write(&path, format!("{}\n{long}\n{}\n", good(1), good(2))).unwrap();
    let reader =
        turnstile_journal::JournalReader::open(&path, turnstile_journal::ReadMode::Lenient)
            .unwrap()
            .with_max_line_bytes(64 << 10);
    let mut timeline = Timeline::new();
    let mut out = Vec::new();
    for record in reader {
        timeline.push(record, &mut out);
    }
    let marks: Vec<&Mark> = out
        .iter()
        .filter_map(|i| match i {
            Item::Mark(m) if m.kind == MarkKind::Oversized => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(marks.len(), 1, "{out:?}");
    assert_eq!(marks[0].line, 2);
    assert!(
        marks[0]
            .text
            .shown
            .contains(&format!("{} bytes", long.len() + 1)),
        "{:?}",
        marks[0].text
    );
    let mut html = String::new();
    let stats = crate::stats::Stats::new(1);
    crate::draw::write_mark(&mut html, marks[0], crate::stats::Anchor::Mark(0), &stats).unwrap();
    assert!(html.contains("data-kind=\"oversized\""), "{html}");
}

#[test]
fn a_model_switch_is_a_mark_even_inside_a_turn_and_the_header_lists_every_model() {
    let (items, facts) = run_with_facts(&[
        (
            "session.start",
            json!({"sessionId": "s", "version": 1, "producer": "turnstile", "copilotVersion": "1", "startTime": "t", "selectedModel": "gpt-4.1"}),
            0,
            None,
        ),
        ("assistant.turn_start", json!({"turnId": "0"}), 1, None),
        (
            "session.model_change",
            json!({"previousModel": "gpt-4.1", "newModel": "claude-sonnet-4.5"}),
            2,
            None,
        ),
        ("assistant.turn_end", json!({"turnId": "0"}), 3, None),
        (
            "session.model_change",
            json!({"newModel": "gpt-5"}),
            4,
            None,
        ),
    ]);
    let switches: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            Item::Mark(m) if m.kind == MarkKind::ModelChange => Some(m.text.shown.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        switches,
        [
            "model gpt-4.1 \u{2192} claude-sonnet-4.5",
            "model \u{2192} gpt-5"
        ]
    );
    assert!(turns(&items)[0].notes.is_empty());
    assert_eq!(facts.models, ["gpt-4.1", "claude-sonnet-4.5", "gpt-5"]);
    assert_eq!(facts.model.as_deref(), Some("gpt-5"));
}

#[test]
fn sub_agents_are_named_by_their_task_call_and_their_kind() {
    let started = |id: &str| json!({"toolCallId": id, "agentName": "explore", "agentDisplayName": "Explore Agent", "agentDescription": "reads"});
    let (items, facts) = run_with_facts(&[
        ("assistant.turn_start", json!({"turnId": "0"}), 0, None),
        (
            "tool.execution_start",
            json!({"toolCallId": "c1", "toolName": "task", "arguments": {"name": "notes", "description": "Read the notes", "agent_type": "explore"}}),
            1,
            None,
        ),
        // Filed under the parent: the text names the agent.
        ("subagent.started", started("c1"), 2, None),
        (
            "tool.execution_start",
            json!({"toolCallId": "c2", "toolName": "task", "arguments": {"description": "Count the rows"}}),
            3,
            None,
        ),
        ("subagent.started", started("c3"), 4, Some("c3")),
        (
            "tool.execution_start",
            json!({"toolCallId": "c4", "toolName": "view", "arguments": {"name": "not an agent"}}),
            5,
            None,
        ),
        (
            "subagent.failed",
            json!({"toolCallId": "c3", "agentName": "explore", "agentDisplayName": "Explore Agent", "error": "boom"}),
            6,
            Some("c3"),
        ),
    ]);
    let label = |id: &str| facts.agents.get(id).and_then(AgentName::label);
    assert_eq!(label("c1").as_deref(), Some("notes (Explore Agent)"));
    assert_eq!(label("c2").as_deref(), Some("Count the rows"));
    assert_eq!(label("c3").as_deref(), Some("Explore Agent"));
    assert_eq!(label("c4"), None, "only task calls name agents");
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            Item::Mark(m) => Some(m.text.shown.as_str()),
            Item::Turn(_) => None,
        })
        .collect();
    assert_eq!(
        texts,
        // Filed under the agent: the page shows its name beside the text.
        ["sub-agent started", "sub-agent failed: boom"]
    );
    // Filed under the parent, inside its turn: the note names the agent.
    assert_eq!(
        turns(&items)[0].notes[0].text.shown,
        "sub-agent notes (Explore Agent) started"
    );
}

#[test]
fn a_compaction_is_its_own_kind_in_a_turn_and_between_turns() {
    let items = run(&[
        ("assistant.turn_start", json!({"turnId": "0"}), 0, None),
        (
            "session.compaction_complete",
            json!({"success": false, "error": "too short"}),
            1,
            None,
        ),
        ("assistant.turn_end", json!({"turnId": "0"}), 2, None),
        (
            "session.compaction_complete",
            json!({"success": true, "messagesRemoved": 12, "tokensRemoved": 3400}),
            3,
            None,
        ),
    ]);
    let note = &turns(&items)[0].notes[0];
    assert_eq!(note.kind, NoteKind::Compaction);
    assert_eq!(note.text.shown, "compaction failed: too short");
    assert_eq!(marks(&items), [MarkKind::Compaction]);
}
