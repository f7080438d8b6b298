//! `turnstile rewind SESSION --to EVENT|N`: the conversation cut back, as the SDK's
//! `session.history.truncate`/`rewind` do, with the journal kept whole: a
//! `session.snapshot_rewind` marker is appended and the fold leaves the removed events out of
//! the model's view. Without `--to`, lists the user turns it can rewind to.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::{Event, JournalReader, ReadMode, StateRoot};
use turnstile_replay::{CutKind, RewindPoint, rewind_points, visible_events};

use super::one_operation::{session_id, with_session};
use super::session_start::LoopArgs;

/// `turnstile rewind` arguments. Rewinding calls no model, so the loop flags (the model,
/// permission and session flags of `resume`, which open the session) are accepted but left
/// out of the help: they were ~150 of its lines.
#[derive(Debug, Clone, Args)]
#[command(
    mut_args = |arg: clap::Arg| {
        let shown = ["session", "last", "to", "json", "cwd", "help"];
        let id = arg.get_id().as_str().to_owned();
        arg.hide(!shown.contains(&id.as_str()))
    },
    after_help = "The model, permission and session flags of `turnstile resume --help` are accepted too (rewinding calls no model; the session reopens on the model it remembers)."
)]
pub struct RewindArgs {
    /// The session (id, unique id prefix or session directory).
    #[arg(default_value = "", hide_default_value = true)]
    pub session: String,
    /// The most recently updated session, instead of naming one.
    #[arg(long, conflicts_with = "session")]
    pub last: bool,
    /// An event id (it and every later event leave the conversation) or N, the N-th user turn
    /// of the current conversation counted from 1 (the conversation returns to before it).
    #[arg(long, value_name = "EVENT|N")]
    pub to: Option<String>,
    #[command(flatten)]
    pub opts: LoopArgs,
}

fn visible(path: &Path) -> Result<Vec<Event>> {
    let mut events = Vec::new();
    let reader = JournalReader::open(path, ReadMode::Strict)
        .with_context(|| format!("cannot read {}", path.display()))?;
    for record in reader {
        events.push(
            record
                .with_context(|| format!("cannot read {}", path.display()))?
                .event,
        );
    }
    Ok(visible_events(events))
}

fn print_points(points: &[RewindPoint], json: bool) -> std::io::Result<()> {
    if json {
        let list: Vec<_> = points
            .iter()
            .map(|p| {
                serde_json::json!({
                    "eventId": p.event_id.to_string(),
                    "userMessage": p.user_message,
                    "timestamp": p.timestamp,
                    "isAutopilotContinuation": p.is_autopilot_continuation,
                })
            })
            .collect();
        return writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::json!({ "points": list })
        );
    }
    let mut out = std::io::stdout().lock();
    for (n, p) in points.iter().enumerate() {
        let first = p.user_message.lines().next().unwrap_or_default();
        writeln!(
            out,
            "{:>4}  {}  {}  {first}",
            n + 1,
            p.event_id,
            p.timestamp
        )?;
    }
    Ok(())
}

/// Runs `turnstile rewind`: exit 0 when the marker is written (or the points are listed);
/// an error names an event that is not in the conversation.
pub fn run(args: &RewindArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let id = session_id(&args.session, state_dir)?;
    let events = StateRoot::resolve(state_dir)?.session(id).events;
    let points = rewind_points(&visible(&events)?);
    let Some(to) = &args.to else {
        print_points(&points, args.opts.json)?;
        return Ok(ExitCode::SUCCESS);
    };
    let (target, kind) = match to.parse::<usize>() {
        Ok(n) => match n.checked_sub(1).and_then(|i| points.get(i)) {
            Some(p) => (p.event_id.to_string(), CutKind::UserTurn),
            None => bail!(
                "session {id} has {} user turns to rewind to; --to {n} is not one of them (see `turnstile rewind {id}`)",
                points.len()
            ),
        },
        Err(_) => (to.clone(), CutKind::Truncate),
    };
    let marker = with_session(id, &args.opts, state_dir, async |session| {
        session
            .cut(target, kind)
            .await
            .with_context(|| format!("cannot rewind session {id}"))
    })?;
    if args.opts.json {
        let value = serde_json::json!({
            "upToEventId": marker.up_to_event_id,
            "eventsRemoved": marker.events_removed,
        });
        writeln!(std::io::stdout().lock(), "{value}")?;
    } else {
        writeln!(
            std::io::stdout().lock(),
            "rewound {id}: {} events from {} on are out of the conversation (the journal keeps them)",
            marker.events_removed,
            marker.up_to_event_id
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
