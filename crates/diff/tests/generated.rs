//! Generated sessions: two runs of one session under other ids, times and directories are
//! the same; one change at one turn is named at that turn, in sessions of 10,000 turns too.

use std::path::{Path, PathBuf};

use serde_json::json;
use turnstile_diff::{DivergenceKind, Report};

use crate::common::diff;
use crate::common::session::{Change, Session};

/// `session` written as `dir/<name>/events.jsonl`.
pub fn write(dir: &Path, name: &str, session: &Session) -> PathBuf {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("events.jsonl");
    session
        .write(std::fs::File::create(&path).unwrap())
        .unwrap();
    path
}

/// The report of session `a` against `b`.
pub fn compare(a: &Session, b: &Session) -> Report {
    let tmp = tempfile::tempdir().unwrap();
    diff(&write(tmp.path(), "a", a), &write(tmp.path(), "b", b))
}

#[test]
fn two_runs_under_other_ids_times_and_directories_are_the_same() {
    let report = compare(&Session::new(1, 50), &Session::new(2, 50));
    assert!(report.same, "{report}");
    assert_eq!(
        (report.compared.llm_calls, report.compared.tool_calls),
        (50, 49)
    );
}

#[test]
fn each_change_is_named_at_its_turn() {
    let turn = 7;
    for (change, kind, field) in [
        (
            Change::ToolResult(turn),
            DivergenceKind::ToolResult,
            Some("data.result.content"),
        ),
        (
            Change::Arguments(turn),
            DivergenceKind::ToolCall,
            Some("data.arguments.command"),
        ),
        (
            Change::RemoveTurn(turn),
            DivergenceKind::Answer,
            Some("data.toolRequests[0].arguments.command"),
        ),
        (Change::AddEvent(turn), DivergenceKind::Step, None),
    ] {
        let report = compare(&Session::new(1, 20), &Session::new(2, 20).with(change));
        let first = report.divergence.clone().expect("a divergence");
        assert_eq!(first.kind, kind, "{change:?}: {report}");
        assert_eq!(first.field.as_deref(), field, "{change:?}: {report}");
        // An added event is met by the start of A's next call.
        let next = u64::from(matches!(change, Change::AddEvent(_)));
        assert_eq!(
            first.a.as_ref().unwrap().place.llm_call,
            turn + next,
            "{change:?}: {report}"
        );
        assert_eq!(
            first.b.as_ref().unwrap().place.llm_call,
            turn,
            "{change:?}: {report}"
        );
    }
}

#[test]
fn an_event_after_the_end_is_named() {
    let report = compare(
        &Session::new(1, 5),
        &Session::new(2, 5).with(Change::AddEvent(5)),
    );
    let first = report.divergence.expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::AEnds);
    assert!(first.a.is_none());
    assert_eq!(first.b.unwrap().event_type, "session.info");
}

#[test]
fn ten_thousand_turns_differing_at_turn_9000() {
    let report = compare(
        &Session::new(1, 10_000),
        &Session::new(2, 10_000).with(Change::ToolResult(9_000)),
    );
    let first = report.divergence.clone().expect("a divergence");
    assert_eq!(first.kind, DivergenceKind::ToolResult, "{report}");
    let (a, b) = (first.a.unwrap(), first.b.unwrap());
    assert_eq!((a.place.llm_call, b.place.llm_call), (9_000, 9_000));
    assert_eq!(a.place.tool_call, 9_000);
    assert_eq!(
        b.value,
        Some(json!("9000 (changed)\nin <cwd>\n<exited with exit code 0>"))
    );
    assert!(report.compared.steps > 6 * 8_999, "{report}");
}
