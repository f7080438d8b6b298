//! The fold (what `resume`, `history`, `checkpoint` and `replay` load a session with) on a
//! line longer than the readers' limit, in a child process (this test binary run again) whose
//! limit is set as a user sets it (`TURNSTILE_MAX_LINE_BYTES`): a complete long line stops the
//! fold with an error naming the line's number and size, the journal is left as it was, and a
//! long unfinished last line is a torn tail left out like a short one, every line before it
//! folded. On one thread and on two (the long line is far over the size that splits the
//! work), with the child's peak memory far below the line's size.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::Command;

use turnstile_journal::Uuid;
use turnstile_replay::{ReplayError, SessionState};

const CHILD: &str = "TURNSTILE_FOLD_OVERSIZED_CHILD";
/// The child's limit.
const LIMIT: usize = 64 << 10;
/// The long line's body: far over the limit and over the child's whole allowance.
const LONG: usize = 96 << 20;
/// Most the child's peak RSS may reach: well under one copy of the line.
const PEAK_ALLOWED_KIB: u64 = 48 << 10;

fn event_line(n: u128, parent: Option<u128>, data: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", Uuid::from_u128(p)));
    format!(
        r#"{{"type":"session.info","data":{data},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":{parent}}}"#,
        Uuid::from_u128(n)
    )
}

/// Lines 1 and 2 valid, line 3 a `LONG`-byte event (ended with `\n` when `ended`), then, when
/// ended, line 4 valid.
fn write_journal(dir: &Path, ended: bool) {
    fs::create_dir_all(dir).unwrap();
    let mut out = BufWriter::new(File::create(dir.join("events.jsonl")).unwrap());
    writeln!(out, "{}", event_line(1, None, "{}")).unwrap();
    writeln!(out, "{}", event_line(2, Some(1), "{\"message\":\"two\"}")).unwrap();
    let head = event_line(3, Some(2), "{\"message\":\"@\"}");
    let (before, after) = head.split_once('@').unwrap();
    out.write_all(before.as_bytes()).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..LONG >> 20 {
        out.write_all(&chunk).unwrap();
    }
    if ended {
        writeln!(out, "{after}").unwrap();
        writeln!(out, "{}", event_line(4, Some(2), "{}")).unwrap();
    }
    out.flush().unwrap();
}

fn peak_rss_kib() -> u64 {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The child: loads both sessions with the limit set, checks what it found, prints its peak.
#[test]
fn fold_oversized_child() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let dir = Path::new(&dir);
    assert_eq!(
        turnstile_journal::max_line_bytes(),
        LIMIT,
        "the setting was read"
    );

    let ended = dir.join("ended");
    let journal = ended.join("events.jsonl");
    let before = fs::metadata(&journal).unwrap();
    // The first two lines only: the third is not read here either.
    let prefix = BufReader::new(File::open(&journal).unwrap())
        .lines()
        .take(2)
        .map(|l| format!("{}\n", l.unwrap()))
        .collect::<String>();
    let err = SessionState::load(&ended).expect_err("a line over the limit stops the fold");
    let ReplayError::Oversized {
        line,
        offset,
        len,
        max,
        ..
    } = &err
    else {
        panic!("not the oversized stop: {err}");
    };
    assert_eq!((*line, *offset, *max), (3, prefix.len() as u64, LIMIT));
    let long_len =
        before.len() - prefix.len() as u64 - event_line(4, Some(2), "{}").len() as u64 - 1;
    assert_eq!(
        *len, long_len,
        "its size as it lies in the file, newline included"
    );
    let message = err.to_string();
    assert!(
        message.contains("events.jsonl:3 (byte")
            && message.contains(&format!("a line of {long_len} bytes")),
        "{message}"
    );
    let after = fs::metadata(&journal).unwrap();
    assert_eq!(after.len(), before.len(), "nothing cut");
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());

    // An unfinished long last line: a torn tail, left out; the two lines before it folded.
    let torn = dir.join("torn");
    let (state, report) = SessionState::load(&torn).expect("a torn tail is left out");
    assert_eq!(state.event_count, 2);
    assert_eq!(state.last_event_id, Some(Uuid::from_u128(2)));
    assert_eq!(report.torn_tail_at, Some(prefix.len() as u64));
    println!("PEAK_KIB {}", peak_rss_kib());
}

#[test]
fn a_line_over_the_limit_stops_the_fold_naming_its_number_and_size() {
    let tmp = tempfile::tempdir().unwrap();
    write_journal(&tmp.path().join("ended"), true);
    write_journal(&tmp.path().join("torn"), false);
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fold_oversized::fold_oversized_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, tmp.path())
        .env("TURNSTILE_MAX_LINE_BYTES", LIMIT.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let peak: u64 = stdout
        .split("PEAK_KIB ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the child did not report its peak: {stdout}"));
    assert!(
        peak < PEAK_ALLOWED_KIB,
        "peak RSS {peak} KiB folding a {} MiB line with a {} KiB limit",
        LONG >> 20,
        LIMIT >> 10
    );
}
