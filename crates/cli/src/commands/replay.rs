//! `turnstile replay`: run a recorded journal's prompts again through the real loop, with the
//! recorded answers and the real tools; `--check` compares the new journal with the recording.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_journal::parse_session_id;
use turnstile_providers::ModelErrorKind;
use turnstile_testing::{CheckReport, Fixture, ReplayRun, check_run};
use turnstile_tools::ToolRegistry;

/// Exit codes of `turnstile replay`, for its help.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  replayed (with --check: the new journal matches the recording)
  1  a divergence, a tool the recording needs is missing, or the recorded answers ran out
  2  error: bad arguments, unreadable fixture, unknown session";

/// Arguments of `turnstile replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// A fixture directory (events.jsonl + workdir/), a *.fixture.json manifest, a journal
    /// file, or a session (id, unique id prefix, session directory).
    pub fixture: String,
    /// Compare the new journal with the recording; exit 1 on a divergence.
    #[arg(long)]
    pub check: bool,
    /// Working directory of the tools, used as it is [default: a temporary copy of the
    /// fixture's workdir/].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// With --check: print the report as JSON; without: print every event as a JSON line.
    #[arg(long)]
    pub json: bool,
    /// Send only the first N recorded prompts, then shut the session down.
    #[arg(long, value_name = "N", conflicts_with = "check")]
    pub prompts: Option<usize>,
    /// Id of the replayed session [default: a fresh UUID].
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
}

/// Runs `turnstile replay`. Without `--state-dir` the replayed session lives in a temporary
/// state directory that is removed on exit.
pub fn run(args: &ReplayArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let fixture = load(&args.fixture, state_dir)?;
    let id = args
        .session_id
        .as_deref()
        .map(parse_session_id)
        .transpose()?;
    let quiet = args.json && args.check;
    if !quiet && !args.json {
        describe(&fixture, args);
    }

    let missing = fixture.missing_tools(&ToolRegistry::builtin(true));
    if !missing.is_empty() {
        let report = CheckReport::not_run(&fixture, missing);
        print_report(&report, args.json)?;
        return Ok(ExitCode::from(1));
    }

    let mut replay = fixture.replay();
    if let Some(dir) = state_dir {
        replay = replay.state_dir(dir);
    }
    if let Some(id) = id {
        replay = replay.session_id(id);
    }
    if let Some(n) = args.prompts {
        replay = replay.prompts(n);
    }
    if !quiet {
        let mut printer =
            crate::live_view::LiveView::for_replay(args.json, !args.check, fixture.prompts().len());
        replay = replay.observe(move |event| printer.print(event));
    }
    let run = match &args.cwd {
        Some(dir) => replay.run_in(dir),
        None => replay.run(),
    }
    .with_context(|| format!("cannot replay {}", args.fixture))?;

    if args.check {
        let report = check_run(&fixture, &run)
            .with_context(|| format!("cannot compare the replay of {}", args.fixture))?;
        print_report(&report, args.json)?;
        if report.passed() {
            return Ok(ExitCode::SUCCESS);
        }
        if state_dir.is_none() {
            // The report names the replayed journal: keep it for inspection.
            let mut run = run;
            let kept = run.keep().display().to_string();
            if !args.json {
                eprintln!("the replayed journal is kept for inspection: {kept}");
            }
        }
        return Ok(ExitCode::from(1));
    }
    if !args.json {
        summary(&run, state_dir.is_some());
    }
    // The recording ran out of answers: a call it does not hold failed as `fixture`.
    let ran_out = run.outcomes.iter().any(|o| {
        matches!(
            o,
            turnstile_loop::Outcome::Failed {
                error_type: ModelErrorKind::Fixture,
                ..
            }
        )
    });
    Ok(if ran_out {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A fixture path, else a session of the state directory.
fn load(target: &str, state_dir: Option<&Path>) -> Result<Fixture> {
    let path = Path::new(target);
    let path = if path.exists() {
        path.to_path_buf()
    } else {
        crate::target::resolve(target, state_dir)
            .with_context(|| format!("{target} is not a fixture"))?
            .events
    };
    Fixture::load(&path).with_context(|| format!("cannot load the fixture {target}"))
}

fn describe(fixture: &Fixture, args: &ReplayArgs) {
    let prompts = fixture.prompts().len();
    eprintln!(
        "replaying {}: {prompts} prompt{}, {} LLM call{} of the main agent recorded (audit counts the sub-agents' too); answers from the recording, tools for real",
        fixture.name(),
        plural(prompts),
        fixture.llm_calls(),
        plural(fixture.llm_calls()),
    );
    match (&args.cwd, fixture.workdir()) {
        (Some(dir), _) => eprintln!("working dir: {} (as it is)", dir.display()),
        (None, Some(dir)) => eprintln!(
            "working dir: a temporary copy of {} (removed afterwards)",
            dir.display()
        ),
        (None, None) => {
            eprintln!("working dir: an empty temporary directory (the fixture has no workdir/)")
        }
    }
    if let Some(n) = args.prompts.filter(|n| *n < prompts) {
        eprintln!("sending the first {n} of the {prompts} prompts");
    }
}

fn summary(run: &ReplayRun, kept: bool) {
    eprintln!(
        "\nreplayed session {} ({} prompt{} sent)",
        run.session_id,
        run.prompts_sent,
        plural(run.prompts_sent)
    );
    if kept {
        eprintln!("journal: {}", run.journal.display());
    } else {
        eprintln!(
            "journal: {} (temporary; pass --state-dir DIR to keep it)",
            run.journal.display()
        );
    }
}

fn print_report(report: &CheckReport, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, report).context("cannot print the report")?;
        writeln!(out)?;
    } else {
        write!(out, "\n{report}")?;
    }
    out.flush()?;
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
