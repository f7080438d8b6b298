//! The fold on one thread and on two, held to the journal reader's records: same state, same
//! torn tail, same CRC, on damaged, odd, cut and huge-lined journals.

use super::*;
use crate::synth::{SynthConfig, session_bytes};
use proptest::prelude::*;
use turnstile_journal::{JournalReader, ReadError};

/// What a fold of a file gives: the state, the torn tail, the CRC.
type Outcome = (crate::SessionState, Option<u64>, u32);

fn fold_with(path: &Path, end: u64, threads: Threads) -> Result<Outcome, ReplayError> {
    fold_how(path, end, threads, ToolRead::Lean)
}

/// [`fold_with`], reading tool results `how`.
fn fold_how(
    path: &Path,
    end: u64,
    threads: Threads,
    how: ToolRead,
) -> Result<Outcome, ReplayError> {
    let mut folder = Folder::new();
    folder.tool_read = how;
    let mut crc = 0u32;
    let file = File::open(path).unwrap();
    let torn = fold_tail_with(path, file, &mut folder, 0, 0, end, Some(&mut crc), threads)?;
    Ok((folder.into_state(), torn, crc))
}

/// The journal reader's records folded one by one, up to the first line starting at or
/// after `end`, and the CRC of those lines.
fn reference(path: &Path, end: u64) -> Outcome {
    let mut folder = Folder::new();
    let reader = JournalReader::new(
        path,
        io::BufReader::new(File::open(path).unwrap()),
        ReadMode::Lenient,
    );
    let mut torn = None;
    for record in reader {
        match record {
            Ok(record) if folder.state().byte_size < end => folder.apply_record(&record),
            Ok(_) => break,
            Err(ReadError::TornTail { offset, .. }) => {
                torn = (offset < end).then_some(offset);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let bytes = std::fs::read(path).unwrap();
    let size = folder.state().byte_size as usize;
    (folder.into_state(), torn, crc32c::crc32c(&bytes[..size]))
}

/// A session of `mb` MiB with every `every`-th tool result breaking its schema (a string
/// for `success`), every `every`-th line in another key order (the full parse), and
/// optionally a huge line longer than a read buffer.
fn journal(seed: u64, mb: u64, every: usize, huge: bool, torn: bool) -> Vec<u8> {
    let config = SynthConfig {
        seed,
        target_bytes: mb << 20,
        huge_output_bytes: huge.then_some(READ_BYTES * 3 / 2),
        ..SynthConfig::default()
    };
    let (bytes, _) = session_bytes(&config);
    let mut out = Vec::with_capacity(bytes.len() + 64);
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let tool = line.starts_with(br#"{"type":"tool.execution_complete""#);
        if i % every == 0 && tool {
            let text = String::from_utf8(line.to_vec()).unwrap();
            out.extend_from_slice(
                text.replacen(r#""success":"#, r#""success":"0","x":"#, 1)
                    .as_bytes(),
            );
        } else if i % every == 1 {
            let value: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(line).unwrap();
            let reversed: serde_json::Map<String, serde_json::Value> =
                value.into_iter().rev().collect();
            out.extend_from_slice(&serde_json::to_vec(&reversed).unwrap());
        } else {
            out.extend_from_slice(line);
        }
        out.push(b'\n');
    }
    if torn {
        out.extend_from_slice(br#"{"type":"user.message","data":{"con"#);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]
    /// Two threads fold exactly what one thread folds, and both what the journal reader's
    /// records fold to: same state (warnings for broken tool results included), same torn
    /// tail, same CRC, wherever the fold is asked to stop.
    #[test]
    fn two_threads_fold_what_one_thread_and_the_reader_fold(
        seed in 0u64..1000,
        every in 3usize..40,
        huge in any::<bool>(),
        torn in any::<bool>(),
        stop in prop::option::of(0.0f64..1.0),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let bytes = journal(seed, 3, every, huge, torn);
        std::fs::write(&path, &bytes).unwrap();
        let end = stop.map_or(u64::MAX, |f| (bytes.len() as f64 * f) as u64);
        let one = fold_with(&path, end, Threads::One).unwrap();
        let two = fold_with(&path, end, Threads::Two).unwrap();
        let want = reference(&path, end);
        // A broken result whose whole line lies before the stop is reported.
        let marker: &[u8] = br#""success":"0","x":"#;
        let broken_before_end = bytes.windows(marker.len()).enumerate().any(|(at, w)| {
            w == marker
                && bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .is_some_and(|nl| ((at + nl) as u64) < end)
        });
        prop_assert!(one.0.malformed_events > 0 || !broken_before_end);
        prop_assert_eq!(&two, &one);
        prop_assert_eq!(&one, &want);
    }
}

/// A session whose tool results are edited, one in `every`, in the ways the fast reading
/// of tool results leaves to serde (surrogate escapes, repeated and mistyped fields, an
/// escaped key, numbers out of range, deep values) and in ways it takes (surrogate pairs,
/// unknown keys).
fn odd_journal(seed: u64, every: usize) -> Vec<u8> {
    let (bytes, _) = session_bytes(&SynthConfig {
        seed,
        target_bytes: 5 << 20,
        ..SynthConfig::default()
    });
    let deep = format!(
        r#""fusion":{}1{},"success":"#,
        "[".repeat(127),
        "]".repeat(127)
    );
    let edits: [(&str, &str); 10] = [
        (
            r#""content":""#,
            r#""detailedContent":"\ud800","content":""#,
        ),
        (r#""success":"#, r#""model":5,"success":"#),
        (
            r#""toolCallId":"#,
            r#""toolTelemetry":{"n":1e400},"toolCallId":"#,
        ),
        (r#""content":""#, r#""content":"\udc00"#),
        (r#""result":"#, r#""resul\u0074":"#),
        (r#""content":""#, r#""content":"\ud83d\ude80 \u00e9\/"#),
        (r#""success":"#, &deep),
        (r#""success":"#, r#""x":"\ud800","y":[1e999],"success":"#),
        (
            r#""content":""#,
            r#""contents":[{"t":"\ud800"}],"content":""#,
        ),
        (
            r#""success":"#,
            r#""shellExecution":{"exitCode":-1},"sandboxed":null,"success":"#,
        ),
    ];
    let mut out = Vec::with_capacity(bytes.len() + (1 << 16));
    let mut n = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let text = std::str::from_utf8(line).unwrap();
        if text.starts_with(r#"{"type":"tool.execution_complete""#) {
            n += 1;
            if n % every == 0 {
                let (from, to) = edits[(n / every) % edits.len()];
                out.extend_from_slice(text.replacen(from, to, 1).as_bytes());
                out.push(b'\n');
                continue;
            }
        }
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    /// The fast and lean reading of tool results folds exactly what the journal's payload
    /// type folds, on one thread and on two: same state (warnings word for word), same
    /// checkpoint (its bytes' CRC), same prefix CRC.
    #[test]
    fn lean_tool_results_fold_what_the_payload_type_folds(
        seed in 0u64..1000,
        every in 1usize..6,
    ) {
        let old = fold_every_way(&odd_journal(seed, every))?;
        prop_assert!(old.0.malformed_events > 0);
    }

    /// Results kept escaped that rewinds drop and truncations move (and bring back) are
    /// unescaped where they end up: the same state and checkpoint as reading each in full.
    #[test]
    fn escaped_results_survive_rewinds_and_truncations(
        seed in 0u64..1000,
        every in 1usize..8,
    ) {
        let old = fold_every_way(&cut_journal(seed, every))?;
        prop_assert!(old.0.rewinds > 0 && old.0.truncations > 0);
    }
}

/// Folds `bytes` on one thread and on two, reading tool results the lean way and through the
/// payload type, and holds every fold to the journal reader's records: same state, same
/// checkpoint (its bytes' CRC), same prefix CRC. The fold they all give.
fn fold_every_way(bytes: &[u8]) -> Result<Outcome, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let checkpoint_crc = |o: &Outcome| crc32c::crc32c(&serde_json::to_vec(&o.0).unwrap());
    let old = fold_how(&path, u64::MAX, Threads::One, ToolRead::Full).unwrap();
    for threads in [Threads::One, Threads::Two] {
        for how in [ToolRead::Lean, ToolRead::Full] {
            let got = fold_how(&path, u64::MAX, threads, how).unwrap();
            prop_assert_eq!(&got, &old, "{:?} {:?}", threads, how);
            prop_assert_eq!(checkpoint_crc(&got), checkpoint_crc(&old));
        }
    }
    prop_assert_eq!(&reference(&path, u64::MAX), &old);
    Ok(old)
}

/// A session with a rewind marker or a truncation after one tool result in `every`,
/// dropping and moving results whose text the reading thread kept escaped.
fn cut_journal(seed: u64, every: usize) -> Vec<u8> {
    let (bytes, _) = session_bytes(&SynthConfig {
        seed,
        target_bytes: 5 << 20,
        ..SynthConfig::default()
    });
    let mut out = Vec::with_capacity(bytes.len() + (1 << 16));
    let mut n = 0usize;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        out.extend_from_slice(line);
        out.push(b'\n');
        if !line.starts_with(br#"{"type":"tool.execution_complete""#) {
            continue;
        }
        n += 1;
        if !n.is_multiple_of(every) {
            continue;
        }
        let mut event: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(line).unwrap();
        let (kind, data) = if (n / every).is_multiple_of(3) {
            (
                "session.truncation",
                serde_json::json!({"messagesRemovedDuringTruncation": n % 7}),
            )
        } else {
            (
                turnstile_journal::REWIND_MARKER,
                serde_json::json!({"upToEventId": "x", "eventsRemoved": n % 9}),
            )
        };
        event.insert("type".into(), kind.into());
        event.insert("data".into(), data);
        out.extend_from_slice(&serde_json::to_vec(&event).unwrap());
        out.push(b'\n');
    }
    out
}

/// With `assistant.message` payloads deserialized on the reading thread too (off by default:
/// see `READ_ASSISTANT_AHEAD`), the fold is the same.
#[test]
fn assistant_messages_read_ahead_fold_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let bytes = journal(11, 3, 7, false, false);
    std::fs::write(&path, &bytes).unwrap();
    let mut folder = Folder::new();
    let mut crc = 0u32;
    let reader = LineReader {
        file: File::open(&path).unwrap(),
        at: 0,
        line: 0,
        max_line: turnstile_journal::max_line_bytes(),
        end: u64::MAX,
        carry: Vec::new(),
        crc: Some(crc),
        finished: false,
        prepare: Some(ToolRead::Lean),
        stack: Vec::new(),
        inner: Vec::new(),
        read_assistant: true,
    };
    let mut cursor = Cursor { line: 0, at: 0 };
    let folded = fold_two_threads(&path, reader, &mut folder, &mut cursor);
    folder.resolve_escaped();
    folder.free_dropped();
    let (torn, after) = folded.unwrap();
    crc = after.unwrap();
    assert_eq!((folder.into_state(), torn, crc), reference(&path, u64::MAX));
}

/// A file of more tiny lines than a run holds: the runs end at the cap, not at a buffer.
#[test]
fn more_lines_than_a_run_holds() {
    let (bytes, _) = session_bytes(&SynthConfig {
        target_bytes: 64 << 10,
        ..SynthConfig::default()
    });
    let shortest = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .min_by_key(|l| l.len())
        .unwrap();
    let mut many = bytes.clone();
    for _ in 0..3 * MAX_LINES {
        many.extend_from_slice(shortest);
        many.push(b'\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, &many).unwrap();
    let one = fold_with(&path, u64::MAX, Threads::One).unwrap();
    let two = fold_with(&path, u64::MAX, Threads::Two).unwrap();
    assert_eq!(two, one);
    assert_eq!(one, reference(&path, u64::MAX));
    assert_eq!(one.0.byte_size, many.len() as u64);
}

/// Huge lines one after another (each longer than the bytes allowed out at once): folded
/// one at a time, same result.
#[test]
fn huge_lines_in_a_row() {
    let (bytes, _) = session_bytes(&SynthConfig {
        target_bytes: 64 << 10,
        ..SynthConfig::default()
    });
    let line = bytes
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8(l.to_vec()).unwrap())
        .find(|l| {
            l.starts_with(r#"{"type":"tool.execution_complete""#) && l.contains(r#""content":""#)
        })
        .unwrap();
    let text = line;
    let huge = text.replacen(
        r#""content":""#,
        &format!(r#""content":"{}"#, "x".repeat(MAX_BYTES_OUT + 1)),
        1,
    );
    assert!(huge.len() > MAX_BYTES_OUT);
    let mut many = bytes.clone();
    for _ in 0..3 {
        many.extend_from_slice(huge.as_bytes());
        many.push(b'\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, &many).unwrap();
    let one = fold_with(&path, u64::MAX, Threads::One).unwrap();
    let two = fold_with(&path, u64::MAX, Threads::Two).unwrap();
    assert_eq!(two, one);
    assert_eq!(one.0.byte_size, many.len() as u64);
}

/// A damaged line far into a large file is named the same way by both (line and offset),
/// and the reading thread stops when the fold does.
#[test]
fn a_bad_line_is_named_alike() {
    let mut bytes = journal(7, 3, 1000, false, false);
    let cut = bytes.len() * 2 / 3;
    let at = cut + memchr::memchr(b'\n', &bytes[cut..]).unwrap() + 1;
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    bytes.splice(at..at, b"{not json\n".iter().copied());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    for threads in [Threads::One, Threads::Two] {
        match fold_with(&path, u64::MAX, threads) {
            Err(ReplayError::Read(ReadError::BadLine {
                line: l, offset, ..
            })) => {
                assert_eq!((l, offset), (line, at as u64), "{threads:?}");
            }
            other => panic!("{threads:?}: {:?}", other.map(|o| o.0.event_count)),
        }
    }
}
