//! The human (or `--json`) rendering of a session's live events, shared by `run`, `resume` and
//! `replay`: the answer streams to stdout, tool calls and notes go to stderr. A write that
//! fails (the reader went away: `| head -c1`) is no panic: the view notes that stdout is gone
//! ([`LiveView::reader_gone`]) and the command ends the session.

use std::io::Write;

use serde_json::Value;
use turnstile_journal::Event;

/// Renders live events as they arrive.
pub struct LiveView {
    json: bool,
    /// Stream answers to stdout (off when stdout carries something else, e.g. a report).
    answers: bool,
    /// Number the prompts (`› prompt i/n`) and note resumes, for replays.
    prompts: Option<usize>,
    prompt: usize,
    mid_text: bool,
    line: Vec<u8>,
    /// A write to stdout failed: nobody reads the answers any more.
    gone: bool,
    /// What the session did while the view watched, for [`LiveView::summary`].
    tally: Tally,
}

/// Counts for the line at the end of a run.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// `assistant.turn_start`: LLM calls, the sub-agents' included (as `audit` counts them).
    llm_calls: u64,
    /// `tool.execution_start`.
    tool_calls: u64,
    /// `assistant.usage`: tokens sent and received.
    input_tokens: u64,
    output_tokens: u64,
}

/// A line on stderr; a failed write is dropped (there is nobody to tell).
macro_rules! note {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

impl LiveView {
    /// The view of `run`/`resume`: answers on stdout, or every event as a JSON line.
    pub fn new(json: bool) -> Self {
        LiveView {
            json,
            answers: true,
            prompts: None,
            prompt: 0,
            mid_text: false,
            line: Vec::new(),
            gone: false,
            tally: Tally::default(),
        }
    }

    /// One line of what the session did while watched: LLM calls, tool calls, tokens, time.
    pub fn summary(&self, elapsed: std::time::Duration) -> String {
        let t = self.tally;
        let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        format!(
            "{}, {}, {} tokens in, {} out, {:.1} s",
            plural(t.llm_calls, "LLM call"),
            plural(t.tool_calls, "tool call"),
            t.input_tokens,
            t.output_tokens,
            elapsed.as_secs_f64()
        )
    }

    fn count(&mut self, event: &Event) {
        let t = &mut self.tally;
        match event.event_type.as_str() {
            "assistant.turn_start" => t.llm_calls += 1,
            "tool.execution_start" => t.tool_calls += 1,
            "assistant.usage" => {
                let data: Value = serde_json::from_str(event.data.get()).unwrap_or_default();
                let n = |key: &str| data[key].as_u64().unwrap_or(0);
                t.input_tokens += n("inputTokens");
                t.output_tokens += n("outputTokens");
            }
            _ => {}
        }
    }

    /// Whether a write to stdout failed (the reader closed the pipe).
    pub fn reader_gone(&self) -> bool {
        self.gone
    }

    /// Writes `bytes` to stdout and flushes; a failure marks the reader gone.
    fn out(&mut self, bytes: &[u8]) {
        if self.gone {
            return;
        }
        let mut out = std::io::stdout().lock();
        if out.write_all(bytes).and_then(|_| out.flush()).is_err() {
            self.gone = true;
        }
    }

    /// The view of a replay of `prompts` recorded prompts.
    pub fn for_replay(json: bool, answers: bool, prompts: usize) -> Self {
        LiveView {
            answers,
            prompts: Some(prompts),
            ..Self::new(json)
        }
    }

    /// Renders one event.
    pub fn print(&mut self, event: &Event) {
        self.count(event);
        if self.json {
            self.line.clear();
            event.write_live(&mut self.line);
            self.line.push(b'\n');
            let line = std::mem::take(&mut self.line);
            self.out(&line);
            self.line = line;
            return;
        }
        let data: Value = serde_json::from_str(event.data.get()).unwrap_or_default();
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        match event.event_type.as_str() {
            "user.message" if data["isAutopilotContinuation"] == true => {
                note!("  (autopilot: nudging the model to finish)")
            }
            // A sub-agent's task is no prompt of the recording.
            "user.message" if event.agent_id.is_some() => {
                note!("  ↳ sub-agent: {}", first_line(&text(&data["content"])))
            }
            "user.message" => {
                if let Some(total) = self.prompts {
                    self.prompt += 1;
                    note!(
                        "\n› prompt {}/{total}: {}",
                        self.prompt,
                        text(&data["content"])
                    );
                }
            }
            "session.resume" if self.prompts.is_some() => {
                note!("\n(the recording's next process: the session resumes)")
            }
            "assistant.message_delta" if self.answers => {
                self.out(text(&data["deltaContent"]).as_bytes());
                self.mid_text = true;
            }
            "assistant.message" => {
                let content = text(&data["content"]);
                let whole = self.answers && !self.mid_text && !content.is_empty();
                if whole {
                    self.out(content.as_bytes());
                }
                if self.mid_text || whole {
                    self.out(b"\n");
                }
                self.mid_text = false;
            }
            "tool.execution_start" => note!(
                "  → {} {}",
                text(&data["toolName"]),
                compact(&data["arguments"])
            ),
            "tool.execution_complete" if data["success"] == true => {
                note!("  ✓ {}", first_line(&text(&data["result"]["content"])))
            }
            "tool.execution_complete" => {
                note!("  ✗ {}", first_line(&text(&data["error"]["message"])))
            }
            "permission.completed" if data["result"]["kind"] != "approved" => {
                note!("  permission: {}", text(&data["result"]["kind"]))
            }
            "hook.end" if !data["output"].is_null() => {
                note!(
                    "  hook {}: {}",
                    text(&data["hookType"]),
                    compact(&data["output"])
                )
            }
            "assistant.turn_retry" => {
                note!("  retrying the model call: {}", text(&data["reason"]))
            }
            "session.task_complete" => note!("  task complete: {}", text(&data["summary"])),
            "session.error" => note!("  error: {}", text(&data["message"])),
            "session.warning" => note!("  warning: {}", text(&data["message"])),
            "abort" => note!("  aborted"),
            "session.snapshot_rewind" => note!(
                "  truncated: {} events removed from the conversation",
                data["eventsRemoved"]
            ),
            _ => {}
        }
    }
}

/// A JSON value on one line, cut at 100 characters.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 100 {
        format!("{}…", s.chars().take(99).collect::<String>())
    } else {
        s
    }
}

/// The first line of a text, with `…` when there is more.
fn first_line(s: &str) -> String {
    let mut lines = s.lines();
    let line = lines.next().unwrap_or("");
    format!("{line}{}", if lines.next().is_some() { " …" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening() {
        assert_eq!(first_line("a\nb"), "a …");
        assert_eq!(first_line("a"), "a");
        assert_eq!(
            compact(&Value::String("x".repeat(200))).chars().count(),
            100
        );
    }
}
