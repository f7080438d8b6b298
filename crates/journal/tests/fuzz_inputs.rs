//! Arbitrary bytes never panic the journal's parsers: `Event::from_line`, the reader, the
//! damage scan and a writer opening the file. `make test` runs a short smoke; `make fuzz` runs
//! many more cases (`PROPTEST_CASES`).

use proptest::prelude::*;
use turnstile_journal::{
    Event, JournalReader, JournalScan, JournalWriter, ReadMode, StateRoot, Uuid, WriterOptions,
};

const VALID: &str = r#"{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"439426cc-d140-40b1-a7f4-a48af710017c","timestamp":"2026-11-29T14:34:35.148Z","parentId":null}"#;

/// Bytes that look like journal lines often enough to reach deep into the parsers: valid lines
/// with random edits, and raw noise.
fn journal_bytes() -> impl Strategy<Value = Vec<u8>> {
    let edited = (
        proptest::collection::vec((0usize..VALID.len(), any::<u8>()), 0..6),
        1usize..4,
    )
        .prop_map(|(edits, copies)| {
            let mut out = Vec::new();
            for _ in 0..copies {
                let mut line = VALID.as_bytes().to_vec();
                for (at, byte) in &edits {
                    let n = line.len();
                    line[*at % n] = *byte;
                }
                out.extend_from_slice(&line);
                out.push(b'\n');
            }
            out
        });
    prop_oneof![edited, proptest::collection::vec(any::<u8>(), 0..512)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(bytes in journal_bytes()) {
        for line in bytes.split(|b| *b == b'\n') {
            let _ = Event::from_line(line);
        }
        for mode in [ReadMode::Lenient, ReadMode::Strict] {
            for r in JournalReader::new("fuzz.jsonl", &bytes[..], mode).flatten() {
                // What parses must serialize and parse back to the same event.
                let mut out = Vec::new();
                r.event.write_as_read(&mut out);
                let back = Event::from_line(&out).expect("re-parse");
                prop_assert_eq!(back, r.event);
            }
        }
        let scan = JournalScan::of_reader(&bytes[..], 0, 0).expect("in-memory scan");
        let _ = scan.verdict();
    }

    #[test]
    fn opening_any_file_never_panics_and_never_loses_valid_lines(bytes in journal_bytes()) {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        let paths = root.create_session(Uuid::new_v4()).unwrap();
        std::fs::write(&paths.events, &bytes).unwrap();
        let before = JournalScan::of_file(&paths.events).unwrap();
        match JournalWriter::open(&paths, WriterOptions::default()) {
            Ok((_, recovery)) => prop_assert_eq!(recovery.events, before.good_lines),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
