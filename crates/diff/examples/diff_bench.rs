//! `make bench-diff`: the first divergence of two generated 10,000-turn sessions (the second's
//! tool result at turn 9,000 changed; other ids, times and directories), found by
//! `turnstile diff`, next to `diff <(jq -c …) <(jq -c …)` of the same files (the text tools'
//! way: ids and times deleted, a line diff; it neither normalises paths nor knows turns).
//!
//! Each measure runs as a child process, its wall time and peak RSS taken from `wait4`: the
//! library's `diff_files` in this binary run again as a child (what `turnstile diff` runs), the
//! `turnstile` binary itself when `--binary PATH` is given, and `bash -c 'diff <(jq) <(jq)'`
//! (the peak of the largest of bash, jq and diff). Median of `REPS` runs (default 5).
//!
//! ```text
//! cargo run --profile profiling -p turnstile-diff --example diff_bench -- [--binary target/profiling/turnstile]
//! ```

#[path = "../tests/common/session.rs"]
mod session;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use session::{Change, Session};

const TURNS: u64 = 10_000;
const CHANGED_AT: u64 = 9_000;
const JQ: &str = "jq -c 'del(.id, .timestamp, .parentId)'";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(Path::new(&args[2]), Path::new(&args[3]));
        return;
    }
    let binary = args
        .iter()
        .position(|a| a == "--binary")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().expect("a scratch directory");
    let a = write(dir.path(), "a", &Session::new(1, TURNS));
    let b = write(
        dir.path(),
        "b",
        &Session::new(2, TURNS).with(Change::ToolResult(CHANGED_AT)),
    );
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!(
        "machine: {} cores, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "two sessions of {TURNS} LLM calls ({} and {} bytes), the second's tool result at call {CHANGED_AT} changed; median of {reps}",
        size(&a),
        size(&b)
    );
    println!("| command | wall s | peak RSS MiB | exit |\n|---|---:|---:|---:|");
    let me = std::env::current_exe().expect("this example's path");
    let mut rows: Vec<(String, Command)> = Vec::new();
    let mut lib = Command::new(&me);
    lib.arg("--child").arg(&a).arg(&b);
    rows.push((
        "`turnstile_diff::diff_files` (the library `turnstile diff` runs)".into(),
        lib,
    ));
    if let Some(binary) = &binary {
        let mut cli = Command::new(binary);
        cli.arg("diff").arg(&a).arg(&b);
        rows.push(("`turnstile diff A B`".into(), cli));
    }
    let mut text = Command::new("bash");
    text.arg("-c").arg(format!(
        "diff <({JQ} {a}) <({JQ} {b})",
        a = a.display(),
        b = b.display()
    ));
    rows.push((format!("`diff <({JQ} A) <({JQ} B)`"), text));
    for (name, mut command) in rows {
        let mut runs: Vec<(f64, u64, i32)> = (0..reps).map(|_| measure(&mut command)).collect();
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (wall, _, code) = runs[runs.len() / 2];
        let rss = runs.iter().map(|r| r.1).max().unwrap_or(0);
        println!(
            "| {name} | {wall:.2} | {:.1} | {code} |",
            rss as f64 / 1024.0
        );
    }
}

/// The child: the library's comparison, its first divergence printed as `turnstile diff` does.
fn child(a: &Path, b: &Path) {
    match turnstile_diff::diff_files(a, b, &turnstile_diff::Options::default()) {
        Ok(report) => {
            print!("{report}");
            std::process::exit(if report.same { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}

/// Runs `command` with its output discarded: wall seconds, peak RSS in KiB, exit code.
// `wait4` reaps the child (std's `wait` cannot give its resource usage).
#[allow(clippy::zombie_processes)]
fn measure(command: &mut Command) -> (f64, u64, i32) {
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let start = Instant::now();
    let child = command.spawn().expect("the command starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not waited for yet (`child` is never waited on); `status`
    // and `usage` are valid for writes.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (wall, usage.ru_maxrss as u64, code)
}

fn write(dir: &Path, name: &str, session: &Session) -> PathBuf {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).expect("a session directory");
    let path = dir.join("events.jsonl");
    let file = std::fs::File::create(&path).expect("a journal");
    session.write(file).expect("the journal is written");
    path
}
