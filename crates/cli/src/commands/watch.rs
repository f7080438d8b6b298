//! `turnstile watch`: a stored session's events as they happen, from any host: its history
//! from the stream, then the live events of whoever runs it (deltas and `session.idle` too),
//! rendered as `run` renders them.

use std::collections::HashSet;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::{Event, Uuid};
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
            // The history a stored line at a time, as it arrives: never the whole journal.
            let mut history = History {
                view: &mut view,
                seen: &mut seen,
                line: Vec::new(),
            };
            nats.export_to(id, &mut history).await?;
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

/// Prints each line of a stored journal written to it (a stored line per write, whole lines
/// only) and remembers its id.
struct History<'a> {
    view: &'a mut crate::live_view::LiveView,
    seen: &'a mut HashSet<Uuid>,
    /// The start of a line not ended yet.
    line: Vec<u8>,
}

impl std::io::Write for History<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            if !self.line.is_empty() {
                let event = Event::from_line(&self.line).map_err(|e| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("a stored line is not an event: {e}"),
                    )
                })?;
                self.seen.insert(event.id);
                self.view.print(&event);
            }
            self.line.clear();
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
