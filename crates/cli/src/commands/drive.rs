//! A running session of `run` or `resume` in the terminal: the prompt sent, events printed as
//! they come, Ctrl-C and a departed reader handled, the summary and the command that resumes it.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use turnstile_journal::Event;
use turnstile_loop::{Outcome, SendOptions, SessionHandle};

use turnstile_store_nats::LiveFeed;

use crate::store::StoreArgs;
use crate::terminal_permissions::note;

use super::session_start::{LoopArgs, Reconnect};

/// Exit code of an aborted run (128 + SIGINT, as shells report it).
const EXIT_ABORTED: u8 = 130;

/// Sends the prompt (if any), prints events as they come, handles Ctrl-C, shuts down.
pub(super) async fn drive(
    session: &SessionHandle,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>,
    prompt: Option<String>,
    opts: &LoopArgs,
    live: Option<LiveFeed>,
    reconnect: Reconnect,
    hint: &str,
) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    // Told once when stdout's reader goes away: the session then ends as after a Ctrl-C.
    let gone = Arc::new(tokio::sync::Notify::new());
    // Questions of the terminal's approvals are shown by the printer, after the events
    // recorded before them (`terminal_permissions.rs`).
    let (questions_tx, mut questions) = tokio::sync::mpsc::unbounded_channel::<String>();
    crate::terminal_permissions::show_questions_through(questions_tx);
    let printer = {
        let json = opts.json;
        let gone = Arc::clone(&gone);
        tokio::spawn(async move {
            let mut printer = crate::live_view::LiveView::new(json);
            let mut told = false;
            let mut ended = false;
            loop {
                // Events first: everything recorded before a question was asked is queued
                // by then.
                let event = tokio::select! {
                    biased;
                    event = events.recv() => event,
                    Some(question) = questions.recv() => {
                        crate::terminal_permissions::note(&question);
                        continue;
                    }
                };
                let Some(event) = event else { break };
                // The runtime's stream ends with `session.shutdown`: what the session announces
                // after it (its background tasks let go, for SDK clients) is not printed.
                if ended {
                    continue;
                }
                ended = event.event_type.as_str() == "session.shutdown";
                printer.print(&event);
                if printer.reader_gone() && !told {
                    told = true;
                    gone.notify_one();
                }
                if let Some(live) = &live {
                    live.publish(&event).await;
                }
            }
            (told, printer)
        })
    };
    reconnect.record(session).await?;
    let outcome = match prompt {
        None => Outcome::Idle,
        Some(prompt) => {
            let (_, done) = session.send(prompt, SendOptions::default())?;
            tokio::pin!(done);
            let mut interrupts = 0;
            let mut reader_gone = false;
            loop {
                tokio::select! {
                    outcome = &mut done => break outcome.context("the session stopped unexpectedly")?,
                    _ = gone.notified(), if !reader_gone => {
                        reader_gone = true;
                        session.abort();
                    }
                    _ = tokio::signal::ctrl_c() => {
                        interrupts += 1;
                        if interrupts > 1 {
                            // Second Ctrl-C: leave now. The journal holds whole lines only, and
                            // what was not fsynced is what a crash would lose as well.
                            note("\ninterrupted again: exiting");
                            std::process::exit(i32::from(EXIT_ABORTED));
                        }
                        note("\naborting (Ctrl-C again to exit at once)");
                        session.abort();
                    }
                }
            }
        }
    };
    session
        .shutdown()
        .await
        .context("could not close the session cleanly")?;
    let (gone, view) = printer
        .await
        .context("the event printer stopped unexpectedly")?;
    if gone {
        // Nobody reads the answers: end quietly, as a command whose reader left.
        return Ok(ExitCode::from(crate::closed_pipe::EXIT_CLOSED_PIPE));
    }
    let id = session.id();
    if !opts.json {
        note(&format!(
            "\n{}\nsession {id}\nresume with: {hint}",
            view.summary(started.elapsed())
        ));
    }
    Ok(match outcome {
        Outcome::Idle => ExitCode::SUCCESS,
        Outcome::Aborted => ExitCode::from(EXIT_ABORTED),
        Outcome::Failed {
            error_type,
            status_code,
            message,
        } => {
            note(&format!(
                "error: the model call failed ({error_type}{}): {message}",
                status_code
                    .map(|c| format!(", HTTP {c}"))
                    .unwrap_or_default()
            ));
            ExitCode::from(1)
        }
    })
}

/// The command that resumes session `id`: the state directory and store named, and the working
/// directory (`resume` remembers the model and its server, not these).
pub(super) fn resume_hint(
    id: uuid::Uuid,
    state_dir: Option<&Path>,
    store: &StoreArgs,
    opts: &LoopArgs,
) -> String {
    let mut hint = String::from("turnstile");
    if let Some(dir) = state_dir {
        hint.push_str(&format!(
            " --state-dir {}",
            shell_word(&dir.display().to_string())
        ));
    }
    if let Some(url) = &store.store {
        hint.push_str(&format!(" --store {}", shell_word(url)));
    }
    hint.push_str(&format!(" resume {id}"));
    if let Some(cwd) = &opts.cwd {
        hint.push_str(&format!(
            " --cwd {}",
            shell_word(&cwd.display().to_string())
        ));
    }
    hint
}

/// `word` as a shell reads it back: as is when it holds only safe characters, else quoted.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
