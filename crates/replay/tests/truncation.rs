//! Folding the real runtime's truncation (`t1-truncated`, recorded with
//! `scripts/record-copilot-long.mjs compact-fail`: every summary request refused, a 30 000-token
//! prompt limit, large results). The runtime drops the oldest messages after the first prompt
//! right before a call that would pass the window (`session.truncation`), keeps them dropped
//! for the rest of the message, and truncates the next message's requests from the whole
//! history again. The view before each call equals the request the runtime sent.

use crate::common;

use common::{
    assert_resumes_from_every_cut, conversation_shape, events, fixture_bytes, fixture_path,
    recorded_requests, request_shape,
};
use turnstile_replay::{audit_bytes, fold, view_at};

const NAME: &str = "t1-truncated";

#[test]
fn the_view_before_each_call_is_what_the_runtime_sent_around_its_truncations() {
    let path = fixture_path(NAME);
    let requests = recorded_requests(NAME);
    // Before the first truncation, right after it, the call after (still truncated), and the
    // next message's first call (the whole history, truncated again).
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let call = request["turn"].as_u64().expect("turn") + 1;
        let view = view_at(&path, Some(call)).expect("a view");
        assert_eq!(
            conversation_shape(&view.state.conversation),
            request_shape(&request["messages"]),
            "LLM call {call}"
        );
    }
}

#[test]
fn truncations_are_counted_undone_by_the_next_prompt_and_resume_from_any_cut() {
    let bytes = fixture_bytes(NAME);
    let report = audit_bytes(NAME, &bytes);
    assert!(report.is_clean(), "{:?}", report.violations);
    let all = events(&bytes);
    let state = fold(&all);
    assert_eq!(state.truncations, 2);
    assert_eq!(state.compactions, 0, "every summary call failed");
    assert_eq!(report.compaction_calls, 3);
    // The last truncation hid the oldest three calls and their results.
    assert_eq!(state.hidden.messages.len(), 6);
    // The second prompt brings back what the first message's truncation hid.
    let second = all
        .iter()
        .rposition(|e| e.event_type.as_str() == "user.message")
        .expect("two prompts");
    let before = fold(&all[..second]);
    assert_eq!(before.hidden.messages.len(), 4);
    let after = fold(&all[..=second]);
    assert!(after.hidden.is_empty());
    assert_eq!(
        after.conversation.len(),
        before.conversation.len() + before.hidden.messages.len() + 1
    );
    // Incremental from every cut: what is hidden goes through a checkpoint's state.
    assert_resumes_from_every_cut(&all, &state);
}
