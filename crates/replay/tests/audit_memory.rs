//! The audit's memory does not grow with the journal: files of millions of tiny or blank lines
//! are audited in a child process (this test binary run again) whose peak resident set size
//! (`VmHWM`) must stay under a fixed bound.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;

use turnstile_replay::audit::{ScanOptions, audit_file_with, count_type_with};

/// The peak a whole audit may reach, test harness included.
const BOUND_KIB: u64 = 64 * 1024;
/// Set in the child: the journal to audit.
const CHILD_ENV: &str = "TURNSTILE_AUDIT_MEMORY_CHILD";

/// Peak resident set size of this process, from `/proc/self/status`.
fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// The child's side: audit (and count) the journal, then print the peak.
#[test]
fn child_audits_and_reports_its_peak() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = Path::new(&path);
    let options = ScanOptions::default();
    let report = audit_file_with(path, &options, &mut |_, _| {}).expect("audit");
    let count =
        count_type_with(path, "assistant.turn_start", &options, &mut |_, _| {}).expect("count");
    println!(
        "AUDITED lines={} violations={} kept={} count={count} vmhwm_kib={}",
        report.lines,
        report.violation_count,
        report.violations.len(),
        vm_hwm_kib()
    );
}

/// Runs the child on `path`; returns (lines, violations, kept violations, peak KiB).
fn audit_in_child(path: &Path) -> (u64, u64, u64, u64) {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([
            "--exact",
            "audit_memory::child_audits_and_reports_its_peak",
            "--nocapture",
        ])
        .env(CHILD_ENV, path)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("AUDITED "))
        .unwrap_or_else(|| panic!("no result from the child: {stdout}"));
    let field = |name: &str| -> u64 {
        line.split(' ')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (
        field("lines"),
        field("violations"),
        field("kept"),
        field("vmhwm_kib"),
    )
}

fn write_lines(path: &Path, line: &[u8], n: u64) {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    for _ in 0..n {
        out.write_all(line).unwrap();
    }
    out.flush().unwrap();
}

#[test]
fn blank_lines_cost_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank.jsonl");
    // 1 MiB chunks of one-byte lines: a million outcomes per chunk if nothing bounds them.
    let n = 3_000_000;
    write_lines(&path, b"\n", n);
    let (lines, violations, kept, peak) = audit_in_child(&path);
    assert_eq!(lines, n);
    assert_eq!(violations, n, "every blank line is a bad line");
    assert_eq!(kept, turnstile_replay::audit::MAX_VIOLATIONS as u64);
    assert!(
        peak < BOUND_KIB,
        "peak {peak} KiB for {n} blank lines (bound {BOUND_KIB} KiB)"
    );
}

#[test]
fn tiny_lines_cost_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.jsonl");
    let n = 2_000_000;
    write_lines(&path, b"{}\n", n);
    let (lines, violations, _, peak) = audit_in_child(&path);
    assert_eq!(lines, n);
    assert_eq!(violations, n, "`{{}}` is not an event");
    assert!(
        peak < BOUND_KIB,
        "peak {peak} KiB for {n} tiny lines (bound {BOUND_KIB} KiB)"
    );
}
