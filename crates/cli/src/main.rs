//! `turnstile`: inspect, check, repair and audit Copilot-format session journals.

mod closed_pipe;
mod commands;
mod config;
mod live_view;
mod mcp_servers;
mod otel_live;
mod plain_log;
mod provider_flags;
mod reachable;
mod reached;
mod served_store;
mod session_flags;
mod session_status;
mod store;
mod stored_checkpoint;
mod target;
mod terminal_permissions;
mod type_warning;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  success (journal clean, audit without violations)
  1  the journal is damaged, the audit found violations, or a repair needs --salvage
  2  error: bad arguments, unreadable file, unknown session, session locked by another writer";

const PLAIN_EXIT_CODES: &str = "\
Exit codes:
  0  success
  2  error: bad arguments, unreadable file, unknown session";

const RUN_EXIT_CODES: &str = "\
Exit codes:
  0    the session went idle
  1    the model call failed (session.error), or no model server answers (nothing was sent)
  2    error: bad arguments, unknown session, session held by another process
  130  aborted (Ctrl-C)
  141  stdout's reader went away (`| head`): the session was closed";

/// Runs and records LLM agent sessions as Copilot-format events.jsonl journals.
#[derive(Debug, Parser)]
#[command(name = "turnstile", version, about, after_help = EXIT_CODES)]
struct Cli {
    /// Directory holding the sessions [default: $COPILOT_HOME/session-state, else ~/.copilot/session-state]
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    #[command(flatten, next_help_heading = "Store (every command)")]
    store: store::StoreArgs,

    #[command(
        flatten,
        next_help_heading = "SDK server, with no command (`turnstile --headless`; see `turnstile serve --help`)"
    )]
    server: commands::serve::ServeArgs,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a prompt through the agent loop in a new session.
    #[command(after_help = RUN_EXIT_CODES)]
    Run(commands::run::RunArgs),
    /// Continue a session: close what a crash left open, then run another prompt.
    #[command(after_help = RUN_EXIT_CODES)]
    Resume(commands::resume::ResumeArgs),
    /// List sessions: id, updated, events, size, status, model, cwd, first prompt.
    #[command(after_help = PLAIN_EXIT_CODES)]
    Sessions {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Read every journal instead of the session index (the output is the same, slower).
        #[arg(long)]
        no_index: bool,
        /// Only the sessions of this working directory (without DIR: the current one).
        #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
        cwd: Option<PathBuf>,
        /// At most N sessions, the newest.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Print a journal's events.
    #[command(after_help = EXIT_CODES)]
    Events {
        /// A session id, a unique id prefix, a session directory or an events.jsonl path.
        #[arg(default_value = "", hide_default_value = true)]
        target: String,
        /// The most recently updated session, instead of naming one.
        #[arg(long, conflicts_with = "target")]
        last: bool,
        /// Print each event as its JSON line.
        #[arg(long)]
        json: bool,
        /// Only events of this type (repeatable).
        #[arg(long = "type", value_name = "TYPE")]
        types: Vec<String>,
    },
    /// Print the messages the model was sent at one LLM call, rebuilt from the journal.
    #[command(after_help = PLAIN_EXIT_CODES)]
    History {
        /// A session id, a unique id prefix, a session directory or an events.jsonl path.
        #[arg(default_value = "", hide_default_value = true)]
        target: String,
        /// The most recently updated session, instead of naming one.
        #[arg(long, conflicts_with = "target")]
        last: bool,
        /// The LLM call (1-based, main agent, as `audit` counts turns); default: the next one.
        #[arg(long, value_name = "TURN")]
        at: Option<u64>,
        /// Print the messages as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check every line of a journal; exit 0 clean, 1 damaged.
    #[command(after_help = EXIT_CODES)]
    Fsck {
        /// A session id, a unique id prefix, a session directory or an events.jsonl path.
        #[arg(default_value = "", hide_default_value = true)]
        target: String,
        /// The most recently updated session, instead of naming one.
        #[arg(long, conflicts_with = "target")]
        last: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Count LLM calls, tool calls and errors exactly, and check the journal's invariants.
    #[command(after_help = EXIT_CODES)]
    Audit(commands::audit::AuditArgs),
    /// Write (or --verify) the checkpoint that makes loading a large session fast.
    #[command(after_help = EXIT_CODES)]
    Checkpoint(commands::checkpoint::CheckpointArgs),
    /// Compact a session's history now: one summary call to the model replaces the older messages.
    #[command(after_help = EXIT_CODES)]
    Compact(commands::compact::CompactArgs),
    /// Rewind a session's conversation to before a user turn or an event (the journal keeps
    /// every line: a marker is appended); without --to, list the turns.
    Rewind(commands::rewind::RewindArgs),
    /// The first divergence between two sessions: turn by turn, tool call by tool call.
    #[command(after_help = commands::diff::EXIT_CODES)]
    Diff(commands::diff::DiffArgs),
    /// Re-run a recorded journal with its recorded answers and the real tools; --check compares.
    #[command(after_help = commands::replay::EXIT_CODES)]
    Replay(commands::replay::ReplayArgs),
    /// Write a session as one self-contained HTML page: timeline, tool calls, tokens, audit.
    #[command(after_help = EXIT_CODES)]
    Report(commands::report::ReportArgs),
    /// Cut a torn tail to a side file; with --salvage also move bad lines aside.
    #[command(after_help = EXIT_CODES)]
    Repair {
        /// A session id, a unique id prefix, a session directory or an events.jsonl path.
        #[arg(default_value = "", hide_default_value = true)]
        target: String,
        /// The most recently updated session, instead of naming one.
        #[arg(long, conflicts_with = "target")]
        last: bool,
        /// Also repair damage in the middle: bad lines go to a side file, every good line stays.
        #[arg(long)]
        salvage: bool,
    },
    /// Whether a journal is exactly what its writer wrote, by its seal (events.jsonl.seal).
    #[command(after_help = commands::verify::EXIT_CODES)]
    Verify(commands::verify::VerifyArgs),
    /// Write a new key to sign seals with (TURNSTILE_SEAL_KEY) and its public half (FILE.pub).
    #[command(after_help = PLAIN_EXIT_CODES)]
    SealKey(commands::seal_key::SealKeyArgs),
    /// Write a session's journal out of a store, byte for byte (events.jsonl).
    #[command(after_help = PLAIN_EXIT_CODES)]
    Export(commands::export::ExportArgs),
    /// Load an events.jsonl into a store as a session (refuses a different existing one).
    #[command(after_help = PLAIN_EXIT_CODES)]
    Import(commands::import::ImportArgs),
    /// Follow a stored session's events live, from any host (needs --store nats://…).
    #[command(after_help = PLAIN_EXIT_CODES)]
    Watch(commands::watch::WatchArgs),
    /// Serve the Copilot SDK protocol (JSON-RPC) on --stdio or TCP, as `turnstile --headless` does.
    Serve(commands::serve::ServeArgs),
    /// Print the effective settings (model, provider, permissions, durability, trusted folders, MCP servers) and where each came from.
    #[command(after_help = PLAIN_EXIT_CODES)]
    Config(commands::config::ConfigArgs),
    /// No subcommand: `turnstile --headless ...`.
    #[command(skip)]
    Headless,
}

fn main() -> ExitCode {
    turnstile_sandbox::shut_engine();
    let mut cli = Cli::parse();
    if let Err(e) = name_the_session(&mut cli) {
        eprintln!("error: {}", error_chain(&e));
        return ExitCode::from(2);
    }
    let command = cli.command.as_ref().unwrap_or(&Command::Headless);
    if command.only_prints() {
        closed_pipe::die_on_closed_pipe();
    }
    let server_args = match command {
        Command::Serve(args) => Some(args),
        Command::Headless => Some(&cli.server),
        _ => None,
    };
    // Taken out of the environment before anything can start a thread (or a child process
    // inherit it).
    let taken = if server_args.is_some() {
        // SAFETY: no other thread exists yet: nothing before this line starts one, and the
        // server's runtime is built later (`commands::serve::run`).
        unsafe { commands::serve::take_connection_token() }
    } else {
        Ok(None)
    };
    let connection_token = match taken {
        Ok(token) => token,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            return ExitCode::from(2);
        }
    };
    let log_file = match server_args.map(commands::serve::log_file).transpose() {
        Ok(file) => file.flatten(),
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            return ExitCode::from(2);
        }
    };
    tracing_subscriber_init(
        server_args.map_or("warn", commands::serve::log_filter),
        log_file,
        server_args.is_some(),
    );
    let state_dir = cli.state_dir.as_deref();
    let result = match run_stored(command, &cli, state_dir) {
        Some(result) => result,
        None => run_local(command, &cli, state_dir, connection_token),
    };
    match result {
        Ok(code) => code,
        Err(e) if closed_pipe::is_closed_pipe(&e) => ExitCode::from(closed_pipe::EXIT_CLOSED_PIPE),
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: {}", error_chain(&e));
            ExitCode::from(2)
        }
    }
}

/// Puts the newest session in the place of a command's session when `--last` says so (the
/// store's newest with `--store nats://…`), and refuses a command given neither.
fn name_the_session(cli: &mut Cli) -> anyhow::Result<()> {
    let Cli {
        command,
        store,
        state_dir,
        ..
    } = cli;
    let (target, last) = match command {
        Some(Command::Events { target, last, .. })
        | Some(Command::History { target, last, .. })
        | Some(Command::Fsck { target, last, .. })
        | Some(Command::Repair { target, last, .. }) => (target, *last),
        Some(Command::Audit(a)) => (&mut a.target, a.last),
        Some(Command::Checkpoint(a)) => (&mut a.target, a.last),
        Some(Command::Compact(a)) => (&mut a.session, a.last),
        Some(Command::Rewind(a)) => (&mut a.session, a.last),
        Some(Command::Export(a)) => (&mut a.session, a.last),
        Some(Command::Verify(a)) => (&mut a.target, a.last),
        _ => return Ok(()),
    };
    if last {
        *target = if store.nats()?.is_some() {
            commands::resume::newest_stored(store)?
        } else {
            let root = turnstile_journal::StateRoot::resolve(state_dir.as_deref())?;
            target::newest_session(&root)?
        }
        .to_string();
    } else if target.is_empty() {
        anyhow::bail!(
            "give the session (an id, a unique id prefix, a session directory or an events.jsonl path) or --last"
        );
    }
    Ok(())
}

impl Command {
    /// Whether the command only reads and prints: no session runs, so no tool, hook or MCP
    /// server pipe may close under it (see `closed_pipe`).
    fn only_prints(&self) -> bool {
        match self {
            Command::Sessions { .. }
            | Command::Events { .. }
            | Command::History { .. }
            | Command::Diff(_)
            | Command::Fsck { .. }
            | Command::Audit(_)
            | Command::Checkpoint(_)
            | Command::Report(_)
            | Command::Repair { .. }
            | Command::Verify(_)
            | Command::SealKey(_)
            | Command::Export(_)
            | Command::Import(_)
            | Command::Watch(_)
            | Command::Config(_) => true,
            Command::Run(_)
            | Command::Resume(_)
            | Command::Replay(_)
            | Command::Compact(_)
            | Command::Rewind(_)
            | Command::Serve(_)
            | Command::Headless => false,
        }
    }
}

/// The reading commands on a remote store (`--store nats://…`); `None` for every other case.
fn run_stored(
    command: &Command,
    cli: &Cli,
    state_dir: Option<&std::path::Path>,
) -> Option<anyhow::Result<ExitCode>> {
    let config = match cli.store.nats() {
        Ok(Some(config)) => config,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    Some(match command {
        Command::Sessions { json, .. } => commands::sessions::run_stored(*json, config),
        Command::Events {
            target,
            json,
            types,
            ..
        } => store::with_copy(config, target, |path| {
            commands::events::run(path, *json, types, state_dir)
        }),
        Command::Fsck { target, json, .. } => store::with_copy(config, target, |path| {
            commands::fsck::run(path, *json, state_dir)
        }),
        Command::Audit(args) => store::with_copy(config, &args.target, |path| {
            let args = commands::audit::AuditArgs {
                target: path.to_owned(),
                ..args.clone()
            };
            commands::audit::run(&args, state_dir)
        }),
        Command::Replay(args) => store::with_copy(config, &args.fixture, |path| {
            let args = commands::replay::ReplayArgs {
                fixture: path.to_owned(),
                ..args.clone()
            };
            commands::replay::run(&args, state_dir)
        }),
        Command::History {
            target, at, json, ..
        } => store::with_copy(config, target, |path| {
            commands::history::run(path, *at, *json, state_dir)
        }),
        Command::Report(args) => {
            let target = match &args.target {
                Some(target) => target.clone(),
                None => match commands::resume::newest_stored(&cli.store) {
                    Ok(id) => id.to_string(),
                    Err(e) => return Some(Err(e)),
                },
            };
            store::with_copy(config, &target, |path| {
                let args = commands::report::ReportArgs {
                    target: Some(path.to_owned()),
                    last: false,
                    ..args.clone()
                };
                commands::report::run(&args, state_dir)
            })
        }
        Command::Checkpoint(args) => commands::checkpoint::run_stored(args, config),
        Command::Diff(args) => commands::diff::run_stored(args, config, state_dir),
        Command::Compact(_) => Err(store::not_on_the_store(
            "compact",
            "an SDK server started with the same --store compacts a stored session (session.history.compact)",
        )),
        Command::Rewind(_) => Err(store::not_on_the_store(
            "rewind",
            "an SDK server started with the same --store lists and rewinds a stored session's turns (session.rewind, session.listRewindPoints)",
        )),
        Command::Verify(args) => commands::verify::run_stored(args, config),
        Command::Repair { .. } => Err(anyhow::anyhow!(
            "a stored journal holds whole lines only and is never torn; to change one, export it, repair the file and import it under another id"
        )),
        _ => return None,
    })
}

/// Runs a command on the state directory (and the commands that take the store themselves);
/// the SDK server's with the connection token the user gave, if any.
fn run_local(
    command: &Command,
    cli: &Cli,
    state_dir: Option<&std::path::Path>,
    connection_token: Option<turnstile_server::ConnectionToken>,
) -> anyhow::Result<ExitCode> {
    match command {
        Command::Headless => {
            commands::serve::run_headless(&cli.server, state_dir, &cli.store, connection_token)
        }
        Command::Serve(args) => commands::serve::run(args, state_dir, &cli.store, connection_token),
        Command::Sessions {
            json,
            no_index,
            cwd,
            limit,
        } => {
            let filter = commands::sessions::Filter {
                cwd: cwd.clone(),
                limit: *limit,
            };
            commands::sessions::run(*json, !*no_index, &filter, state_dir)
        }
        Command::Events {
            target,
            json,
            types,
            ..
        } => commands::events::run(target, *json, types, state_dir),
        Command::History {
            target, at, json, ..
        } => commands::history::run(target, *at, *json, state_dir),
        Command::Fsck { target, json, .. } => commands::fsck::run(target, *json, state_dir),
        Command::Diff(args) => commands::diff::run(args, state_dir),
        Command::Audit(args) => commands::audit::run(args, state_dir),
        Command::Checkpoint(args) => commands::checkpoint::run(args, state_dir),
        Command::Run(args) => commands::run::run(args, state_dir, &cli.store),
        Command::Resume(args) => commands::resume::resume(args, state_dir, &cli.store),
        Command::Compact(args) => commands::compact::run(args, state_dir),
        Command::Rewind(args) => commands::rewind::run(args, state_dir),
        Command::Export(args) => commands::export::run(args, &cli.store, state_dir),
        Command::Import(args) => commands::import::run(args, &cli.store, state_dir),
        Command::Watch(args) => commands::watch::run(args, &cli.store),
        Command::Repair {
            target, salvage, ..
        } => commands::repair::run(target, *salvage, state_dir),
        Command::Replay(args) => commands::replay::run(args, state_dir),
        Command::Report(args) => commands::report::run(args, state_dir),
        Command::Config(args) => commands::config::run(args),
        Command::Verify(args) => commands::verify::run(args, state_dir),
        Command::SealKey(args) => commands::seal_key::run(args),
    }
}

/// Logs go to stderr (or the SDK server's `--log-dir` file; never stdout, which is the
/// protocol on `--stdio`), filtered by `TURNSTILE_LOG` (default: `default`, warnings unless the
/// SDK server's --log-level says otherwise).
fn tracing_subscriber_init(default: &str, file: Option<std::fs::File>, server: bool) {
    let (filter, chosen) = match tracing_subscriber::EnvFilter::try_from_env("TURNSTILE_LOG") {
        Ok(filter) => (filter, true),
        Err(_) => (tracing_subscriber::EnvFilter::new(default), false),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match file {
        Some(file) => builder
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
            .init(),
        // A command's warnings are for its user, in words (`plain_log.rs`); a chosen filter
        // or the SDK server's log keeps the full format.
        None if !chosen && !server => builder
            .event_format(plain_log::Plain)
            .with_writer(std::io::stderr)
            .init(),
        None => builder.with_writer(std::io::stderr).init(),
    }
}

/// The error and its causes on one line, skipping causes the message already quotes.
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}
