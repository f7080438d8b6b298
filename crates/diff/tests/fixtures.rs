//! The fixtures, the real Copilot runtime's journals included: each the same as a copy of
//! itself, and edited line by line, the edit named as the first divergence.

use serde_json::{Value, json};
use turnstile_diff::{DivergenceKind, Profile, Runtime, StepKind};

use crate::common::{Edit, diff, edited, fixture, fixture_journals};

/// The 1-based number of the `nth` (1-based) line of `journal` whose event is of `kind`
/// and of the main agent.
fn nth_line(journal: &std::path::Path, kind: &str, nth: usize) -> u64 {
    let text = std::fs::read_to_string(journal).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["type"] == kind && v.get("agentId").is_none()
        })
        .nth(nth - 1)
        .map(|(i, _)| i as u64 + 1)
        .expect("the journal has that many")
}

#[test]
fn every_fixture_journal_is_the_same_as_a_copy_of_itself() {
    let journals = fixture_journals();
    assert!(journals.len() >= 20, "found {journals:?}");
    let tmp = tempfile::tempdir().unwrap();
    for (i, journal) in journals.iter().enumerate() {
        // Another directory: the session directory is normalised.
        let copy = edited(journal, &tmp.path().join(i.to_string()), |_, _| Edit::Keep);
        let report = diff(journal, &copy);
        assert!(report.same, "{}:\n{report}", journal.display());
        assert!(report.compared.steps > 0, "{}", journal.display());
    }
}

#[test]
fn a_changed_tool_result_is_named() {
    let journal = fixture("multi-turn/events.jsonl");
    let line = nth_line(&journal, "tool.execution_complete", 3);
    let tmp = tempfile::tempdir().unwrap();
    let changed = edited(&journal, tmp.path(), |n, event| {
        if n != line {
            return Edit::Keep;
        }
        let mut event = event.clone();
        event["data"]["result"]["content"] = json!("something else");
        Edit::Change(event)
    });
    let report = diff(&journal, &changed);
    assert_eq!(report.profile, Profile::Strict);
    assert_eq!(report.a.runtime, Runtime::Turnstile);
    let first = report.divergence.clone().expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::ToolResult, "{report}");
    assert_eq!(first.field.as_deref(), Some("data.result.content"));
    let (a, b) = (first.a.unwrap(), first.b.unwrap());
    assert_eq!((a.place.line, b.place.line), (line, line));
    assert_eq!(b.value, Some(json!("something else")));
    assert_eq!(a.place.tool_call, 3);
}

#[test]
fn changed_arguments_are_named() {
    let journal = fixture("multi-turn/events.jsonl");
    let line = nth_line(&journal, "tool.execution_start", 2);
    let tmp = tempfile::tempdir().unwrap();
    let changed = edited(&journal, tmp.path(), |n, event| {
        if n != line {
            return Edit::Keep;
        }
        let mut event = event.clone();
        event["data"]["arguments"]["planted"] = json!(true);
        Edit::Change(event)
    });
    let first = diff(&journal, &changed).divergence.expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::ToolCall);
    assert_eq!(first.field.as_deref(), Some("data.arguments.planted"));
    let b = first.b.unwrap();
    assert_eq!((b.place.line, b.place.tool_call), (line, 2));
    assert_eq!(b.value, Some(json!(true)));
    assert_eq!(first.a.unwrap().value, None, "A has no such field");
}

#[test]
fn a_removed_turn_is_named() {
    let journal = fixture("multi-turn/events.jsonl");
    let (start, end) = (
        nth_line(&journal, "assistant.turn_start", 3),
        nth_line(&journal, "assistant.turn_end", 3),
    );
    let tmp = tempfile::tempdir().unwrap();
    let removed = edited(&journal, tmp.path(), |n, _| {
        if (start..=end).contains(&n) {
            Edit::Drop
        } else {
            Edit::Keep
        }
    });
    let report = diff(&journal, &removed);
    let first = report.divergence.clone().expect("a divergence");
    let (a, b) = (first.a.unwrap(), first.b.unwrap());
    assert_eq!(a.place.llm_call, 3, "{report}");
    assert_eq!(
        b.place.llm_call, 3,
        "B's third call is A's fourth: {report}"
    );
    assert!(a.place.line > start && a.place.line <= end, "{report}");
    assert_eq!(first.kind, DivergenceKind::Answer, "{report}");
}

#[test]
fn an_added_event_is_named() {
    let journal = fixture("multi-turn/events.jsonl");
    let after = nth_line(&journal, "assistant.turn_end", 2);
    let tmp = tempfile::tempdir().unwrap();
    let added = edited(&journal, tmp.path(), |n, event| {
        if n != after {
            return Edit::Keep;
        }
        Edit::Append(
            json!({"type": "session.info", "data": {"infoType": "notification", "message": "planted"},
            "id": "00000000-0000-4000-8000-00000000abcd", "timestamp": event["timestamp"], "parentId": event["id"]}),
        )
    });
    let report = diff(&journal, &added);
    let first = report.divergence.clone().expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::Step, "{report}");
    let b = first.b.unwrap();
    assert_eq!(
        (b.event_type.as_str(), b.place.line),
        ("session.info", after + 1)
    );
    assert_eq!(b.place.llm_call, 2);
    assert_eq!(first.a.unwrap().event_type, "assistant.turn_start");
    assert!(first.message.contains("session.info"), "{}", first.message);
}

#[test]
fn a_copilot_cli_journal_edited_is_named() {
    let journal = fixture("copilot-runtime/c1-new-session.events.jsonl");
    let line = nth_line(&journal, "tool.execution_complete", 2);
    let tmp = tempfile::tempdir().unwrap();
    let changed = edited(&journal, tmp.path(), |n, event| {
        if n != line {
            return Edit::Keep;
        }
        let mut event = event.clone();
        event["data"]["result"]["content"] = json!("alpha: another file");
        Edit::Change(event)
    });
    let report = diff(&journal, &changed);
    assert_eq!(report.a.runtime, Runtime::CopilotCli);
    assert_eq!(report.profile, Profile::Strict);
    let first = report.divergence.expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::ToolResult);
    assert_eq!(first.a.unwrap().tool.as_deref(), Some("view"));
}

#[test]
fn a_changed_prompt_of_a_truncated_session_is_named() {
    // The real runtime's truncations and failed compactions before it: requests rebuilt
    // from the start, and still the same until the prompt.
    let journal = fixture("copilot-runtime/t1-truncated.events.jsonl");
    let line = nth_line(&journal, "user.message", 2);
    let tmp = tempfile::tempdir().unwrap();
    let changed = edited(&journal, tmp.path(), |n, event| {
        if n != line {
            return Edit::Keep;
        }
        let mut event = event.clone();
        event["data"]["content"] = json!("Another prompt.");
        Edit::Change(event)
    });
    let first = diff(&journal, &changed).divergence.expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::Prompt);
    assert_eq!(first.a.unwrap().place.line, line);
}

#[test]
fn a_copilot_cli_journal_and_a_turnstile_one_are_compared_by_behaviour() {
    let report = diff(
        &fixture("copilot-runtime/c1-new-session.events.jsonl"),
        &fixture("multi-turn/events.jsonl"),
    );
    assert_eq!(
        (report.a.runtime, report.b.runtime, report.profile),
        (Runtime::CopilotCli, Runtime::Turnstile, Profile::Behaviour)
    );
    let first = report.divergence.expect("two different sessions");
    assert_eq!(first.kind, DivergenceKind::Prompt);
    assert_eq!(first.a.unwrap().step, StepKind::Prompt);
}
