//! Writes a synthetic, adversarial session journal, e.g. for the audit benchmark:
//!
//! ```text
//! cargo run --release -p turnstile-replay --example gen_journal -- --size-mb 400 --out target/bench/400.jsonl
//! ```
//!
//! Options: `--size-mb N` (default 16), `--out PATH` (required), `--seed N` (default 42),
//! `--huge-mb N` (about one tool output in 300 is N MiB), `--plain` (no adversarial content),
//! `--no-compaction`, `--interactive` (no autopilot). Prints the true counts as JSON on stdout.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

#[path = "../tests/common/synth.rs"]
mod synth;

use synth::{SynthConfig, write_session};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gen_journal: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut config = SynthConfig {
        seed: 42,
        target_bytes: 16 << 20,
        ..SynthConfig::default()
    };
    let mut out: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number =
            |text: String, name: &str| text.parse::<u64>().map_err(|e| format!("{name}: {e}"));
        match arg.as_str() {
            "--size-mb" => config.target_bytes = number(value("--size-mb")?, "--size-mb")? << 20,
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--seed" => config.seed = number(value("--seed")?, "--seed")?,
            "--huge-mb" => {
                let mb = number(value("--huge-mb")?, "--huge-mb")?;
                config.huge_output_bytes =
                    Some(usize::try_from(mb << 20).map_err(|e| e.to_string())?);
            }
            "--plain" => config.adversarial = false,
            "--no-compaction" => config.compaction_every = None,
            "--interactive" => config.autopilot = false,
            "-h" | "--help" => {
                println!(
                    "gen_journal --out PATH [--size-mb N] [--seed N] [--huge-mb N] [--plain] [--no-compaction] [--interactive]"
                );
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    let out = out.ok_or("--out PATH is required")?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let file = File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let summary = write_session(&config, BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| format!("{}: {e}", out.display()))?;
    println!(
        "{{\"path\":{:?},\"bytes\":{},\"events\":{},\"turns\":{},\"userMessages\":{},\"autopilotContinuations\":{},\"toolOk\":{},\"toolFailed\":{},\"errors\":{},\"compactions\":{}}}",
        out.display().to_string(),
        summary.bytes,
        summary.events,
        summary.turns,
        summary.user_messages,
        summary.autopilot_continuations,
        summary.tool_ok,
        summary.tool_failed,
        summary.errors,
        summary.compactions
    );
    Ok(())
}
