//! The Copilot runtime's crash-and-resume shape: a process killed mid-work, then a new one
//! that writes `session.resume` and goes on with a new prompt, closing nothing.

use crate::common;

use common::{
    FIXTURES, assert_valid_history, conversation_shape, events, fixture_bytes, fixture_path,
    journal, request_shape,
};
use serde_json::Value;
use turnstile_journal::payload::{
    AssistantMessage, AssistantTurnEnd, AssistantTurnStart, SessionResume, UserMessage,
};
use turnstile_journal::{Event, Timestamp, Uuid};
use turnstile_replay::resume_plan::INTERRUPTED_MESSAGE;
use turnstile_replay::{Message, ViolationKind, audit_bytes, fold, fold_file, resume_plan};

fn now() -> Timestamp {
    Timestamp::from_millis(1_800_000_000_000)
}

/// What the runtime appends after a crash: resume, a prompt, one answered turn "0".
fn runtime_resume(after: &[Event], with_resume: bool) -> Vec<Event> {
    let mut out = Vec::new();
    if with_resume {
        let resume = SessionResume {
            resume_time: now().to_text(),
            event_count: after.len() as u64,
            ..SessionResume::default()
        };
        out.push(Event::new(&resume, None));
    }
    let user = UserMessage {
        content: "Is the build done?".to_owned(),
        ..UserMessage::default()
    };
    out.push(Event::new(&user, None));
    let start = AssistantTurnStart {
        turn_id: "0".to_owned(),
        ..AssistantTurnStart::default()
    };
    out.push(Event::new(&start, None));
    let answer = AssistantMessage {
        message_id: Uuid::from_u128(7).to_string(),
        content: "It was interrupted.".to_owned(),
        ..AssistantMessage::default()
    };
    out.push(Event::new(&answer, None));
    let end = AssistantTurnEnd {
        turn_id: "0".to_owned(),
        model: None,
    };
    out.push(Event::new(&end, None));
    // Chained from the journal's last event, one after the other.
    let mut parent = after.last().map(|e| e.id);
    for event in &mut out {
        event.timestamp = now();
        event.parent_id = parent;
        parent = Some(event.id);
    }
    out
}

/// Main-agent tool calls a cut leaves open that an assistant message requested.
fn requested_open_calls(prefix: &[Event]) -> Vec<String> {
    let state = fold(prefix);
    state
        .open_work
        .tool_calls_in_order()
        .into_iter()
        .filter(|c| c.agent_id.is_none())
        .filter(|c| {
            state.conversation.iter().any(|m| match m {
                Message::Assistant { tool_requests, .. } => tool_requests
                    .iter()
                    .any(|r| r.tool_call_id == c.tool_call_id),
                _ => false,
            })
        })
        .map(|c| c.tool_call_id.clone())
        .collect()
}

/// Ids of the calls answered with the interrupted result.
fn interrupted(conversation: &[Message]) -> Vec<String> {
    conversation
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
                success: false,
                ..
            } if content == INTERRUPTED_MESSAGE => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_resume_closes_what_a_crash_left_at_every_line() {
    for name in FIXTURES {
        let all = events(&fixture_bytes(name));
        // Cut before the first shutdown: later lines already follow a clean end.
        for cut in 1..all.len() {
            let context = format!("{name} killed after {cut} lines");
            let prefix = &all[..cut];
            let before = fold(prefix);
            let open = &before.open_work;
            let expected_calls = requested_open_calls(prefix);
            let mut journal_events = prefix.to_vec();
            journal_events.extend(runtime_resume(prefix, true));
            let bytes = journal(&journal_events);

            let report = audit_bytes(&context, &bytes);
            assert_eq!(report.violations, [], "{context}");
            let state = fold(&journal_events);
            assert!(!state.was_active(), "{context}: everything is closed");
            assert_eq!(
                state.counts.turns,
                before.counts.turns + 1,
                "{context}: every LLM call counted once"
            );
            assert_eq!(report.turns, state.counts.turns, "{context}");
            assert_eq!(report.abandoned_counts, state.counts.abandoned, "{context}");
            let earlier = before.counts.abandoned;
            assert_eq!(
                state.counts.abandoned.turns - earlier.turns,
                open.turns.len() as u64,
                "{context}"
            );
            assert_eq!(
                state.counts.abandoned.tool_calls - earlier.tool_calls,
                open.tool_calls.len() as u64,
                "{context}"
            );
            let earlier_items = audit_bytes(&context, &journal(prefix)).abandoned.len() as u64;
            assert_eq!(
                report.abandoned.len() as u64 - earlier_items,
                open.turns.len() as u64
                    + open.tool_calls.len() as u64
                    + open.permissions.len() as u64
                    + open.external_tools.len() as u64,
                "{context}"
            );
            assert_valid_history(&state.conversation, &context);
            // The made-up interrupted results, one per cut-off call, before the new prompt.
            let mut got = interrupted(&state.conversation);
            for earlier in interrupted(&before.conversation) {
                let at = got.iter().position(|id| *id == earlier).expect("kept");
                got.remove(at);
            }
            let mut expected = expected_calls.clone();
            expected.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, expected, "{context}");

            // Strict without a resume: a turn left open and replaced is a violation.
            if open.turn_of(None).is_some() && open.resumed_over_at.is_none() {
                let mut no_resume = prefix.to_vec();
                no_resume.extend(runtime_resume(prefix, false));
                let report = audit_bytes(&context, &journal(&no_resume));
                assert!(
                    report
                        .violations
                        .iter()
                        .any(|v| v.kind == ViolationKind::TurnPairing),
                    "{context}: without session.resume the open turn is a violation"
                );
                let earlier = audit_bytes(&context, &journal(prefix));
                assert_eq!(
                    report.abandoned, earlier.abandoned,
                    "{context}: nothing abandoned"
                );
            }
        }
    }
}

#[test]
fn turnstiles_own_resume_abandons_nothing() {
    for name in FIXTURES {
        let all = events(&fixture_bytes(name));
        for cut in 1..all.len() {
            let context = format!("{name} cut after {cut} lines");
            let prefix = &all[..cut];
            let plan = resume_plan(&fold(prefix), now());
            let mut journal_events = prefix.to_vec();
            journal_events.extend(plan.events);
            let tail = runtime_resume(&journal_events, false);
            journal_events.extend(tail);
            // Whatever the journal abandoned before the cut, the plan adds nothing to it.
            let earlier = audit_bytes(&context, &journal(prefix));
            let report = audit_bytes(&context, &journal(&journal_events));
            assert_eq!(report.abandoned, earlier.abandoned, "{context}");
            assert_eq!(
                report.abandoned_counts, earlier.abandoned_counts,
                "{context}"
            );
            let state = fold(&journal_events);
            assert_eq!(
                state.counts.abandoned,
                fold(prefix).counts.abandoned,
                "{context}"
            );
        }
    }
}

/// `k1-killed-resumed`: the real runtime killed with SIGKILL while `bash` ran, then resumed
/// by a new process with another prompt (`scripts/record-copilot-long.mjs crash`).
#[test]
fn real_killed_and_resumed_journal() {
    let name = "k1-killed-resumed";
    let bytes = fixture_bytes(name);
    let report = audit_bytes(name, &bytes);
    assert_eq!(report.violations, [], "{report:?}");
    assert_eq!(report.abandoned_counts.turns, 1);
    assert_eq!(report.abandoned_counts.tool_calls, 1);
    let folded = fold_file(&fixture_path(name)).expect("fold");
    let state = folded.state;
    let all = events(&bytes);
    assert!(!state.was_active());
    assert_eq!(state.counts.turns, report.turns);
    assert_eq!(state.counts.abandoned, report.abandoned_counts);
    assert_eq!(
        report.turns, report.by_type["assistant.turn_start"],
        "every LLM call counted"
    );
    assert_valid_history(&state.conversation, name);

    // The request the runtime sent after the resume, as its model server received it.
    let request: Value = serde_json::from_slice(
        &std::fs::read(fixture_path(name).with_file_name(format!("{name}.request.json")))
            .expect("request recorded"),
    )
    .expect("request is JSON");
    let sent = request_shape(&request["messages"]);
    // What the fold held just before the last LLM call.
    let last_start = all
        .iter()
        .rposition(|e| e.event_type.as_str() == "assistant.turn_start")
        .expect("a turn");
    let rebuilt = conversation_shape(&fold(&all[..last_start]).conversation);
    assert_eq!(rebuilt, sent);
}
