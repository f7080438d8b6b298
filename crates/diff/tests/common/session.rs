//! Generated sessions of any length: one prompt, then N LLM calls, each but the last running
//! one `bash` call, as turnstile writes them. Two sessions made with different seeds have
//! different ids, timestamps and working directories and are otherwise the same session; a
//! [`Change`] makes one differ at one turn. The tests and the `diff_bench` example share it.
#![allow(dead_code)]

use std::io::{self, Write};

use serde_json::{Value, json};

/// One difference planted at a turn (1-based LLM call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The tool result of that call's tool call says something else.
    ToolResult(u64),
    /// The tool call's arguments differ (in `tool.execution_start` only).
    Arguments(u64),
    /// The call is not there (its events left out).
    RemoveTurn(u64),
    /// A `session.info` event after that call's turn end.
    AddEvent(u64),
}

/// A session of `turns` LLM calls (at least 1) under `seed`, with `change`.
pub struct Session {
    pub seed: u64,
    pub turns: u64,
    pub change: Option<Change>,
}

impl Session {
    pub fn new(seed: u64, turns: u64) -> Self {
        Session {
            seed,
            turns: turns.max(1),
            change: None,
        }
    }

    pub fn with(mut self, change: Change) -> Self {
        self.change = Some(change);
        self
    }

    /// The session's working directory.
    pub fn cwd(&self) -> String {
        format!("/home/user{}/project", self.seed)
    }

    /// Writes the journal; returns the number of lines.
    pub fn write(&self, out: impl Write) -> io::Result<u64> {
        let mut w = Writer {
            out: io::BufWriter::new(out),
            seed: self.seed,
            n: 0,
            parent: None,
        };
        let cwd = self.cwd();
        let session = w.uuid();
        w.event(
            "session.start",
            json!({"sessionId": session, "version": 1, "producer": "copilot-agent",
                "copilotVersion": "1.0.81-0", "startTime": w.time(),
                "selectedModel": "gpt-4.1", "context": {"cwd": cwd}}),
        )?;
        w.event(
            "system.message",
            json!({"role": "system", "content": format!("You work in {cwd}."),
                "metadata": {"promptVersion": "turnstile/0.1.0"}}),
        )?;
        let message = w.uuid();
        w.event(
            "user.message",
            json!({"content": "Count to the end.", "messageId": message,
                "transformedContent": format!("<current_datetime>{}</current_datetime>\n\nCount to the end.", w.time())}),
        )?;
        for turn in 1..=self.turns {
            if self.change == Some(Change::RemoveTurn(turn)) && turn < self.turns {
                continue;
            }
            let turn_id = (turn - 1).to_string();
            w.event("assistant.turn_start", json!({"turnId": turn_id}))?;
            if turn == self.turns {
                w.event(
                    "assistant.message",
                    json!({"messageId": w.uuid(), "content": "Done.", "toolRequests": []}),
                )?;
            } else {
                let call = format!("call_{}_{turn}", self.seed);
                let args = json!({"command": format!("echo {turn}"), "description": "count"});
                w.event(
                    "assistant.message",
                    json!({"messageId": w.uuid(), "content": "",
                        "toolRequests": [{"toolCallId": call, "name": "bash", "arguments": args, "type": "function"}]}),
                )?;
                let started = if self.change == Some(Change::Arguments(turn)) {
                    json!({"command": format!("echo {}", turn + 1), "description": "count"})
                } else {
                    args
                };
                w.event(
                    "tool.execution_start",
                    json!({"toolCallId": call, "toolName": "bash", "arguments": started}),
                )?;
                let said = if self.change == Some(Change::ToolResult(turn)) {
                    format!("{} (changed)", turn)
                } else {
                    turn.to_string()
                };
                let content = format!("{said}\nin {cwd}\n<exited with exit code 0>");
                w.event(
                    "tool.execution_complete",
                    json!({"toolCallId": call, "success": true,
                        "result": {"content": content, "detailedContent": content}}),
                )?;
            }
            w.event("assistant.turn_end", json!({"turnId": turn_id}))?;
            if self.change == Some(Change::AddEvent(turn)) {
                w.event(
                    "session.info",
                    json!({"infoType": "notification", "message": "planted"}),
                )?;
            }
        }
        w.out.flush()?;
        Ok(w.n)
    }

    /// The journal's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write(&mut out);
        out
    }
}

struct Writer<W: Write> {
    out: io::BufWriter<W>,
    seed: u64,
    n: u64,
    parent: Option<String>,
}

impl<W: Write> Writer<W> {
    fn uuid(&self) -> String {
        format!("{:08x}-0000-4000-8000-{:012x}", self.seed, self.n)
    }

    fn time(&self) -> String {
        let s = self.n + self.seed * 3600;
        format!(
            "2026-12-07T{:02}:{:02}:{:02}.{:03}Z",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            self.seed % 1000
        )
    }

    fn event(&mut self, kind: &str, data: Value) -> io::Result<()> {
        let id = format!("{:08x}-1111-4000-8000-{:012x}", self.seed, self.n);
        let line = json!({"type": kind, "data": data, "id": id,
            "timestamp": self.time(), "parentId": self.parent});
        serde_json::to_writer(&mut self.out, &line)?;
        self.out.write_all(b"\n")?;
        self.parent = Some(id);
        self.n += 1;
        Ok(())
    }
}
