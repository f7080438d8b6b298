//! Rewinds and truncations: the real runtime's (`w1-rewound`, recorded with
//! `scripts/record-copilot-long.mjs rewind`: three prompts, a conversation rewind to the third,
//! a prompt, a files rewind to the second, a prompt, a truncation to a turn start, a prompt, a
//! resume and a prompt) and the same history as turnstile journals it: append-only, with a
//! `session.snapshot_rewind` marker at each cut. Both fold to the requests the runtime sent.

use crate::common;

use common::{conversation_shape, events, journal, request_shape, turn_starts};
use serde_json::Value;
use turnstile_journal::Event;
use turnstile_journal::payload::SnapshotRewind;
use turnstile_replay::{
    CutKind, Folder, RewindError, audit_bytes, fold, plan_cut, rewind_points, visible_events,
};

fn step(name: &str) -> Vec<Event> {
    let path = format!(
        "{}/../../fixtures/copilot-runtime/w1-rewound/{name}.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    events(&std::fs::read(path).expect("fixture exists"))
}

fn requests() -> Vec<Value> {
    let path = format!(
        "{}/../../fixtures/copilot-runtime/w1-rewound/requests.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read(path).expect("requests recorded");
    let value: Value = serde_json::from_slice(&text).expect("JSON");
    value.as_array().expect("a list").clone()
}

fn answers() -> Value {
    let path = format!(
        "{}/../../fixtures/copilot-runtime/w1-rewound/answers.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&std::fs::read(path).expect("answers")).expect("JSON")
}

/// Index of the last main-agent `assistant.turn_start`.
fn last_start(events: &[Event]) -> usize {
    events
        .iter()
        .rposition(|e| e.event_type.as_str() == "assistant.turn_start" && e.agent_id.is_none())
        .expect("a turn")
}

fn id_of(events: &[Event], kind: &str, nth: usize) -> String {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == kind)
        .nth(nth)
        .expect("the event")
        .id
        .to_string()
}

/// (journal after the step, request sent at its last turn start).
const SENT: [(&str, usize); 4] = [
    ("03-sent-after-rewind", 5),
    ("05-sent-after-files-rewind", 6),
    ("07-sent-after-truncate", 7),
    ("08-resumed", 8),
];

#[test]
fn the_runtime_cut_journal_folds_to_the_request_it_sent_next() {
    let requests = requests();
    assert_eq!(requests.len(), 9);
    for (name, request) in SENT {
        let all = step(name);
        let state = fold(&all[..last_start(&all)]);
        assert_eq!(
            conversation_shape(&state.conversation),
            request_shape(&requests[request]["messages"]),
            "{name}"
        );
        let report = audit_bytes(name, &journal(&all));
        assert!(report.is_clean(), "{name}: {:?}", report.violations);
    }
}

/// The recorded history as turnstile keeps it: nothing cut, a marker appended at each cut
/// (as [`plan_cut`] makes it from the view), the `parentId` chain unbroken.
fn append_only() -> (Vec<Event>, Vec<SnapshotRewind>) {
    let mut all = step("01-three-prompts");
    let mut markers = Vec::new();
    let cuts: [(&str, CutKind, &str, usize); 3] = [
        ("03-sent-after-rewind", CutKind::UserTurn, "user.message", 2),
        (
            "05-sent-after-files-rewind",
            CutKind::UserTurn,
            "user.message",
            1,
        ),
        (
            "07-sent-after-truncate",
            CutKind::Truncate,
            "assistant.turn_start",
            2,
        ),
    ];
    let mut kept_before = [26usize, 14, 16].into_iter();
    for (next, kind, target_type, nth) in cuts {
        let visible = visible_events(all.clone());
        let target = id_of(&visible, target_type, nth);
        let marker = plan_cut(&visible, &target, kind).expect("a cut");
        all.push(Event::new(&marker, None));
        markers.push(marker);
        let kept = kept_before.next().expect("a cut length");
        all.extend(step(next).into_iter().skip(kept));
    }
    let visible_before_resume = visible_events(all.clone()).len();
    all.extend(step("08-resumed").into_iter().skip(visible_before_resume));
    for i in 1..all.len() {
        all[i].parent_id = Some(all[i - 1].id);
    }
    (all, markers)
}

#[test]
fn markers_remove_what_the_runtime_removed() {
    let (all, markers) = append_only();
    let answers = answers();
    let removed: Vec<u64> = markers.iter().map(|m| m.events_removed).collect();
    assert_eq!(
        removed,
        [
            answers["rewindThirdConversation"]["eventsRemoved"]
                .as_u64()
                .unwrap_or_default(),
            answers["rewindSecondFiles"]["eventsRemoved"]
                .as_u64()
                .unwrap_or_default(),
            answers["truncate"]["eventsRemoved"]
                .as_u64()
                .unwrap_or_default(),
        ]
    );
    let ids = |events: &[Event]| events.iter().map(|e| e.id).collect::<Vec<_>>();
    let runtime = step("08-resumed");
    assert_eq!(ids(&visible_events(all.clone())), ids(&runtime));
    // Listed right after the resume, before its prompt.
    let visible = visible_events(all.clone());
    let resumed = visible
        .iter()
        .position(|e| e.event_type.as_str() == "session.resume")
        .expect("a resume");
    let points: Vec<String> = rewind_points(&visible[..=resumed])
        .into_iter()
        .map(|p| p.user_message)
        .collect();
    let listed: Vec<String> = answers["listOnResume"]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["userMessage"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(points, listed);
    let report = audit_bytes("append-only", &journal(&all));
    assert!(report.is_clean(), "{:?}", report.violations);
    // Every LLM call is still counted, the rewound ones too.
    assert_eq!(report.turns, 9);
}

#[test]
fn the_append_only_journal_folds_to_every_request_the_runtime_sent() {
    let (all, _) = append_only();
    let requests = requests();
    let starts = turn_starts(&all);
    assert_eq!(starts.len(), requests.len());
    for (n, (start, request)) in starts.iter().zip(&requests).enumerate() {
        let state = fold(&all[..*start]);
        assert_eq!(
            conversation_shape(&state.conversation),
            request_shape(&request["messages"]),
            "request {n}"
        );
    }
    let state = fold(&all);
    assert_eq!(state.rewinds, 3);
    assert_eq!(state.view_events as usize, step("08-resumed").len());
    // Incremental from every cut, through the serialized state a checkpoint holds.
    for cut in 0..=all.len() {
        let saved = serde_json::to_vec(&fold(&all[..cut])).expect("serializes");
        let mut folder = Folder::from_state(serde_json::from_slice(&saved).expect("reads"));
        for e in &all[cut..] {
            folder.apply(e);
        }
        assert_eq!(folder.into_state(), state, "resumed at {cut}");
    }
}

#[test]
fn cuts_are_refused_where_the_runtime_refuses_them() {
    let (all, _) = append_only();
    let visible = visible_events(all.clone());
    let gone = id_of(&step("01-three-prompts"), "user.message", 2);
    assert_eq!(
        plan_cut(&visible, &gone, CutKind::UserTurn),
        Err(RewindError::NotUserTurn(gone.clone()))
    );
    assert_eq!(
        plan_cut(&visible, &gone, CutKind::Truncate),
        Err(RewindError::NotFound(gone))
    );
    let start = id_of(&visible, "assistant.turn_start", 0);
    assert!(matches!(
        plan_cut(&visible, &start, CutKind::UserTurn),
        Err(RewindError::NotUserTurn(_))
    ));
    let first = id_of(&visible, "user.message", 0);
    let whole = plan_cut(&visible, &first, CutKind::UserTurn).expect("the first turn");
    assert_eq!(whole.events_removed as usize, visible.len() - 2);
}

#[test]
fn a_marker_with_more_than_the_view_empties_it_and_keeps_the_prompt() {
    let mut all = step("01-three-prompts");
    all.push(Event::new(
        &SnapshotRewind {
            up_to_event_id: "x".to_owned(),
            events_removed: u64::MAX,
        },
        None,
    ));
    let state = fold(&all);
    assert_eq!(state.view_events, 0);
    assert_eq!(conversation_shape(&state.conversation).len(), 1);
    assert!(visible_events(all).is_empty());
}
