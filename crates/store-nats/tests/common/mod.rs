//! What the store tests share: journals as the engine's writer writes them.

use turnstile_journal::{Event, EventType, JournalWriter, StateRoot, Uuid};

/// A new session id and a journal of `lines` `session.info` lines, written by the journal
/// writer (so the bytes are exactly what a session directory holds).
pub fn journal(lines: usize) -> (Uuid, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let root = StateRoot::new(dir.path());
    let id = Uuid::new_v4();
    let (w, _) = JournalWriter::create(&root, id, Default::default()).unwrap();
    let mut last = None;
    for n in 0..lines {
        let data =
            serde_json::value::RawValue::from_string(format!("{{\"message\":\"line {n}\"}}"))
                .unwrap();
        let ev = Event::with_raw_data(EventType::new("session.info"), data, last);
        last = Some(ev.id);
        w.append_unsynced(&ev).unwrap();
    }
    w.close().unwrap();
    (id, std::fs::read(root.session(id).events).unwrap())
}
