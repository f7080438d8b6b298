//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod synth;

use std::path::PathBuf;

use turnstile_journal::Event;

/// The recordings of the real runtime.
pub const FIXTURES: [&str; 3] = ["c1-new-session", "r1-resumed", "a2-autopilot"];

/// Path of a recording.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../fixtures/copilot-runtime/{name}.events.jsonl"
    ))
}

/// Bytes of a recording.
pub fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).expect("fixture exists")
}

/// Lines of journal bytes (without newlines).
pub fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// Events of journal bytes.
pub fn events(bytes: &[u8]) -> Vec<Event> {
    lines(bytes)
        .into_iter()
        .map(|l| Event::from_line(l).expect("valid line"))
        .collect()
}

/// Journal bytes of events.
pub fn journal(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        e.write_persisted(&mut out);
        out.push(b'\n');
    }
    out
}
