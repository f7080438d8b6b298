//! `turnstile history`: the messages the model was sent at one LLM call (or will be sent at
//! the next), rebuilt from the journal alone.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use turnstile_replay::{Message, view_at};

/// Prints the view of `target` before call `at` (1-based), or before the next call.
pub fn run(
    target: &str,
    at: Option<u64>,
    json: bool,
    state_dir: Option<&Path>,
) -> Result<ExitCode> {
    let paths = crate::target::resolve(target, state_dir)?;
    paths.check_events_file()?;
    let view = view_at(&paths.events, at)?;
    let messages = &view.state.conversation;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let written = if json {
        serde_json::to_writer_pretty(&mut out, messages).context("writing the messages as JSON")?;
        writeln!(out)
    } else {
        let which = match (view.turn, view.line) {
            (Some(turn), Some(line)) => {
                format!("LLM call {turn} of {} (line {line})", view.turns)
            }
            _ => format!("the next LLM call (after {} calls)", view.turns),
        };
        writeln!(out, "{} messages sent at {which}", messages.len()).and_then(|()| {
            messages
                .iter()
                .enumerate()
                .try_for_each(|(i, m)| writeln!(out, "\n[{}] {}", i + 1, render(m)))
        })
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // A closed pipe (`| head`) is a normal way to stop reading.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
    }
}

/// A message as a role line and its text.
fn render(m: &Message) -> String {
    match m {
        Message::System { content } => format!("system\n{content}"),
        Message::Developer { content } => format!("developer\n{content}"),
        Message::User { content, .. } => format!("user\n{content}"),
        Message::Assistant {
            content,
            tool_requests,
            ..
        } => {
            let mut text = format!("assistant\n{content}");
            for r in tool_requests {
                let args = r
                    .arguments
                    .as_ref()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                text.push_str(&format!("\n-> {} {} {args}", r.tool_call_id, r.name));
            }
            text
        }
        Message::Tool {
            tool_call_id,
            content,
            success,
            ..
        } => {
            let outcome = if *success { "ok" } else { "failed" };
            format!("tool {tool_call_id} ({outcome})\n{content}")
        }
        Message::Summary { .. } => format!(
            "user (compaction summary)\n{}",
            m.summary_text().unwrap_or_default()
        ),
    }
}
