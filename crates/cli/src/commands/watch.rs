//! `turnstile watch`: a stored session's events as they happen, from any host: its history
//! from the stream, then the live events of whoever runs it (deltas and `session.idle` too),
//! rendered as `run` renders them.

use std::collections::HashSet;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::Event;
use turnstile_store::JournalStore;

use crate::store::StoreArgs;

/// `turnstile watch` arguments.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// The session id.
    pub session: String,
    /// Print every event as a JSON line.
    #[arg(long)]
    pub json: bool,
    /// Keep watching after the session shuts down (until Ctrl-C).
    #[arg(long)]
    pub follow: bool,
}

/// Runs `turnstile watch`.
pub fn run(args: &WatchArgs, store: &StoreArgs) -> Result<ExitCode> {
    let Some(config) = store.nats()? else {
        bail!("watch needs a shared store: pass --store nats://HOST:PORT (or set TURNSTILE_STORE)");
    };
    let id = crate::store::session_id(&args.session)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let nats = crate::store::open_nats(config).await?;
        // Live first, then history: an event in between is in both and printed once.
        let mut live = nats.watch(id).await?;
        let mut view = crate::live_view::LiveView::new(args.json);
        let mut seen = HashSet::new();
        if nats.contains(id).await? {
            let history = nats.export(id).await?;
            for line in history.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let event = Event::from_line(line).context("a stored line is not an event")?;
                seen.insert(event.id);
                view.print(&event);
            }
        }
        loop {
            tokio::select! {
                event = live.next() => {
                    let Some(event) = event else { break };
                    if !event.is_ephemeral() && !seen.insert(event.id) {
                        continue;
                    }
                    view.print(&event);
                    if event.event_type.as_str() == "session.shutdown" && !args.follow {
                        break;
                    }
                }
                _ = tokio::signal::ctrl_c() => break,
            }
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
