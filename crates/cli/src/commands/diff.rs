//! `turnstile diff A B`: the first divergence between two sessions (`turnstile-diff`), in
//! words or as JSON (`docs/diff.md`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use turnstile_diff::{Options, Profile, diff_files};

/// Exit codes of `turnstile diff`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  the sessions are the same (ids, times and paths normalised)
  1  they differ: the first divergence is printed
  2  error: bad arguments, unknown session, a journal that cannot be read (its file and line are named)";

/// What to compare, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// Every event, in order, less what always differs.
    Strict,
    /// What the model saw and did: requests (without the system prompt), answers, tool calls
    /// and results, prompts, errors.
    Behaviour,
}

/// Arguments of `turnstile diff`.
#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The first session: an id, a unique id prefix, a session directory or an events.jsonl path.
    pub a: String,
    /// The second session, named the same ways.
    pub b: String,
    /// What to compare [default: strict; behaviour between a Copilot CLI journal and a
    /// turnstile one].
    #[arg(long, value_enum)]
    pub profile: Option<ProfileArg>,
    /// Print the report as JSON (its shape: docs/diff.md).
    #[arg(long)]
    pub json: bool,
}

/// Compares the two sessions; with `--store nats://…`, a session that is not a file is read
/// from the store (`stored`).
pub fn run(args: &DiffArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let a = crate::target::resolve(&args.a, state_dir)?;
    a.check_events_file()?;
    let b = crate::target::resolve(&args.b, state_dir)?;
    b.check_events_file()?;
    let options = Options {
        profile: args.profile.map(|p| match p {
            ProfileArg::Strict => Profile::Strict,
            ProfileArg::Behaviour => Profile::Behaviour,
        }),
        cwd_aliases: Vec::new(),
    };
    let report = diff_files(&a.events, &b.events, &options)
        .with_context(|| format!("cannot compare {} with {}", args.a, args.b))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report).context("cannot print the report")?;
        writeln!(out)?;
    } else {
        write!(out, "{report}")?;
    }
    out.flush()?;
    Ok(if report.same {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `run` with each session that is not a file read from the NATS store first.
pub fn run_stored(
    args: &DiffArgs,
    config: turnstile_store_nats::NatsConfig,
    state_dir: Option<&Path>,
) -> Result<ExitCode> {
    let local = |target: &str| Path::new(target).exists();
    match (local(&args.a), local(&args.b)) {
        (true, true) => run(args, state_dir),
        (false, true) => crate::store::with_copy(config, &args.a, |a| {
            run(
                &DiffArgs {
                    a: a.to_owned(),
                    ..args.clone()
                },
                state_dir,
            )
        }),
        (true, false) => crate::store::with_copy(config, &args.b, |b| {
            run(
                &DiffArgs {
                    b: b.to_owned(),
                    ..args.clone()
                },
                state_dir,
            )
        }),
        (false, false) => crate::store::with_copy(config.clone(), &args.a, |a| {
            crate::store::with_copy(config, &args.b, |b| {
                let args = DiffArgs {
                    a: a.to_owned(),
                    b: b.to_owned(),
                    ..args.clone()
                };
                run(&args, state_dir)
            })
        }),
    }
}
