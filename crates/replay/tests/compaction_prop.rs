//! Property: for random sessions with compactions between turns (turnstile's, seen at once)
//! and inside turns (the runtime's, seen late), the folded view stays a valid history (the
//! system prompt first, at most one summary right after it, every tool result in the block
//! after the assistant message that asked for it), a compaction between turns replaces
//! exactly what it names (widened over the results of a cut request, and always taking in the
//! summary before it), and a fold continued
//! from a checkpointed state at any event equals the fold in one go.

use proptest::prelude::*;
use turnstile_journal::Event;
use turnstile_journal::payload::{
    AssistantMessage, AssistantTurnEnd, AssistantTurnStart, CompactionComplete, SystemMessage,
    ToolExecutionComplete, ToolRequest, ToolResult, UserMessage,
};
use turnstile_replay::{Folder, Message, SessionState};

/// One step of a generated session.
#[derive(Debug, Clone)]
enum Step {
    /// A user prompt.
    Prompt,
    /// A turn whose answer asks for this many tools (0: a text answer).
    Turn {
        calls: usize,
        compact_inside: Option<u64>,
    },
    /// A compaction between turns replacing this many messages.
    Compact(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => Just(Step::Prompt),
        4 => (0usize..4, proptest::option::weighted(0.15, 0u64..12))
            .prop_map(|(calls, compact_inside)| Step::Turn { calls, compact_inside }),
        1 => (0u64..14).prop_map(Step::Compact),
    ]
}

/// The journal of `steps`, each event chained to the one before.
fn journal(steps: &[Step]) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    let parent = |events: &Vec<Event>| events.last().map(|e| e.id);
    let e = Event::new(
        &SystemMessage {
            role: "system".into(),
            content: "system prompt".into(),
            ..Default::default()
        },
        None,
    );
    events.push(e);
    let mut call = 0;
    for (n, s) in steps.iter().enumerate() {
        match s {
            Step::Prompt => {
                let e = Event::new(
                    &UserMessage {
                        content: format!("prompt {n}"),
                        ..Default::default()
                    },
                    parent(&events),
                );
                events.push(e);
            }
            Step::Compact(removed) => {
                let e = Event::new(&compaction(n, *removed), parent(&events));
                events.push(e);
            }
            Step::Turn {
                calls,
                compact_inside,
            } => {
                let turn_id = n.to_string();
                let e = Event::new(
                    &AssistantTurnStart {
                        turn_id: turn_id.clone(),
                        ..Default::default()
                    },
                    parent(&events),
                );
                events.push(e);
                let ids: Vec<String> = (0..*calls)
                    .map(|_| {
                        call += 1;
                        format!("call_{call}")
                    })
                    .collect();
                let e = Event::new(
                    &AssistantMessage {
                        message_id: format!("m{n}"),
                        content: if ids.is_empty() {
                            format!("answer {n}")
                        } else {
                            String::new()
                        },
                        tool_requests: Some(
                            ids.iter()
                                .map(|id| ToolRequest {
                                    tool_call_id: id.clone(),
                                    name: "view".into(),
                                    ..Default::default()
                                })
                                .collect(),
                        ),
                        turn_id: Some(turn_id.clone()),
                        ..Default::default()
                    },
                    parent(&events),
                );
                events.push(e);
                // Results recorded in reverse: the fold still places each after its request.
                for id in ids.iter().rev() {
                    let e = Event::new(
                        &ToolExecutionComplete {
                            tool_call_id: id.clone(),
                            turn_id: Some(turn_id.clone()),
                            success: true,
                            result: Some(ToolResult {
                                content: format!("result of {id}"),
                                ..Default::default()
                            }),
                            ..Default::default()
                        },
                        parent(&events),
                    );
                    events.push(e);
                }
                if let Some(removed) = compact_inside {
                    let e = Event::new(&compaction(n, *removed), parent(&events));
                    events.push(e);
                }
                let e = Event::new(
                    &AssistantTurnEnd {
                        turn_id,
                        ..Default::default()
                    },
                    parent(&events),
                );
                events.push(e);
            }
        }
    }
    events
}

fn compaction(n: usize, removed: u64) -> CompactionComplete {
    CompactionComplete {
        success: true,
        messages_removed: Some(removed),
        summary_content: Some(format!("summary {n}")),
        trigger: Some("threshold".into()),
        ..Default::default()
    }
}

/// The rules every view keeps.
fn check_view(view: &[Message]) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(view.first(), Some(Message::System { .. })),
        "{view:?}"
    );
    for (i, m) in view.iter().enumerate() {
        if matches!(m, Message::Summary { .. }) {
            prop_assert_eq!(
                i,
                1,
                "a summary only right after the system prompt: {:?}",
                view
            );
        }
        if let Message::Tool { tool_call_id, .. } = m {
            // The nearest non-result message before it asked for it.
            let owner = view[..i]
                .iter()
                .rev()
                .find(|m| !matches!(m, Message::Tool { .. }));
            let asked = matches!(owner, Some(Message::Assistant { tool_requests, .. })
                if tool_requests.iter().any(|r| &r.tool_call_id == tool_call_id));
            prop_assert!(asked, "result {tool_call_id} without its request: {view:?}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_view_after_compactions_is_valid_and_survives_a_checkpoint_anywhere(
        steps in proptest::collection::vec(step(), 1..40),
        cut in any::<prop::sample::Index>(),
    ) {
        let events = journal(&steps);
        let mut whole = Folder::new();
        let mut main_turn_open = false;
        for e in &events {
            let before = whole.state().conversation.clone();
            // A compaction still pending is applied first: then `before` is not what the new
            // one cuts, and only the view's validity is checked.
            let pending_before = whole.state().pending_compaction.is_some();
            whole.apply(e);
            let after = &whole.state().conversation;
            check_view(after)?;
            match e.event_type.as_str() {
                "assistant.turn_start" => main_turn_open = true,
                "assistant.turn_end" => main_turn_open = false,
                "session.compaction_complete" if !main_turn_open && !pending_before => {
                    // Seen at once: exactly what it names goes, widened over cut results.
                    let removed: u64 = serde_json::from_str::<serde_json::Value>(e.data.get())
                        .unwrap()["messagesRemoved"]
                        .as_u64()
                        .unwrap();
                    let available = before.len() - 1;
                    let earlier = usize::from(matches!(before.get(1), Some(Message::Summary { .. })));
                    let mut end = 1 + (removed as usize).min(available).max(earlier);
                    while matches!(before.get(end), Some(Message::Tool { .. })) {
                        end += 1;
                    }
                    prop_assert!(whole.state().pending_compaction.is_none());
                    prop_assert_eq!(&after[2..], &before[end..]);
                    let summary_first = matches!(after[1], Message::Summary { .. });
                    prop_assert!(summary_first, "{:?}", after);
                }
                _ => {}
            }
        }
        // A checkpoint at any event: the state serialized, read back, folded on.
        let at = cut.index(events.len() + 1);
        let mut first = Folder::new();
        for e in &events[..at] {
            first.apply(e);
        }
        let saved = serde_json::to_string(first.state()).unwrap();
        let restored: SessionState = serde_json::from_str(&saved).unwrap();
        let mut rest = Folder::from_state(restored);
        for e in &events[at..] {
            rest.apply(e);
        }
        prop_assert_eq!(rest.state(), whole.state());
    }
}
