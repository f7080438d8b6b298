//! Property test: random appends, simulated crashes (truncation at any byte not yet durable,
//! NUL fill as after a power loss, garbage) and reopens. After every reopen the journal is
//! exactly the longest prefix of whole valid lines, and nothing that was durable is lost.

use std::fs::{self, OpenOptions};
use std::io::Write;

use proptest::prelude::*;
use serde_json::value::RawValue;
use turnstile_journal::{
    Durability, Event, EventType, JournalWriter, StateRoot, Uuid, WriterOptions,
};

#[derive(Debug, Clone)]
enum Op {
    /// Append this many events, with content of this length.
    Append(usize, usize),
    /// fsync what was written so far.
    Sync,
    /// Crash: cut the file at a fraction of the non-durable bytes, then maybe add junk.
    Crash { cut: f64, junk: Junk },
}

#[derive(Debug, Clone)]
enum Junk {
    None,
    Nuls(usize),
    Garbage(Vec<u8>),
}

fn junk() -> impl Strategy<Value = Junk> {
    prop_oneof![
        Just(Junk::None),
        (1usize..5000).prop_map(Junk::Nuls),
        // Garbage without newlines: what a torn write can leave (one unfinished line).
        proptest::collection::vec(
            any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
            1..300
        )
        .prop_map(Junk::Garbage),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1usize..8, 0usize..400).prop_map(|(n, len)| Op::Append(n, len)),
        2 => Just(Op::Sync),
        2 => (0.0f64..1.0, junk()).prop_map(|(cut, junk)| Op::Crash { cut, junk }),
    ]
}

fn event(parent: Option<Uuid>, n: u64, len: usize) -> Event {
    let text: String = (0..len)
        .map(|i| char::from(b'a' + ((n as usize + i) % 26) as u8))
        .collect();
    let data = serde_json::json!({ "content": text, "n": n, "quote": "{\"type\":\"x\"}\u{2028}" });
    let raw = RawValue::from_string(data.to_string()).unwrap();
    Event::with_raw_data(EventType::new("user.message"), raw, parent)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn recovery_keeps_the_longest_valid_prefix(ops in proptest::collection::vec(op(), 1..40)) {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        let id = Uuid::new_v4();
        let opts = WriterOptions { durability: Durability::Off, ..Default::default() };
        let (mut writer, _) = JournalWriter::create(&root, id, opts.clone()).unwrap();
        let paths = writer.paths().clone();
        // The lines we expect in the journal, and how many of them are durable.
        let mut lines: Vec<Vec<u8>> = Vec::new();
        let mut durable_lines = 0usize;
        let mut n = 0u64;
        for op in ops {
            match op {
                Op::Append(count, len) => {
                    for _ in 0..count {
                        let ev = event(writer.last_id(), n, len);
                        n += 1;
                        writer.append(&ev).unwrap();
                        let mut line = Vec::new();
                        ev.write_persisted(&mut line);
                        line.push(b'\n');
                        lines.push(line);
                    }
                }
                Op::Sync => {
                    writer.sync_to(writer.event_count()).unwrap();
                    durable_lines = lines.len();
                }
                Op::Crash { cut, junk } => {
                    drop(writer);
                    let durable_len: usize = lines[..durable_lines].iter().map(Vec::len).sum();
                    let total: usize = lines.iter().map(Vec::len).sum();
                    // A crash can lose anything not yet fsynced, never what was.
                    let cut_at = durable_len + ((total - durable_len) as f64 * cut) as usize;
                    let f = OpenOptions::new().write(true).open(&paths.events).unwrap();
                    f.set_len(cut_at as u64).unwrap();
                    drop(f);
                    let mut f = OpenOptions::new().append(true).open(&paths.events).unwrap();
                    match &junk {
                        Junk::None => {}
                        Junk::Nuls(k) => f.write_all(&vec![0u8; *k]).unwrap(),
                        Junk::Garbage(g) => f.write_all(g).unwrap(),
                    }
                    drop(f);
                    // Expected survivors: the whole lines below the cut.
                    let mut kept = 0usize;
                    let mut acc = 0usize;
                    for l in &lines {
                        if acc + l.len() <= cut_at { acc += l.len(); kept += 1; } else { break; }
                    }
                    lines.truncate(kept);
                    prop_assert!(kept >= durable_lines, "durable lines lost");
                    let (w, rec) = JournalWriter::open(&paths, opts.clone()).unwrap();
                    prop_assert_eq!(rec.events as usize, kept);
                    prop_assert_eq!(fs::read(&paths.events).unwrap(), lines.concat());
                    let torn_expected = cut_at > acc || !matches!(junk, Junk::None);
                    prop_assert_eq!(rec.torn_tail.is_some(), torn_expected);
                    durable_lines = kept.min(durable_lines);
                    writer = w;
                }
            }
        }
        let on_disk = fs::read(&paths.events).unwrap();
        prop_assert_eq!(on_disk, lines.concat());
    }
}
