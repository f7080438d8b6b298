//! The library's operations from the command line, for benchmarks and debugging without the
//! `turnstile` binary:
//!
//! ```text
//! replay_tool audit PATH [--json] [--threads N]
//! replay_tool count TYPE PATH [--threads N]
//! replay_tool fold PATH            (prints counts and the time taken)
//! replay_tool load SESSION_DIR     (uses checkpoint.json when valid)
//! replay_tool checkpoint SESSION_DIR
//! replay_tool verify SESSION_DIR
//! (audit and count also take --threads N, --chunk-kb N, --piece N and --in-flight N)
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use turnstile_replay::{
    ScanOptions, SessionState, audit, fold_file, verify_checkpoint, write_checkpoint,
};

#[path = "common/flags.rs"]
mod flags;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("replay_tool: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = ScanOptions::default();
    if let Some(n) = flags::take(&mut args, "--threads")? {
        options.threads = n;
    }
    if let Some(kib) = flags::take::<u64>(&mut args, "--chunk-kb")? {
        options.chunk_bytes = kib << 10;
    }
    if let Some(n) = flags::take(&mut args, "--piece")? {
        options.lines_per_piece = n;
    }
    if let Some(n) = flags::take(&mut args, "--in-flight")? {
        options.results_in_flight = n;
    }
    let json = match args.iter().position(|a| a == "--json") {
        Some(i) => {
            args.remove(i);
            true
        }
        None => false,
    };
    let started = Instant::now();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["audit", path] => {
            let report = audit::audit_file_with(&PathBuf::from(path), &options, &mut |_, _| {}).map_err(|e| e.to_string())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
            } else {
                print!("{}", report.render_table());
            }
            eprintln!("audit: {:?}", started.elapsed());
            Ok(if report.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        ["count", event_type, path] => {
            let n = audit::count_type_with(&PathBuf::from(path), event_type, &options, &mut |_, _| {}).map_err(|e| e.to_string())?;
            println!("{n}");
            eprintln!("count: {:?}", started.elapsed());
            Ok(ExitCode::SUCCESS)
        }
        ["fold", path] => {
            let folded = fold_file(&PathBuf::from(path)).map_err(|e| e.to_string())?;
            let s = &folded.state;
            println!(
                "{{\"turns\":{},\"events\":{},\"bytes\":{},\"messages\":{},\"open\":{}}}",
                s.counts.turns,
                s.event_count,
                s.byte_size,
                s.conversation.len(),
                !s.open_work.is_idle()
            );
            eprintln!("fold: {:?}", started.elapsed());
            Ok(ExitCode::SUCCESS)
        }
        ["load", dir] => {
            let (state, report) = SessionState::load(&PathBuf::from(dir)).map_err(|e| e.to_string())?;
            let elapsed = started.elapsed();
            println!(
                "{{\"turns\":{},\"events\":{},\"usedCheckpoint\":{},\"fallbackReason\":{:?},\"tailBytes\":{}}}",
                state.counts.turns,
                state.event_count,
                report.used_checkpoint,
                report.fallback_reason.unwrap_or_default(),
                report.tail_bytes
            );
            eprintln!("load: {elapsed:?}");
            Ok(ExitCode::SUCCESS)
        }
        ["checkpoint", dir] => {
            let info = write_checkpoint(&PathBuf::from(dir)).map_err(|e| e.to_string())?;
            println!("{}", serde_json::to_string(&info).map_err(|e| e.to_string())?);
            eprintln!("checkpoint: {:?}", started.elapsed());
            Ok(ExitCode::SUCCESS)
        }
        ["verify", dir] => {
            let report = verify_checkpoint(&PathBuf::from(dir)).map_err(|e| e.to_string())?;
            println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
            eprintln!("verify: {:?}", started.elapsed());
            Ok(if report.is_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        _ => Err("usage: replay_tool audit PATH [--json] | count TYPE PATH | fold PATH | load DIR | checkpoint DIR | verify DIR [--threads N]".to_owned()),
    }
}
