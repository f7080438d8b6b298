//! Folding the real runtime's truncation (`t1-truncated`, recorded with
//! `scripts/record-copilot-long.mjs compact-fail`: every summary request refused, a 30 000-token
//! prompt limit, large results). The runtime drops the oldest messages after the first prompt
//! right before a call that would pass the window (`session.truncation`), keeps them dropped
//! for the rest of the message, and truncates the next message's requests from the whole
//! history again. The view before each call equals the request the runtime sent.

mod common;

use common::{conversation_shape, events, fixture_bytes, fixture_path, request_shape};
use serde_json::Value;
use turnstile_replay::{Folder, audit_bytes, fold, view_at};

const NAME: &str = "t1-truncated";

/// The recorded requests: `turn` is the main-agent call (0-based) each was sent at.
fn recorded_requests() -> Vec<Value> {
    let path = fixture_path(NAME).with_file_name(format!("{NAME}.requests.json"));
    let text = std::fs::read(path).expect("requests recorded");
    let requests: Value = serde_json::from_slice(&text).expect("requests are JSON");
    requests.as_array().expect("a list").clone()
}

#[test]
fn the_view_before_each_call_is_what_the_runtime_sent_around_its_truncations() {
    let path = fixture_path(NAME);
    let requests = recorded_requests();
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
    for cut in 0..=all.len() {
        let mut folder = Folder::from_state(fold(&all[..cut]));
        for e in &all[cut..] {
            folder.apply(e);
        }
        assert_eq!(folder.into_state(), state, "resumed at {cut}");
    }
}
