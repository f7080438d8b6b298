//! Folding the real runtime's skill invocation (`s1-skill`, the differential scenario
//! `skill` recorded with the Copilot CLI 1.0.81-0): the skill's context, a `user.message`
//! from `skill-demo`, joins the turn after the tool result, so the conversation before each
//! LLM call is the request the runtime sent (system prompt left out).

use crate::common;

use common::{conversation_shape, events, fixture_bytes, fixture_path, request_shape, turn_starts};
use serde_json::Value;
use turnstile_replay::{audit_bytes, fold};

const NAME: &str = "s1-skill";

#[test]
fn the_conversation_before_each_call_is_what_the_runtime_sent() {
    let path = fixture_path(NAME).with_file_name(format!("{NAME}.requests.json"));
    let requests: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let requests = requests.as_array().unwrap();
    let all = events(&fixture_bytes(NAME));
    let starts = turn_starts(&all);
    assert_eq!(starts.len(), requests.len());
    // From the third call on the runtime's request holds a failed call's longer text, which
    // its journal does not keep (docs/tools.md); the first two calls are the skill's.
    for (request, start) in requests.iter().zip(&starts).take(2) {
        let state = fold(&all[..*start]);
        assert_eq!(
            conversation_shape(&state.conversation)[1..],
            request_shape(&request["messages"])[1..],
            "before line {}",
            start + 1
        );
    }
}

#[test]
fn the_skill_message_starts_no_interaction() {
    let bytes = fixture_bytes(NAME);
    let report = audit_bytes(NAME, &bytes);
    assert!(report.is_clean(), "{:?}", report.violations);
    let all = events(&bytes);
    let state = fold(&all);
    assert_eq!(state.counts.turns, 5);
    assert_eq!(report.turns, 5);
    // One prompt: the skill's context is not counted as another.
    assert_eq!(state.counts.user_messages, 1);
}
