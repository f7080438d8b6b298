//! Resume plans for journals cut at every line of every recording.

use crate::common;

use common::{FIXTURES, assert_valid_history, events, fixture_bytes, journal};
use turnstile_journal::payload::{SessionResume, ToolExecutionComplete};
use turnstile_journal::{Event, Timestamp};
use turnstile_replay::resume_plan::{INTERRUPTED_CODE, INTERRUPTED_MESSAGE};
use turnstile_replay::{audit_bytes, fold, resume_plan};

fn now() -> Timestamp {
    Timestamp::from_millis(1_800_000_000_000)
}

#[test]
fn cut_at_every_line() {
    for name in FIXTURES {
        let all = events(&fixture_bytes(name));
        for cut in 0..=all.len() {
            let context = format!("{name} cut after {cut} lines");
            let prefix = &all[..cut];
            let state = fold(prefix);
            let plan = resume_plan(&state, now());

            // The plan chains from the journal's last event, starts with the resume, and never
            // starts a turn.
            let mut parent = state.last_event_id;
            for event in &plan.events {
                assert_eq!(event.parent_id, parent, "{context}: chain");
                assert_eq!(event.timestamp, now(), "{context}: time");
                assert_ne!(
                    event.event_type.as_str(),
                    "assistant.turn_start",
                    "{context}: invented turn"
                );
                assert!(!event.is_ephemeral(), "{context}: ephemeral event in plan");
                parent = Some(event.id);
            }
            let resume: SessionResume = plan.events[0].payload().expect("first is session.resume");
            assert_eq!(resume.event_count, cut as u64, "{context}");
            assert_eq!(
                resume.events_file_size_bytes,
                Some(journal(prefix).len() as u64),
                "{context}"
            );
            assert_eq!(
                resume.session_was_active,
                Some(state.was_active()),
                "{context}"
            );
            assert_eq!(
                plan.is_clean(),
                !state.open_work.has_open_items(),
                "{context}"
            );

            for event in plan
                .events
                .iter()
                .filter(|e| e.event_type.as_str() == "tool.execution_complete")
            {
                let done: ToolExecutionComplete = event.payload().expect("typed");
                assert!(!done.success);
                let error = done.error.expect("error");
                assert_eq!(
                    (error.message.as_str(), error.code.as_deref()),
                    (INTERRUPTED_MESSAGE, Some(INTERRUPTED_CODE))
                );
            }

            // Journal + plan: everything closed, same LLM calls, a valid history.
            let mut whole: Vec<Event> = prefix.to_vec();
            whole.extend(plan.events.iter().cloned());
            let after = fold(&whole);
            assert!(
                after.open_work.turns.is_empty(),
                "{context}: open turn left"
            );
            assert!(
                after.open_work.tool_calls.is_empty(),
                "{context}: open tool call left"
            );
            assert!(
                after.open_work.permissions.is_empty(),
                "{context}: pending permission left"
            );
            assert!(
                after.open_work.external_tools.is_empty(),
                "{context}: pending external tool left"
            );
            assert_eq!(
                after.counts.turns, state.counts.turns,
                "{context}: turns changed"
            );
            assert_valid_history(&after.conversation, &context);

            let report = audit_bytes(&context, &journal(&whole));
            let pairing: Vec<_> = report.pairing_violations().collect();
            assert!(pairing.is_empty(), "{context}: {pairing:?}");
            assert!(report.is_clean(), "{context}: {:?}", report.violations);
            assert_eq!(report.turns, state.counts.turns, "{context}");
            assert!(
                report.open_work.is_empty(),
                "{context}: {:?}",
                report.open_work
            );

            // A second resume right after finds nothing to close.
            assert!(
                resume_plan(&after, now()).is_clean(),
                "{context}: plan not idempotent"
            );
        }
    }
}

#[test]
fn mid_work_cuts_close_what_is_open() {
    let all = events(&fixture_bytes("c1-new-session"));
    let find = |ty: &str| {
        all.iter()
            .position(|e| e.event_type.as_str() == ty)
            .expect(ty)
    };

    // Cut right after `tool.execution_start`: fail the call, end the turn.
    let state = fold(&all[..=find("tool.execution_start")]);
    let plan = resume_plan(&state, now());
    let types: Vec<&str> = plan.events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "session.resume",
            "tool.execution_complete",
            "assistant.turn_end"
        ]
    );
    assert!(plan.session_was_active);

    // Cut inside the permission request: cancel it first.
    let state = fold(&all[..=find("permission.requested")]);
    let plan = resume_plan(&state, now());
    let types: Vec<&str> = plan.events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "session.resume",
            "permission.completed",
            "tool.execution_complete",
            "assistant.turn_end"
        ]
    );
    let completed: turnstile_journal::payload::PermissionCompleted =
        plan.events[1].payload().unwrap();
    assert_eq!(completed.result_kind(), Some("cancelled"));

    // Cut after `assistant.message` with tool requests but before the start: the requested
    // call still gets its (failed) result.
    let state = fold(&all[..=find("assistant.message")]);
    let plan = resume_plan(&state, now());
    assert_eq!(plan.closed_tool_calls, ["call_5a1ca89365644d54"]);

    // Cut after `assistant.turn_start`: only the turn is ended.
    let state = fold(&all[..=find("assistant.turn_start")]);
    let plan = resume_plan(&state, now());
    let types: Vec<&str> = plan.events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(types, ["session.resume", "assistant.turn_end"]);

    // Cut after the user message: nothing to close, but the loop was running.
    let state = fold(&all[..=find("user.message")]);
    let plan = resume_plan(&state, now());
    assert!(plan.is_clean() && plan.session_was_active);

    // A finished session: only `session.resume`, not active.
    let state = fold(&all);
    let plan = resume_plan(&state, now());
    assert!(plan.is_clean() && !plan.session_was_active);
    let resume: SessionResume = plan.events[0].payload().unwrap();
    assert_eq!(resume.selected_model.as_deref(), Some("gpt-4.1"));
    assert_eq!(
        resume.context.map(|c| c.cwd),
        Some("/home/dev/project".to_owned())
    );
}

/// An external tool request is settled by its call's failed result.
#[test]
fn external_tool_requests_are_closed_by_their_call() {
    let all = events(&fixture_bytes("c1-new-session"));
    let start = all
        .iter()
        .position(|e| e.event_type.as_str() == "tool.execution_start")
        .unwrap();
    let mut prefix: Vec<Event> = all[..=start].to_vec();
    let data = serde_json::value::RawValue::from_string(
        r#"{"requestId":"req-1","sessionId":"4411488c-e7b6-4328-b266-cdf491e0f73c","toolCallId":"call_ext","toolName":"my_tool","arguments":{}}"#.to_owned(),
    )
    .unwrap();
    prefix.push(Event::with_raw_data(
        "external_tool.requested".into(),
        data,
        prefix.last().map(|e| e.id),
    ));
    let state = fold(&prefix);
    assert_eq!(state.open_work.external_tools.len(), 1);
    let plan = resume_plan(&state, now());
    assert_eq!(plan.closed_tool_calls.len(), 2);
    let mut whole = prefix.clone();
    whole.extend(plan.events.iter().cloned());
    let after = fold(&whole);
    assert!(after.open_work.external_tools.is_empty());
    assert!(audit_bytes("ext", &journal(&whole)).is_clean());
}
