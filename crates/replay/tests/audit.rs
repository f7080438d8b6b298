//! Audit: exact counts on adversarial journals, invariant checks, and the same report whatever
//! the path a line takes (fast, fallback, streaming) and however the file is split over threads.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::synth::{QUOTED_TURN_START, SynthConfig, session_bytes};
use common::{FIXTURES, fixture_bytes, lines};
use proptest::prelude::*;
use turnstile_replay::audit::{
    AuditReport, ScanOptions, ViolationKind, audit_bytes, audit_file_with, count_type_with,
};

fn write_temp(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(bytes).expect("write");
    file.flush().expect("flush");
    file
}

fn audit_path(path: &Path, options: &ScanOptions) -> AuditReport {
    let mut report = audit_file_with(path, options, &mut |_, _| {}).expect("audit");
    report.path = "journal".to_owned();
    report
}

fn reference(bytes: &[u8]) -> AuditReport {
    audit_bytes("journal", bytes)
}

fn options(threads: usize, chunk: u64, max_line: usize) -> ScanOptions {
    ScanOptions {
        threads,
        chunk_bytes: chunk,
        max_line_in_memory: max_line,
        ..ScanOptions::default()
    }
}

/// What text tools count: the traps the audit must not fall into.
fn naive_counts(bytes: &[u8]) -> (usize, usize) {
    let text = String::from_utf8_lossy(bytes);
    let grep_c = text
        .lines()
        .filter(|l| l.contains("assistant.turn_start"))
        .count();
    let grep_cf = text
        .lines()
        .filter(|l| l.contains(r#""type":"assistant.turn_start""#))
        .count();
    (grep_c, grep_cf)
}

#[test]
fn synthetic_sessions_are_counted_exactly() {
    let config = SynthConfig {
        target_bytes: 2 << 20,
        ..SynthConfig::default()
    };
    let (bytes, truth) = session_bytes(&config);
    let file = write_temp(&bytes);
    let report = audit_path(file.path(), &ScanOptions::default());
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(report.turns, truth.turns);
    assert_eq!(report.events, truth.events);
    assert_eq!(report.lines, truth.events);
    assert_eq!(report.user_messages, truth.user_messages);
    assert_eq!(
        report.autopilot_continuations,
        truth.autopilot_continuations
    );
    assert_eq!(report.errors, truth.errors);
    let (ok, failed) = report
        .tool_calls
        .values()
        .fold((0, 0), |(o, f), t| (o + t.ok, f + t.failed));
    assert_eq!((ok, failed), (truth.tool_ok, truth.tool_failed));
    assert_eq!(report.task_complete.is_some(), truth.task_complete);
    assert_eq!(report.by_type["assistant.turn_start"], truth.turns);
    let (grep_c, grep_cf) = naive_counts(&bytes);
    assert!(
        grep_c as u64 > truth.turns && grep_cf as u64 > truth.turns,
        "the traps are planted"
    );
    assert_eq!(
        count_type_with(
            file.path(),
            "assistant.turn_start",
            &ScanOptions::default(),
            &mut |_, _| {}
        )
        .unwrap(),
        truth.turns
    );
}

/// The three traps, one line each, next to real turn starts.
#[test]
fn quoted_turn_starts_do_not_count() {
    let id = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let parent = |n: u32| {
        if n == 1 {
            "null".to_owned()
        } else {
            format!("\"{}\"", id(n - 1))
        }
    };
    let line = |n: u32, ty: &str, data: String| {
        format!(
            r#"{{"type":"{ty}","data":{data},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":{}}}"#,
            id(n),
            parent(n)
        )
    };
    let quoted = serde_json::to_string(&format!(
        "see {QUOTED_TURN_START} and \"type\":\"assistant.turn_start\""
    ))
    .unwrap();
    let output = serde_json::to_string(&format!(
        "{}\n{}\n",
        line(90, "assistant.turn_start", r#"{"turnId":"0"}"#.into()),
        QUOTED_TURN_START
    ))
    .unwrap();
    let journal = [
        line(1, "session.start", r#"{"sessionId":"s","version":1,"producer":"t","copilotVersion":"0","startTime":"2026-11-29T14:34:34.757Z"}"#.into()),
        line(2, "user.message", format!(r#"{{"content":{quoted}}}"#)),
        line(3, "assistant.turn_start", r#"{"turnId":"0"}"#.into()),
        line(4, "assistant.message", r#"{"messageId":"m","content":"","toolRequests":[{"toolCallId":"c1","name":"emit","arguments":{"type":"assistant.turn_start","data":{"turnId":"7"}}}]}"#.into()),
        line(5, "tool.execution_start", r#"{"toolCallId":"c1","toolName":"emit","arguments":{"type":"assistant.turn_start"}}"#.into()),
        line(6, "tool.execution_complete", format!(r#"{{"toolCallId":"c1","success":true,"result":{{"content":{output}}}}}"#)),
        line(7, "assistant.turn_end", r#"{"turnId":"0"}"#.into()),
    ]
    .join("\n")
        + "\n";
    let report = reference(journal.as_bytes());
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(report.turns, 1);
    let (grep_c, grep_cf) = naive_counts(journal.as_bytes());
    assert_eq!(
        (grep_c, grep_cf),
        (5, 3),
        "grep -c and grep -cF both miscount this journal"
    );
    let file = write_temp(journal.as_bytes());
    for threads in [1, 2] {
        assert_eq!(
            count_type_with(
                file.path(),
                "assistant.turn_start",
                &options(threads, 64, 1 << 20),
                &mut |_, _| {}
            )
            .unwrap(),
            1
        );
        assert_eq!(
            audit_path(file.path(), &options(threads, 64, 1 << 20)),
            report
        );
    }
}

/// Lines of several MB: in memory, and streamed from the file when longer than the limit.
#[test]
fn huge_lines_in_memory_and_streamed() {
    let config = SynthConfig {
        target_bytes: 12 << 20,
        huge_output_bytes: Some(3 << 20),
        seed: 7,
        ..SynthConfig::default()
    };
    let (bytes, truth) = session_bytes(&config);
    assert!(
        lines(&bytes).iter().any(|l| l.len() > 3 << 20),
        "a multi-MB line was generated"
    );
    let file = write_temp(&bytes);
    let expected = reference(&bytes);
    assert_eq!(expected.turns, truth.turns);
    assert!(expected.is_clean());
    for opts in [
        ScanOptions::default(),
        options(2, 256 << 10, 64 << 10),
        options(1, 1 << 20, 1 << 10),
    ] {
        assert_eq!(audit_path(file.path(), &opts), expected, "{opts:?}");
        for ty in [
            "assistant.turn_start",
            "tool.execution_complete",
            "user.message",
        ] {
            let n = count_type_with(file.path(), ty, &opts, &mut |_, _| {}).unwrap();
            assert_eq!(n, expected.by_type[ty], "{ty} {opts:?}");
        }
    }
}

/// A member the audit reads (`toolRequests`) of several MB in a line streamed from the file:
/// not held whole past the in-memory limit, but reported as a bad line naming the limit, and
/// the lines around it counted as before.
#[test]
fn a_wanted_member_over_the_limit_is_a_bad_line_not_held_in_memory() {
    let start = r#"{"type":"session.start","data":{"sessionId":"5e2a3c1e-0000-4000-8000-000000000001","version":1,"producer":"copilot-agent","copilotVersion":"0.0.0","startTime":"2026-11-29T14:34:34.757Z"},"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}"#;
    let args = "x".repeat(4 << 20);
    let huge = format!(
        r#"{{"type":"assistant.message","data":{{"messageId":"m","content":"","toolRequests":[{{"toolCallId":"c1","name":"bash","arguments":{{"command":"{args}"}}}}]}},"id":"00000000-0000-4000-8000-000000000002","timestamp":"2026-11-29T14:34:35.000Z","parentId":"00000000-0000-4000-8000-000000000001"}}"#
    );
    let after = r#"{"type":"session.info","data":{"infoType":"x","message":"after"},"id":"00000000-0000-4000-8000-000000000003","timestamp":"2026-11-29T14:34:35.757Z","parentId":"00000000-0000-4000-8000-000000000002"}"#;
    let bytes = format!("{start}\n{huge}\n{after}\n");
    let file = write_temp(bytes.as_bytes());
    let report = audit_path(file.path(), &options(1, 1 << 20, 64 << 10));
    let bad: Vec<_> = report
        .violations
        .iter()
        .filter(|v| v.kind == ViolationKind::BadLine)
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", report.violations);
    assert_eq!(bad[0].line, 2);
    assert!(bad[0].message.contains("65536 bytes"), "{}", bad[0].message);
    assert_eq!(report.lines, 3);
    assert_eq!(report.by_type.get("session.info"), Some(&1));
    // With room for it, the same line is read whole and the journal is clean.
    let whole = audit_path(file.path(), &options(1, 1 << 20, 8 << 20));
    assert!(
        !whole
            .violations
            .iter()
            .any(|v| v.kind == ViolationKind::BadLine),
        "{:?}",
        whole.violations
    );
}

/// Rewrites a line in another layout: keys reordered and spaced, still the same event.
fn relayout(line: &[u8]) -> Vec<u8> {
    let value: serde_json::Value = serde_json::from_slice(line).expect("json");
    let obj = value.as_object().expect("object");
    let mut out = String::from("{ ");
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.reverse();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push_str(" , ");
        }
        out.push_str(&format!(
            "{} : {}",
            serde_json::to_string(k).unwrap(),
            serde_json::to_string(&obj[*k]).unwrap()
        ));
    }
    out.push_str(" }");
    out.into_bytes()
}

#[test]
fn other_layouts_count_the_same() {
    for name in FIXTURES {
        let bytes = fixture_bytes(name);
        let expected = reference(&bytes);
        let mut other = Vec::new();
        for (i, l) in lines(&bytes).into_iter().enumerate() {
            other.extend_from_slice(&if i % 2 == 0 { relayout(l) } else { l.to_vec() });
            other.push(b'\n');
        }
        let mut report = reference(&other);
        report.bytes = expected.bytes;
        assert_eq!(report, expected, "{name}");
    }
}

#[test]
fn unknown_types_are_counted_not_refused() {
    let bytes = fixture_bytes("c1-new-session");
    let text = String::from_utf8(bytes)
        .unwrap()
        .replace("\"session.shutdown\"", "\"session.from_the_future\"");
    let report = reference(text.as_bytes());
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(report.by_type["session.from_the_future"], 1);
    assert!(!report.by_type.contains_key("session.shutdown"));
}

fn kinds(report: &AuditReport) -> Vec<(u64, ViolationKind)> {
    report.violations.iter().map(|v| (v.line, v.kind)).collect()
}

#[test]
fn invariant_violations_name_their_lines() {
    let good = fixture_bytes("c1-new-session");
    let all: Vec<String> = lines(&good)
        .iter()
        .map(|l| String::from_utf8(l.to_vec()).unwrap())
        .collect();
    let journal = |ls: &[String]| ls.join("\n") + "\n";

    // A turn start dropped: line 10's turn_end has no open turn... and line 4's turn is open
    // when line 11 starts the next one.
    let mut v = all.clone();
    v[9] = v[9].replace("assistant.turn_end", "assistant.turn_retry_marker");
    let report = reference(journal(&v).as_bytes());
    assert_eq!(kinds(&report), [(11, ViolationKind::TurnPairing)]);

    // Duplicate turn id within one interaction.
    let mut v = all.clone();
    v[10] = v[10].replace(r#""turnId":"1""#, r#""turnId":"0""#);
    v[16] = v[16].replace(r#""turnId":"1""#, r#""turnId":"0""#);
    let report = reference(journal(&v).as_bytes());
    assert_eq!(kinds(&report), [(11, ViolationKind::DuplicateTurnId)]);

    // Broken parent chain, and a null parent in the middle.
    let mut v = all.clone();
    let bogus = "\"parentId\":\"11111111-1111-4111-8111-111111111111\"}";
    v[5] = format!("{}{bogus}", &v[5][..v[5].rfind("\"parentId\"").unwrap()]);
    v[7] = format!(
        "{}\"parentId\":null}}",
        &v[7][..v[7].rfind("\"parentId\"").unwrap()]
    );
    let report = reference(journal(&v).as_bytes());
    assert_eq!(
        kinds(&report),
        [
            (6, ViolationKind::ParentChain),
            (8, ViolationKind::ParentChain)
        ]
    );

    // Tool pairing: a result for a call nobody made, and a call left without result.
    let mut v = all.clone();
    v[8] = v[8].replace("call_5a1ca89365644d54", "call_nobody");
    let report = reference(journal(&v).as_bytes());
    assert_eq!(
        kinds(&report),
        [
            (9, ViolationKind::ToolPairing),
            (10, ViolationKind::ToolPairing)
        ]
    );

    // An ephemeral type on disk, a bad line and a torn tail.
    let mut v = all.clone();
    v[18] = v[18].replace(
        "\"type\":\"assistant.message\"",
        "\"type\":\"assistant.message_delta\"",
    );
    v.insert(3, "{\"type\":\"oops\"".to_owned());
    let mut text = journal(&v);
    text.push_str("{\"type\":\"session.idle\"");
    let report = reference(text.as_bytes());
    let got = kinds(&report);
    assert!(got.contains(&(4, ViolationKind::BadLine)), "{got:?}");
    assert!(
        got.contains(&(20, ViolationKind::EphemeralOnDisk)),
        "{got:?}"
    );
    assert_eq!(got.last(), Some(&(23, ViolationKind::TornTail)), "{got:?}");
    assert_eq!(report.lines, 23);
}

/// Journal lines in the runtime's layout from `(type, data)` pairs, chained by `parentId`.
fn chained(events: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for (i, (ty, data)) in events.iter().enumerate() {
        let id = format!("00000000-0000-4000-8000-{:012x}", i + 1);
        let parent_json = parent
            .as_ref()
            .map_or("null".to_owned(), |p| format!("{p:?}"));
        out.push_str(&format!(
            r#"{{"type":"{ty}","data":{data},"id":"{id}","timestamp":"2026-11-29T14:34:34.843Z","parentId":{parent_json}}}"#
        ));
        out.push('\n');
        parent = Some(id);
    }
    out
}

const C1: &str = r#"{"toolCallId":"c1","toolName":"bash"}"#;
const C1_DONE: &str = r#"{"toolCallId":"c1","success":true}"#;
const C2: &str = r#"{"toolCallId":"c2","toolName":"view"}"#;
const C2_DONE: &str = r#"{"toolCallId":"c2","success":true}"#;

#[test]
fn duplicate_tool_call_ids_in_one_turn_are_reported_with_their_lines() {
    let requests = r#"{"messageId":"m","content":"","toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{}},{"toolCallId":"c2","name":"view","arguments":{}},{"toolCallId":"c1","name":"bash","arguments":{}}]}"#;
    let text = chained(&[
        ("user.message", r#"{"content":"go","interactionId":"i"}"#),
        (
            "assistant.turn_start",
            r#"{"turnId":"0","interactionId":"i"}"#,
        ),
        ("assistant.message", requests),
        ("tool.execution_start", C1),
        ("tool.execution_complete", C1_DONE),
        ("tool.execution_start", C2),
        ("tool.execution_complete", C2_DONE),
        ("tool.execution_start", C1),
        ("tool.execution_complete", C1_DONE),
        ("assistant.turn_end", r#"{"turnId":"0"}"#),
    ]);
    let report = reference(text.as_bytes());
    assert_eq!(
        kinds(&report),
        [
            (3, ViolationKind::DuplicateToolCallId),
            (8, ViolationKind::DuplicateToolCallId)
        ],
        "{:#?}",
        report.violations
    );
    assert!(report.violations[0].message.contains("\"c1\""));
    assert!(report.violations[0].message.contains("line 3"));
    assert!(report.violations[1].message.contains("line 3"));
    let file = write_temp(text.as_bytes());
    let mut streamed = audit_path(file.path(), &options(2, 64, 8 << 20));
    streamed.bytes = report.bytes;
    assert_eq!(streamed, report, "the same on every path and split");
}

#[test]
fn a_tool_call_id_started_again_in_its_turn_is_a_duplicate_but_not_in_the_next_turn() {
    let text = chained(&[
        ("user.message", r#"{"content":"go","interactionId":"i"}"#),
        (
            "assistant.turn_start",
            r#"{"turnId":"0","interactionId":"i"}"#,
        ),
        ("tool.execution_start", C1),
        ("tool.execution_complete", C1_DONE),
        ("tool.execution_start", C2),
        ("tool.execution_complete", C2_DONE),
        ("tool.execution_start", C1),
        ("tool.execution_complete", C1_DONE),
        ("assistant.turn_end", r#"{"turnId":"0"}"#),
        (
            "assistant.turn_start",
            r#"{"turnId":"1","interactionId":"i"}"#,
        ),
        ("tool.execution_start", C1),
        ("tool.execution_complete", C1_DONE),
        ("assistant.turn_end", r#"{"turnId":"1"}"#),
    ]);
    let report = reference(text.as_bytes());
    assert_eq!(
        kinds(&report),
        [(7, ViolationKind::DuplicateToolCallId)],
        "{:#?}",
        report.violations
    );
    assert!(report.violations[0].message.contains("line 3"));
    assert_eq!(
        report.violations_by_kind[&ViolationKind::DuplicateToolCallId],
        1
    );
}

#[test]
fn stored_violations_are_capped_and_counted() {
    let mut text = String::new();
    for _ in 0..2500 {
        text.push_str("not json\n");
    }
    let report = reference(text.as_bytes());
    assert_eq!(report.violation_count, 2500);
    assert_eq!(
        report.violations.len(),
        turnstile_replay::audit::MAX_VIOLATIONS
    );
    assert_eq!(report.violations_by_kind[&ViolationKind::BadLine], 2500);
}

/// A journal with damage: bad lines, relaid-out lines, unknown types, maybe a torn tail.
fn damaged_journal(seed: u64, damage: &[(usize, u8)], torn: bool) -> Vec<u8> {
    let config = SynthConfig {
        seed,
        target_bytes: 48 * 1024,
        max_output_bytes: 4096,
        ..SynthConfig::default()
    };
    let (bytes, _) = session_bytes(&config);
    let mut out = Vec::new();
    let ls = lines(&bytes);
    for (i, l) in ls.iter().enumerate() {
        match damage
            .iter()
            .find(|(at, _)| at % ls.len() == i)
            .map(|d| d.1)
        {
            Some(0) => out.extend_from_slice(&l[..l.len() / 2]),
            Some(1) => out.extend_from_slice(&relayout(l)),
            Some(2) => out.extend_from_slice(
                &String::from_utf8_lossy(l)
                    .replacen("\"type\":\"", "\"type\":\"x.", 1)
                    .into_bytes(),
            ),
            Some(_) => {
                out.extend_from_slice(l);
                out.extend_from_slice(b"\n");
                out.extend_from_slice(l);
            }
            None => out.extend_from_slice(l),
        }
        out.push(b'\n');
    }
    if torn {
        out.extend_from_slice(&ls[ls.len() / 2][..20]);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Any split of the file into chunks, on any number of threads, with lines streamed or in
    /// memory and any number of results in flight, gives the report of the single-threaded
    /// in-memory scan.
    #[test]
    fn any_split_gives_the_same_report(
        seed in 0u64..1000,
        damage in prop::collection::vec((0usize..10_000, 0u8..4), 0..6),
        torn in any::<bool>(),
        chunk in prop_oneof![1u64..64, 64u64..4096, 4096u64..200_000],
        threads in 1usize..5,
        max_line in prop_oneof![Just(8usize << 20), 256usize..8192],
        piece in prop_oneof![Just(8192usize), 1usize..16],
        in_flight in 0usize..6,
    ) {
        let bytes = damaged_journal(seed, &damage, torn);
        let file = write_temp(&bytes);
        let expected = reference(&bytes);
        let opts = ScanOptions {
            lines_per_piece: piece,
            results_in_flight: in_flight,
            ..options(threads, chunk, max_line)
        };
        let mut got = audit_path(file.path(), &opts);
        if max_line < 8 << 20 {
            // Streamed lines get serde's messages from another reader; compare kinds and lines.
            for (g, e) in got.violations.iter_mut().zip(&expected.violations) {
                g.message.clone_from(&e.message);
            }
        }
        prop_assert_eq!(&got, &expected);
        for ty in ["assistant.turn_start", "tool.execution_complete", "x.user.message"] {
            let n = count_type_with(file.path(), ty, &opts, &mut |_, _| {}).unwrap();
            prop_assert_eq!(n, expected.by_type.get(ty).copied().unwrap_or(0), "{}", ty);
        }
    }
}
