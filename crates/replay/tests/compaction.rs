//! Folding the real runtime's background compaction: the conversation before each LLM call
//! equals the request the runtime sent (`p1-compacted`, recorded with
//! `scripts/record-copilot-long.mjs truncate`: a 30 000-token prompt limit, large results).

use crate::common;

use common::{
    assert_resumes_from_every_cut, conversation_shape, events, fixture_bytes, fixture_path,
    recorded_requests, request_shape, turn_starts,
};
use turnstile_replay::{Message, ViewError, audit_bytes, fold, view_at};

const NAME: &str = "p1-compacted";

#[test]
fn the_view_before_each_call_is_what_the_runtime_sent() {
    let all = events(&fixture_bytes(NAME));
    let starts = turn_starts(&all);
    // The last two main-agent requests: the turn right after the compaction finished (still
    // the whole history) and the next prompt's (the summary in place of what it covered).
    let requests = recorded_requests(NAME);
    assert_eq!(requests.len(), 2);
    for (request, start) in requests.iter().zip(&starts[starts.len() - 2..]) {
        let state = fold(&all[..*start]);
        assert_eq!(
            conversation_shape(&state.conversation),
            request_shape(&request["messages"]),
            "before line {}",
            start + 1
        );
    }
}

#[test]
fn compaction_is_counted_and_the_state_stays_small() {
    let bytes = fixture_bytes(NAME);
    let report = audit_bytes(NAME, &bytes);
    assert!(report.is_clean(), "{:?}", report.violations);
    let all = events(&bytes);
    let state = fold(&all);
    assert_eq!(state.compactions, 1);
    assert_eq!(state.pending_compaction, None);
    assert_eq!(state.counts.turns, report.turns);
    // Every LLM call is counted: the turns and the summary call.
    assert_eq!(report.compaction_calls, 1);
    assert_eq!(state.counts.compaction_calls, 1);
    assert_eq!(report.turns + report.compaction_calls, 11);
    let summaries: Vec<&Message> = state
        .conversation
        .iter()
        .filter(|m| matches!(m, Message::Summary { .. }))
        .collect();
    assert_eq!(summaries.len(), 1);
    let text = summaries[0].summary_text().expect("summary text");
    assert!(text.contains("<user_message>\nRead every part file, one at a time\n</user_message>"));
    // Incremental from every cut (a checkpoint may hold a compaction not yet applied).
    assert_resumes_from_every_cut(&all, &state);
}

#[test]
fn the_view_at_a_call_is_the_fold_before_it() {
    let all = events(&fixture_bytes(NAME));
    let path = fixture_path(NAME);
    let starts = turn_starts(&all);
    for (n, start) in starts.iter().enumerate() {
        let view = view_at(&path, Some(n as u64 + 1)).expect("a view");
        assert_eq!(view.turns, 10);
        assert_eq!(view.line, Some(*start as u64 + 1));
        assert_eq!(view.state, fold(&all[..*start]), "call {}", n + 1);
    }
    let next = view_at(&path, None).expect("the next view");
    assert_eq!(next.state, fold(&all));
    for bad in [0, 11] {
        let err = view_at(&path, Some(bad)).expect_err("no such call");
        assert!(
            matches!(err, ViewError::NoSuchTurn { turns: 10, .. }),
            "{err}"
        );
    }
}

#[test]
fn a_compaction_finished_between_turns_is_what_the_very_next_request_carries() {
    let mut all = events(&fixture_bytes(NAME));
    let at = all
        .iter()
        .position(|e| e.event_type.as_str() == "session.compaction_complete")
        .expect("the recording compacts");
    assert_eq!(all[at + 1].event_type.as_str(), "assistant.turn_end");
    assert_eq!(all[at + 2].event_type.as_str(), "assistant.turn_start");
    let has_summary = |m: &[Message]| m.iter().any(|m| matches!(m, Message::Summary { .. }));
    // As recorded, inside the turn it ran behind: the next turn's request is already built.
    let inside = fold(&all[..at + 3]);
    assert!(inside.pending_compaction.is_some());
    assert!(!has_summary(&inside.conversation));
    // Finished after the turn ended (turnstile's compaction before a request, a manual one):
    // the next request carries the summary.
    all.swap(at, at + 1);
    let between = fold(&all[..at + 2]);
    assert!(between.pending_compaction.is_none());
    assert!(matches!(between.conversation[1], Message::Summary { .. }));
    assert_eq!(
        between.conversation.len(),
        4,
        "the summary replaces the 15 messages it was started over, the last call and its result stay: {:?}",
        conversation_shape(&between.conversation)
    );
}
