//! Journals read and written back give the same bytes: the real runtime's recordings, and
//! journals with unknown types, U+2028, CRLF and a 1 MB line.

use std::path::PathBuf;

use turnstile_journal::{Event, JournalReader, ReadMode};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime")
        .join(name)
}

fn rewrite(path: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for record in JournalReader::open(path, ReadMode::Lenient).unwrap() {
        let record = record.unwrap_or_else(|e| panic!("{e}"));
        record.event.write_as_read(&mut out);
        out.push(b'\n');
    }
    out
}

#[test]
fn runtime_recordings_round_trip_byte_for_byte() {
    for name in [
        "c1-new-session.events.jsonl",
        "r1-resumed.events.jsonl",
        "a2-autopilot.events.jsonl",
        "c1-new-session.live.jsonl",
    ] {
        let path = fixture(name);
        let original = std::fs::read(&path).unwrap();
        assert_eq!(rewrite(&path), original, "{name} changed on round trip");
    }
}

#[test]
fn live_stream_and_disk_agree_on_persistence() {
    let live = std::fs::read_to_string(fixture("c1-new-session.live.jsonl")).unwrap();
    let disk = std::fs::read_to_string(fixture("c1-new-session.events.jsonl")).unwrap();
    let disk_ids: Vec<_> = disk
        .lines()
        .map(|l| Event::from_line(l.as_bytes()).unwrap())
        .collect();
    assert!(
        disk_ids.iter().all(|e| !e.is_ephemeral()),
        "an ephemeral type on disk"
    );
    // Every live event the runtime marked ephemeral is of a type our table calls ephemeral or
    // of a type the schema does not know; every unmarked one is on disk (the runtime's live
    // copies may differ from the disk copy in content, e.g. telemetry, so ids are compared).
    for line in live.lines() {
        let ev = Event::from_line(line.as_bytes()).unwrap();
        if ev.live_mark == turnstile_journal::LiveMark::Absent {
            assert!(
                !ev.is_ephemeral(),
                "{} live without the ephemeral mark",
                ev.event_type
            );
            assert!(
                disk_ids.iter().any(|d| d.id == ev.id),
                "persisted live event {} not on disk",
                ev.id
            );
        } else {
            assert!(
                ev.is_ephemeral() || !ev.event_type.is_known(),
                "{} marked ephemeral but persisted by the schema",
                ev.event_type
            );
        }
    }
}

#[test]
fn unknown_types_unicode_crlf_and_huge_lines() {
    let big = "y".repeat(1 << 20);
    let lines = [
        r#"{"type":"session.future_feature","data":{"nested":{"b":1,"a":[true,null,1.5e300]}},"id":"4786b3be-b429-4ca6-a44b-d9323b7490b8","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}"#.to_string(),
        format!(r#"{{"type":"user.message","data":{{"content":"{big}"}},"id":"2e6bfb39-70a8-4464-838b-fbc966681576","timestamp":"2026-11-29T14:34:34.841Z","parentId":"4786b3be-b429-4ca6-a44b-d9323b7490b8"}}"#),
        r#"{"type":"user.message","data":{"content":"line\u2028sep \u00e9 ☃ \ud83d\ude00"},"id":"f51c96b3-620f-4672-acf0-531beda1682b","timestamp":"2026-11-29T14:34:34.842Z","parentId":"2e6bfb39-70a8-4464-838b-fbc966681576"}"#.to_string(),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let lf = tmp.path().join("lf.jsonl");
    std::fs::write(
        &lf,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    assert_eq!(rewrite(&lf), std::fs::read(&lf).unwrap());

    // CRLF journals (edited on Windows) are read; they are written back with LF.
    let crlf = tmp.path().join("crlf.jsonl");
    std::fs::write(
        &crlf,
        lines.iter().map(|l| format!("{l}\r\n")).collect::<String>(),
    )
    .unwrap();
    assert_eq!(rewrite(&crlf), std::fs::read(&lf).unwrap());
}

#[test]
fn raw_line_separators_are_written_escaped() {
    let raw = "{\"type\":\"user.message\",\"data\":{\"content\":\"a\u{2028}b\"},\"id\":\"f51c96b3-620f-4672-acf0-531beda1682b\",\"timestamp\":\"2026-11-29T14:34:34.842Z\",\"parentId\":null}";
    let ev = Event::from_line(raw.as_bytes()).unwrap();
    let line = ev.to_persisted_line();
    assert!(!line.contains('\u{2028}'));
    assert!(line.contains("a\\u2028b"));
}
