//! The floor under any tool that checks a journal on this machine: how long reading the file
//! takes when nothing is done with the bytes, and how long JSON validation of every line takes
//! when the bytes are already in memory, each on the same threads the audit uses.
//!
//! ```text
//! read_floor PATH [--threads N] [--reps N]
//! ```
//!
//! Prints one line per measure, `name seconds` (median of `--reps`, default 7). The reads are
//! `pread`s of the file split into one range per thread, as the audit reads it; the in-memory
//! measures read the whole file first (untimed, so this needs the file's size in memory) and
//! split it at newlines, then time `simdutf8` on every line and `serde_json` parsing every line
//! into `IgnoredAny` (full JSON syntax; its slice reader does not check UTF-8 in strings, so
//! the two add up to a whole check). `scripts/bench-audit.sh` prints these next to the audit.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::ExitCode;
use std::time::Instant;

use turnstile_replay::audit;

#[path = "common/flags.rs"]
mod flags;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("read_floor: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let threads = flags::take(&mut args, "--threads")?
        .unwrap_or(2usize)
        .max(1);
    let reps = flags::take(&mut args, "--reps")?.unwrap_or(7usize).max(1);
    let [path] = args.as_slice() else {
        return Err("usage: read_floor PATH [--threads N] [--reps N]".to_owned());
    };
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let size = file.metadata().map_err(|e| format!("{path}: {e}"))?.len();

    let per = size.div_ceil(threads as u64);
    for kib in [128usize, 1024] {
        let t = median(reps, || {
            on_threads(threads, |k| {
                read_only(
                    &file,
                    k as u64 * per,
                    ((k as u64 + 1) * per).min(size),
                    kib << 10,
                )
                .map_err(|e| format!("{path}: {e}"))
            })
        })?;
        println!("read-{kib}k {t:.4}");
    }

    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    // Lines are cut before the clock starts: the floors time the checks, not the cutting.
    let lines: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let parts: Vec<&[&[u8]]> = lines.chunks(lines.len().div_ceil(threads).max(1)).collect();
    let every_line = |check: fn(&[u8]) -> bool| {
        median(reps, || {
            on_threads(parts.len(), |k| {
                match parts[k].iter().filter(|l| !check(l)).count() {
                    0 => Ok(()),
                    n => Err(format!("{path}: {n} lines refused: not a valid journal")),
                }
            })
        })
    };
    let t = every_line(|l| simdutf8::basic::from_utf8(l).is_ok())?;
    println!("utf8-in-memory {t:.4}");
    let t = every_line(|l| serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok())?;
    println!("serde-json-in-memory {t:.4}");
    // The audit's own per-line work with nothing to read: each thread audits its part of the
    // file from memory (its ordered checks included, so this is the audit less its reads).
    let spans: Vec<&[u8]> = parts.iter().map(|part| joined(&bytes, part)).collect();
    let t = median(reps, || {
        on_threads(spans.len(), |k| {
            let report = audit::audit_bytes("part", spans[k]);
            // A part starts mid-chain, so its invariants may not hold; its lines must all be
            // events.
            if report.events == report.lines {
                Ok(())
            } else {
                Err(format!(
                    "{path}: the audit refused a line: not a valid journal"
                ))
            }
        })
    })?;
    println!("turnstile-audit-in-memory {t:.4}");
    Ok(())
}

/// The bytes of `file` from the first to the last of `lines` (consecutive slices of it),
/// newlines included.
fn joined<'a>(file: &'a [u8], lines: &[&[u8]]) -> &'a [u8] {
    let offset = |l: &[u8]| l.as_ptr() as usize - file.as_ptr() as usize;
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) => {
            let end = offset(last) + last.len();
            &file[offset(first)..(end + 1).min(file.len())]
        }
        _ => &[],
    }
}

/// Runs `work(k)` for `k` in `0..n`, each on its own thread; the first error, if any.
fn on_threads(n: usize, work: impl Fn(usize) -> Result<(), String> + Sync) -> Result<(), String> {
    let work = &work;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..n).map(|k| s.spawn(move || work(k))).collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .map_err(|_| "a measuring thread panicked".to_owned())?
        })
    })
}

/// Median wall seconds of `reps` runs of `f`.
fn median(reps: usize, mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        f()?;
        times.push(started.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Reads `[from, to)` of the file with `pread`s of `buf` bytes, touching nothing.
fn read_only(file: &File, mut from: u64, to: u64, buf: usize) -> std::io::Result<()> {
    let mut chunk = vec![0u8; buf];
    while from < to {
        let want = usize::try_from(to - from).map_or(buf, |n| n.min(buf));
        match file.read_at(&mut chunk[..want], from)? {
            0 => break,
            n => from += n as u64,
        }
    }
    Ok(())
}
