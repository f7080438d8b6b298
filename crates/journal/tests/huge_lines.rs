//! Journals with a line far longer than readers may hold, and a sparse journal, read by the
//! scan (fsck, open), the reader (events, report) and the salvage (repair) in a child process
//! whose limit is set the way a user sets it (`TURNSTILE_MAX_LINE_BYTES`): each oversized
//! line is named with its number and size, the lines around it are read, and the child's
//! peak memory stays far below the line's size.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;

use turnstile_journal::scan::Verdict;
use turnstile_journal::{JournalReader, JournalScan, ReadError, ReadMode, repair};

const CHILD: &str = "TURNSTILE_HUGE_LINES_CHILD";

/// A size from the environment (`make stress` raises them), else `default`.
fn size(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The limit the child runs with.
fn limit() -> usize {
    size("TURNSTILE_STRESS_LIMIT", 64 << 10) as usize
}
/// The long line: far over the limit, and over the child's whole allowance below.
fn line_bytes() -> usize {
    size("TURNSTILE_STRESS_LINE_BYTES", 64 << 20) as usize
}
/// The sparse journal's size (a hole: costs no disk).
fn sparse_len() -> u64 {
    size("TURNSTILE_STRESS_SPARSE_BYTES", 256 << 20)
}
/// Most the child's peak RSS may reach: the limit and 40 MiB, well under one copy of the line.
fn peak_allowed_kib() -> u64 {
    (limit() as u64 >> 10) + (40 << 10)
}

fn line(n: u128, parent: Option<u128>, data: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| {
        format!("\"{}\"", uuid::Uuid::from_u128(p))
    });
    format!(
        r#"{{"type":"session.info","data":{data},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":{parent}}}"#,
        uuid::Uuid::from_u128(n)
    )
}

/// Line 1 valid, line 2 a `line_bytes()`-byte event, line 3 valid.
fn write_long(path: &Path) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    writeln!(out, "{}", line(1, None, "{}")).unwrap();
    let head = line(2, Some(1), "{\"message\":\"@\"}");
    let (before, after) = head.split_once('@').unwrap();
    out.write_all(before.as_bytes()).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut left = line_bytes();
    while left > 0 {
        let n = left.min(chunk.len());
        out.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    writeln!(out, "{after}").unwrap();
    writeln!(out, "{}", line(3, Some(1), "{}")).unwrap();
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

/// The reading, run only as the child of the test below, with `TURNSTILE_MAX_LINE_BYTES` set.
#[test]
fn huge_lines_child() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let dir = Path::new(&dir);
    assert_eq!(
        turnstile_journal::max_line_bytes(),
        limit(),
        "the setting was read"
    );
    let started = std::time::Instant::now();
    let long = dir.join("long").join("events.jsonl");
    let long_len = fs::metadata(&long).unwrap().len();

    // The scan (fsck, opening for append): the long line is damage, named with its size.
    let scan = JournalScan::of_file(&long).unwrap();
    assert_eq!((scan.good_lines, scan.bad_total), (2, 1));
    assert_eq!(scan.file_len, long_len);
    let bad = &scan.bad[0];
    assert_eq!(bad.line, 2);
    assert!(bad.len > line_bytes() as u64);
    assert!(
        bad.message.contains(&format!("{} bytes", bad.len)),
        "{}",
        bad.message
    );
    assert!(matches!(scan.verdict(), Verdict::Damaged { .. }));

    // The reader (events, report): lines 1 and 3 read, line 2 named, not held.
    let results: Vec<_> = JournalReader::open(&long, ReadMode::Lenient)
        .unwrap()
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok() && results[2].is_ok());
    assert!(matches!(
        results[1],
        Err(ReadError::Oversized { line: 2, len, max, .. }) if len == bad.len && max == limit()
    ));

    // The salvage (repair --salvage): the long line goes whole to the side file, streamed.
    let outcome = repair(&long, true).unwrap();
    assert_eq!(outcome.lines_moved, 1);
    assert_eq!(outcome.bytes_cut, bad.len);
    let side = outcome.side_file.unwrap();
    assert_eq!(fs::metadata(&side).unwrap().len(), bad.len);
    let kept = JournalScan::of_file(&long).unwrap();
    assert_eq!((kept.good_lines, kept.bad_total), (2, 0));
    assert_eq!(kept.verdict(), Verdict::Clean);

    // A sparse journal: one line, then a hole of zeros with no newline: a torn tail.
    let sparse = dir.join("sparse").join("events.jsonl");
    let scan = JournalScan::of_file(&sparse).unwrap();
    assert_eq!(scan.good_lines, 1);
    let tail = scan.tail.as_ref().expect("the hole is a tail");
    assert!(tail.all_nul && tail.line == 2 && tail.offset + tail.len == sparse_len());
    assert!(matches!(scan.verdict(), Verdict::TornTail { line: 2, .. }));
    let results: Vec<_> = JournalReader::open(&sparse, ReadMode::Lenient)
        .unwrap()
        .collect();
    assert!(results[0].is_ok());
    assert!(matches!(
        results[1],
        Err(ReadError::TornTail { line: 2, .. })
    ));
    let cut = repair(&sparse, false).unwrap();
    assert_eq!(cut.bytes_cut, tail.len);

    println!(
        "PEAK_KIB {} WALL_MS {}",
        peak_rss_kib(),
        started.elapsed().as_millis()
    );
}

#[test]
fn a_line_over_the_limit_and_a_sparse_file_are_read_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("long")).unwrap();
    fs::create_dir_all(tmp.path().join("sparse")).unwrap();
    write_long(&tmp.path().join("long").join("events.jsonl"));
    let sparse = tmp.path().join("sparse").join("events.jsonl");
    fs::write(&sparse, format!("{}\n", line(1, None, "{}"))).unwrap();
    File::options()
        .write(true)
        .open(&sparse)
        .unwrap()
        .set_len(sparse_len())
        .unwrap();

    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "huge_lines::huge_lines_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, tmp.path())
        .env("TURNSTILE_MAX_LINE_BYTES", limit().to_string())
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
        peak < peak_allowed_kib(),
        "peak RSS {peak} KiB reading a {} MiB line with a {} KiB limit",
        line_bytes() >> 20,
        limit() >> 10
    );
    println!(
        "FIGURES journal line={} sparse={} limit={} child: {}",
        line_bytes(),
        sparse_len(),
        limit(),
        stdout
            .lines()
            .find(|l| l.contains("PEAK_KIB"))
            .unwrap_or_default()
    );
}
