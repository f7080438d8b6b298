//! Folding `system.notification`: the runtime's notice of something that happened on its own
//! (a background shell that ended) reaches the model as a user message, where it was recorded,
//! so a resume or replay sends it as the runtime did.

use serde_json::json;
use turnstile_journal::payload::{SystemNotification, TypedEvent, UserMessage};
use turnstile_journal::{Event, Uuid};
use turnstile_replay::{Message, fold};

const CONTENT: &str = "<system_notification>\nShell command \"Wait then fail\" (shellId: 0) has exited with exit code 4. Use read_bash with shellId \"0\" to retrieve the output.\n</system_notification>";

fn chain(payloads: Vec<Box<dyn Fn(Option<Uuid>) -> Event>>) -> Vec<Event> {
    let mut parent = None;
    payloads
        .into_iter()
        .map(|make| {
            let event = make(parent);
            parent = Some(event.id);
            event
        })
        .collect()
}

#[test]
fn a_notification_is_a_user_message_where_it_was_recorded() {
    let events = chain(vec![
        Box::new(|p| {
            TypedEvent::from(UserMessage {
                content: "Start a background shell".into(),
                ..Default::default()
            })
            .to_event(p)
            .unwrap()
        }),
        Box::new(|p| {
            TypedEvent::from(SystemNotification {
                content: CONTENT.into(),
                kind: json!({"type": "shell_completed", "shellId": "0", "exitCode": 4, "description": "Wait then fail"}),
            })
            .to_event(p)
            .unwrap()
        }),
    ]);
    let state = fold(&events);
    let contents: Vec<&str> = state
        .conversation
        .iter()
        .filter_map(|m| match m {
            Message::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(contents, vec!["Start a background shell", CONTENT]);
    // It is not a prompt.
    assert_eq!(state.counts.user_messages, 1);
}
