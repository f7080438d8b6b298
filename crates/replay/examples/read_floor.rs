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

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("read_floor: {message}");
            ExitCode::from(2)
        }
    }
}

fn flag(args: &mut Vec<String>, name: &str, default: usize) -> Result<usize, String> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(default);
    };
    let value = args
        .get(i + 1)
        .ok_or_else(|| format!("{name} needs a value"))?
        .parse()
        .map_err(|e| format!("{name}: {e}"))?;
    args.drain(i..i + 2);
    Ok(value)
}

fn run() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let threads = flag(&mut args, "--threads", 2)?.max(1);
    let reps = flag(&mut args, "--reps", 7)?.max(1);
    let [path] = args.as_slice() else {
        return Err("usage: read_floor PATH [--threads N] [--reps N]".to_owned());
    };
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let size = file.metadata().map_err(|e| format!("{path}: {e}"))?.len();

    for kib in [128usize, 1024] {
        let t = median(reps, || read_only(&file, size, threads, kib << 10))?;
        println!("read-{kib}k {t:.4}");
    }

    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let lines: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let t = median(reps, || {
        per_line(&lines, threads, |l| simdutf8::basic::from_utf8(l).is_ok())
    })?;
    println!("utf8-in-memory {t:.4}");
    let t = median(reps, || {
        per_line(&lines, threads, |l| {
            serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok()
        })
    })?;
    println!("serde-json-in-memory {t:.4}");
    // The audit's own per-line work with nothing to read: each thread audits its part of the
    // lines from memory (its ordered checks included, so this is the audit less its reads).
    let parts = split_at_newlines(&bytes, threads);
    let t = median(reps, || {
        std::thread::scope(|s| {
            let workers: Vec<_> = parts
                .iter()
                .map(|part| {
                    s.spawn(move || {
                        let report = audit::audit_bytes("part", part);
                        report.events == report.lines
                    })
                })
                .collect();
            for w in workers {
                // A part starts mid-chain, so its invariants may not hold; its lines must all
                // be events.
                if !w.join().map_err(|_| "an auditor panicked".to_owned())? {
                    return Err("the audit refused a line: not a valid journal".to_owned());
                }
            }
            Ok(())
        })
    })?;
    println!("turnstile-audit-in-memory {t:.4}");
    Ok(())
}

/// `bytes` cut into `n` parts of about equal size, each ending at a newline.
fn split_at_newlines(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let mut parts = Vec::with_capacity(n);
    let mut rest = bytes;
    for k in (1..=n).rev() {
        let want = rest.len().div_ceil(k);
        let cut = match memchr::memchr(b'\n', &rest[want.saturating_sub(1).min(rest.len())..]) {
            Some(i) => want.saturating_sub(1) + i + 1,
            None => rest.len(),
        };
        let (part, tail) = rest.split_at(cut.min(rest.len()));
        parts.push(part);
        rest = tail;
    }
    parts
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

/// Reads the file once with `pread`s of `buf` bytes, one range per thread, touching nothing.
fn read_only(file: &File, size: u64, threads: usize, buf: usize) -> Result<(), String> {
    let per = size.div_ceil(threads as u64);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|k| {
                s.spawn(move || -> std::io::Result<()> {
                    let mut chunk = vec![0u8; buf];
                    let (mut at, end) = (k * per, ((k + 1) * per).min(size));
                    while at < end {
                        let want = usize::try_from(end - at).map_or(buf, |n| n.min(buf));
                        match file.read_at(&mut chunk[..want], at)? {
                            0 => break,
                            n => at += n as u64,
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| "a reader panicked".to_owned())?
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// Runs `check` on every line, the lines split evenly over `threads`; fails if one is refused
/// (the benchmark's journal is valid, so a refusal means the measure is wrong).
fn per_line(lines: &[&[u8]], threads: usize, check: fn(&[u8]) -> bool) -> Result<(), String> {
    let per = lines.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = lines
            .chunks(per)
            .map(|part| s.spawn(move || part.iter().filter(|l| !check(l)).count()))
            .collect();
        let mut refused = 0;
        for w in workers {
            refused += w.join().map_err(|_| "a checker panicked".to_owned())?;
        }
        match refused {
            0 => Ok(()),
            n => Err(format!("{n} lines refused: not a valid journal")),
        }
    })
}
