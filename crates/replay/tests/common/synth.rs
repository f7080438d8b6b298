//! Synthetic sessions: realistic, adversarial journals for tests and benchmarks.
//!
//! The generator writes what the loop writes (same envelope, same event order as the Copilot
//! runtime) and plants the traps that make text tools miscount: user messages quoting the JSON
//! of an `assistant.turn_start`, tool outputs holding whole journal lines, tool arguments with a
//! `"type":"assistant.turn_start"` key, long outputs and non-ASCII text. It is deterministic for
//! a given [`SynthConfig`], and it returns the true counts so tests can check exactness.
//!
//! It lives with the tests, not in the library: the unit tests (`lib.rs`), the integration
//! tests (`tests/common`) and the benchmark examples include this one file.
#![allow(dead_code)]

use std::io::{self, Write};

use serde_json::{Value, json};
use turnstile_journal::{Event, EventType, Timestamp, Uuid};

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Seed of the pseudo-random choices; the same seed gives the same bytes.
    pub seed: u64,
    /// Stop starting new interactions once the journal is this large.
    pub target_bytes: u64,
    /// Plant the traps (quoted turn_start JSON, JSON lines in outputs, `type` keys in arguments).
    pub adversarial: bool,
    /// When set, about one tool output in 300 is this many bytes (multi-megabyte lines).
    pub huge_output_bytes: Option<usize>,
    /// Record a compaction every this many interactions (bounds the folded conversation).
    pub compaction_every: Option<u32>,
    /// Autopilot mode: continuation nudges and a final `task_complete`.
    pub autopilot: bool,
    /// Largest ordinary tool output in bytes.
    pub max_output_bytes: usize,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            seed: 1,
            target_bytes: 1 << 20,
            adversarial: true,
            huge_output_bytes: None,
            compaction_every: Some(20),
            autopilot: true,
            max_output_bytes: 48 * 1024,
        }
    }
}

/// The true facts of a generated journal, counted while writing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynthSummary {
    /// The session id written in `session.start`.
    pub session_id: String,
    /// Lines (= persisted events) written.
    pub events: u64,
    /// Bytes written.
    pub bytes: u64,
    /// `assistant.turn_start` events (LLM calls).
    pub turns: u64,
    /// `user.message` events typed by the user.
    pub user_messages: u64,
    /// `user.message` events injected by autopilot.
    pub autopilot_continuations: u64,
    /// Tool calls that succeeded.
    pub tool_ok: u64,
    /// Tool calls that failed.
    pub tool_failed: u64,
    /// `session.error` events.
    pub errors: u64,
    /// `session.compaction_complete` events.
    pub compactions: u64,
    /// Whether `session.task_complete` was written.
    pub task_complete: bool,
}

/// The JSON of a turn start as a user would paste it: the first trap for `grep -c`.
pub const QUOTED_TURN_START: &str = r#"{"type":"assistant.turn_start","data":{"turnId":"0"}}"#;

/// Writes one generated session to `out`.
pub fn write_session<W: Write>(config: &SynthConfig, out: W) -> io::Result<SynthSummary> {
    let mut generator = Generator::new(config, out);
    generator.session()?;
    generator.out.flush()?;
    Ok(generator.summary)
}

/// One generated session in memory (for tests).
pub fn session_bytes(config: &SynthConfig) -> (Vec<u8>, SynthSummary) {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail.
    let summary = write_session(config, &mut bytes).unwrap_or_default();
    (bytes, summary)
}

/// SplitMix64: tiny, fast and good enough to pick contents.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A random version-4 UUID.
    pub fn uuid(&mut self) -> Uuid {
        let bits = (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64());
        // Set the version (4) and RFC 4122 variant bits so the id is a valid v4 UUID.
        let bits = (bits & !(0xF << 76)) | (0x4 << 76);
        let bits = (bits & !(0x3 << 62)) | (0x2 << 62);
        Uuid::from_u128(bits)
    }
}

const WORDS: &[&str] = &[
    "the",
    "journal",
    "session",
    "turn",
    "tool",
    "parser",
    "event",
    "line",
    "file",
    "state",
    "model",
    "fold",
    "resume",
    "checkpoint",
    "offset",
    "count",
    "error",
    "value",
    "build",
    "cargo",
    "test",
    "assert",
    "struct",
    "fn",
    "let",
    "match",
    "return",
    "result",
    "option",
];

/// Non-ASCII words: about one word in sixteen, as in English prose and code with some names,
/// symbols and other languages in it.
const UNICODE_WORDS: &[&str] = &[
    "café",
    "naïve",
    "東京",
    "Ελληνικά",
    "🚀",
    "日本語",
    "Ünïcödé",
    "—",
    "señal",
    "über",
    "\u{2028}",
];

const TOOLS: &[&str] = &["bash", "view", "grep", "glob", "edit", "create"];

struct Generator<'c, W: Write> {
    config: &'c SynthConfig,
    out: W,
    rng: Rng,
    parent: Option<Uuid>,
    clock: i64,
    line: Vec<u8>,
    summary: SynthSummary,
    model: &'static str,
}

impl<'c, W: Write> Generator<'c, W> {
    fn new(config: &'c SynthConfig, out: W) -> Self {
        Generator {
            config,
            out,
            rng: Rng::new(config.seed),
            parent: None,
            // 2026-11-29T14:34:34.741Z, like the recordings; advanced a little per event.
            clock: 1_795_962_874_741,
            line: Vec::with_capacity(1 << 16),
            summary: SynthSummary::default(),
            model: "gpt-4.1",
        }
    }

    fn emit(&mut self, event_type: &str, data: &Value) -> io::Result<()> {
        let text = serde_json::to_string(data).map_err(io::Error::other)?;
        let raw = serde_json::value::RawValue::from_string(text).map_err(io::Error::other)?;
        let mut event = Event::with_raw_data(EventType::new(event_type), raw, self.parent);
        event.id = self.rng.uuid();
        self.clock += 1 + self.rng.below(40) as i64;
        event.timestamp = Timestamp::from_millis(self.clock);
        self.line.clear();
        event.write_persisted(&mut self.line);
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.parent = Some(event.id);
        self.summary.events += 1;
        self.summary.bytes += self.line.len() as u64;
        Ok(())
    }

    fn now_text(&self) -> String {
        Timestamp::from_millis(self.clock).to_text()
    }

    fn words(&mut self, approx: usize) -> String {
        let mut text = String::with_capacity(approx + 16);
        while text.len() < approx {
            if !text.is_empty() {
                text.push(' ');
            }
            let word: &str = if self.rng.below(16) == 0 {
                self.rng.pick::<&str>(UNICODE_WORDS)
            } else {
                self.rng.pick::<&str>(WORDS)
            };
            text.push_str(word);
        }
        text
    }

    /// Tool output: code and log lines, and in adversarial mode whole journal lines.
    fn output(&mut self, approx: usize) -> String {
        let mut text = String::with_capacity(approx + 256);
        let mut n = 0u64;
        while text.len() < approx {
            n += 1;
            match self.rng.below(10) {
                0 if self.config.adversarial => {
                    let id = self.rng.uuid();
                    let parent = self.rng.uuid();
                    text.push_str(&format!(
                        r#"{{"type":"assistant.turn_start","data":{{"turnId":"{}","interactionId":"{}"}},"id":"{id}","timestamp":"2026-11-29T14:34:35.149Z","parentId":"{parent}"}}"#,
                        n % 7,
                        self.rng.uuid()
                    ));
                }
                1 if self.config.adversarial => {
                    text.push_str(
                        r#"    "type": "assistant.turn_start",  // grep -c counts this line"#,
                    );
                }
                2 => {
                    let words = self.words(40);
                    text.push_str(&format!("[{n:05}] INFO {words}"));
                }
                3 => text.push_str("\ttab\tseparated\tcolumns\t\"quoted\"\t\\backslash\\"),
                _ => {
                    let words = self.words(50);
                    text.push_str(&format!(
                        "src/module_{}.rs:{n}:    let x = {words};",
                        n % 13
                    ));
                }
            }
            text.push('\n');
        }
        text
    }

    fn session(&mut self) -> io::Result<()> {
        let session_id = self.rng.uuid().to_string();
        self.summary.session_id = session_id.clone();
        let start = self.now_text();
        self.emit(
            "session.start",
            &json!({
                "sessionId": session_id,
                "version": 1,
                "producer": "turnstile",
                "copilotVersion": "0.1.0",
                "startTime": start,
                "selectedModel": self.model,
                "context": {"cwd": "/home/dev/project"},
            }),
        )?;
        if self.config.autopilot {
            self.emit(
                "session.mode_changed",
                &json!({"previousMode": "interactive", "newMode": "autopilot"}),
            )?;
        }
        let mut interaction = 0u32;
        let mut system_written = false;
        while self.summary.bytes < self.config.target_bytes {
            interaction += 1;
            let interaction_id = self.rng.uuid().to_string();
            self.user_message(&interaction_id, false)?;
            if !system_written {
                self.emit(
                    "system.message",
                    &json!({"role": "system", "content": "You are turnstile, a coding agent. Use the tools.", "interactionId": interaction_id}),
                )?;
                system_written = true;
            }
            self.run_loop(&interaction_id)?;
            if self.config.autopilot {
                let nudges = self.rng.below(3);
                for _ in 0..nudges {
                    self.user_message(&interaction_id, true)?;
                    self.run_loop(&interaction_id)?;
                }
            }
            if let Some(every) = self.config.compaction_every
                && every > 0
                && interaction.is_multiple_of(every)
            {
                self.compaction()?;
            }
        }
        if self.config.autopilot {
            let interaction_id = self.rng.uuid().to_string();
            self.user_message(&interaction_id, true)?;
            self.task_complete_turn(&interaction_id)?;
        }
        self.emit(
            "session.shutdown",
            &json!({
                "shutdownType": "routine",
                "totalApiDurationMs": 25,
                "sessionStartTime": 1_795_962_874_741u64,
                "codeChanges": {"linesAdded": 0, "linesRemoved": 0, "filesModified": []},
                "modelMetrics": {self.model: {"requests": {"count": self.summary.turns, "cost": 0},
                    "usage": {"inputTokens": self.summary.turns * 1000, "outputTokens": self.summary.turns * 20,
                              "cacheReadTokens": 0, "cacheWriteTokens": 0}}},
                "currentModel": self.model,
            }),
        )
    }

    fn user_message(&mut self, interaction_id: &str, continuation: bool) -> io::Result<()> {
        let content = if continuation {
            String::new()
        } else if self.config.adversarial && self.rng.chance(30) {
            format!(
                "Why does `grep -c assistant.turn_start` count this line? It holds {QUOTED_TURN_START} and \"type\":\"assistant.turn_start\" in text. {}",
                self.words(60)
            )
        } else {
            let n = 40 + self.rng.below(400) as usize;
            self.words(n)
        };
        let shown = if continuation {
            "You have not yet marked the task as complete using the task_complete tool. If you were planning, stop planning and start implementing. You aren't done until you have fully completed the task.".to_owned()
        } else {
            content.clone()
        };
        let transformed = format!(
            "<current_datetime>{}</current_datetime>\n\n{shown}",
            self.now_text()
        );
        let message_id = self.rng.uuid().to_string();
        let mut data = json!({
            "content": content,
            "transformedContent": transformed,
            "messageId": message_id,
            "interactionId": interaction_id,
        });
        if continuation {
            data["source"] = json!("system");
            data["isAutopilotContinuation"] = json!(true);
            self.summary.autopilot_continuations += 1;
        } else {
            self.summary.user_messages += 1;
        }
        self.emit("user.message", &data)
    }

    /// Turns until the model answers without tool calls.
    fn run_loop(&mut self, interaction_id: &str) -> io::Result<()> {
        let turns = 1 + self.rng.below(6);
        for turn in 0..turns {
            let turn_id = turn.to_string();
            self.turn_start(&turn_id, interaction_id)?;
            if self.rng.chance(1) {
                // A failed model call: the error is recorded and the loop stops.
                self.summary.errors += 1;
                self.emit(
                    "session.error",
                    &json!({"errorType": "rate_limit", "message": "429 Too Many Requests: \"type\":\"assistant.turn_start\" was not sent"}),
                )?;
                self.emit("assistant.turn_end", &json!({"turnId": turn_id}))?;
                return Ok(());
            }
            let last = turn + 1 == turns;
            let calls = if last { 0 } else { 1 + self.rng.below(3) };
            let mut requests = Vec::new();
            for _ in 0..calls {
                requests.push(self.tool_request());
            }
            let content = if last { self.words(200) } else { String::new() };
            let message_id = self.rng.uuid().to_string();
            self.emit(
                "assistant.message",
                &json!({
                    "messageId": message_id,
                    "model": self.model,
                    "content": content,
                    "toolRequests": requests.iter().map(|r| json!({
                        "toolCallId": r.0, "name": r.1, "arguments": r.2, "type": "function"
                    })).collect::<Vec<_>>(),
                    "interactionId": interaction_id,
                    "turnId": turn_id,
                }),
            )?;
            for (call_id, name, arguments) in requests {
                self.tool_call(&call_id, &name, arguments, &turn_id, interaction_id)?;
            }
            self.emit("assistant.turn_end", &json!({"turnId": turn_id}))?;
        }
        Ok(())
    }

    fn turn_start(&mut self, turn_id: &str, interaction_id: &str) -> io::Result<()> {
        self.summary.turns += 1;
        self.emit(
            "assistant.turn_start",
            &json!({"turnId": turn_id, "interactionId": interaction_id}),
        )
    }

    fn tool_request(&mut self) -> (String, String, Value) {
        let call_id = format!("call_{:016x}", self.rng.next_u64());
        if self.config.adversarial && self.rng.chance(10) {
            // An argument object with a `type` key: the trap for `grep -cF '"type":"..."'`.
            let args = json!({"type": "assistant.turn_start", "data": {"turnId": "0"}, "query": self.words(20)});
            return (call_id, "record_event".into(), args);
        }
        let name = (*self.rng.pick(TOOLS)).to_owned();
        let args = match name.as_str() {
            "bash" => {
                json!({"command": format!("cargo test -p turnstile-replay {}", self.words(10)), "description": "Run the tests"})
            }
            "grep" => json!({"pattern": "assistant.turn_start", "path": "src"}),
            "glob" => json!({"pattern": "**/*.rs"}),
            _ => json!({"path": format!("/home/dev/project/src/file_{}.rs", self.rng.below(50))}),
        };
        (call_id, name, args)
    }

    fn tool_call(
        &mut self,
        call_id: &str,
        name: &str,
        arguments: Value,
        turn_id: &str,
        interaction_id: &str,
    ) -> io::Result<()> {
        self.emit(
            "tool.execution_start",
            &json!({"toolCallId": call_id, "toolName": name, "arguments": arguments, "turnId": turn_id, "model": self.model}),
        )?;
        if name == "bash" || name == "edit" || name == "create" {
            let request_id = self.rng.uuid().to_string();
            self.emit(
                "permission.requested",
                &json!({"requestId": request_id, "permissionRequest": {"kind": "shell", "toolCallId": call_id, "intention": "Run a command"}}),
            )?;
            self.emit(
                "permission.completed",
                &json!({"requestId": request_id, "toolCallId": call_id, "result": {"kind": "approved"}}),
            )?;
        }
        let size = match self.config.huge_output_bytes {
            Some(huge) if self.rng.below(300) == 0 => huge,
            _ => {
                // Mostly small outputs with a long tail, as real sessions have.
                let cap = self.config.max_output_bytes.max(64) as u64;
                let roll = self.rng.below(100);
                let upper = if roll < 70 {
                    cap / 16
                } else if roll < 95 {
                    cap / 4
                } else {
                    cap
                };
                32 + self.rng.below(upper.max(1)) as usize
            }
        };
        let failed = self.rng.chance(5);
        let data = if failed {
            self.summary.tool_failed += 1;
            json!({"toolCallId": call_id, "model": self.model, "interactionId": interaction_id, "turnId": turn_id,
                   "success": false, "error": {"message": format!("exit status 1\n{}", self.output(size.min(512))), "code": "failure"}})
        } else {
            self.summary.tool_ok += 1;
            let content = self.output(size);
            let mut result = json!({"content": content});
            if self.rng.chance(30) {
                result["detailedContent"] =
                    json!(format!("diff --git a/x b/x\n{}", self.output(size / 2)));
            }
            json!({"toolCallId": call_id, "model": self.model, "interactionId": interaction_id, "turnId": turn_id,
                   "success": true, "result": result, "toolTelemetry": {"properties": {"type": "assistant.turn_start"}}})
        };
        self.emit("tool.execution_complete", &data)
    }

    fn task_complete_turn(&mut self, interaction_id: &str) -> io::Result<()> {
        self.turn_start("0", interaction_id)?;
        let call_id = format!("call_{:016x}", self.rng.next_u64());
        let summary = format!("Done. Quoted for the record: {QUOTED_TURN_START}");
        let message_id = self.rng.uuid().to_string();
        self.emit(
            "assistant.message",
            &json!({"messageId": message_id, "model": self.model, "content": "",
                    "toolRequests": [{"toolCallId": call_id, "name": "task_complete", "arguments": {"summary": summary}, "type": "function"}],
                    "interactionId": interaction_id, "turnId": "0"}),
        )?;
        self.emit(
            "tool.execution_start",
            &json!({"toolCallId": call_id, "toolName": "task_complete", "arguments": {"summary": summary}, "turnId": "0"}),
        )?;
        self.emit(
            "tool.execution_complete",
            &json!({"toolCallId": call_id, "interactionId": interaction_id, "turnId": "0", "success": true, "result": {"content": summary}}),
        )?;
        self.summary.tool_ok += 1;
        self.emit(
            "session.task_complete",
            &json!({"summary": summary, "success": true}),
        )?;
        self.summary.task_complete = true;
        self.emit("assistant.turn_end", &json!({"turnId": "0"}))
    }

    fn compaction(&mut self) -> io::Result<()> {
        self.emit("session.compaction_start", &json!({"model": self.model}))?;
        let summary = format!("<summary>{}</summary>", self.words(600));
        self.emit(
            "session.compaction_complete",
            &json!({"success": true, "summaryContent": summary, "preCompactionTokens": 90000, "postCompactionTokens": 2000}),
        )?;
        self.summary.compactions += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes() {
        let config = SynthConfig {
            target_bytes: 64 * 1024,
            ..SynthConfig::default()
        };
        let (a, sa) = session_bytes(&config);
        let (b, sb) = session_bytes(&config);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert_eq!(sa.bytes, a.len() as u64);
        assert!(sa.turns > 0 && sa.task_complete);
    }

    #[test]
    fn every_line_is_an_event() {
        let config = SynthConfig {
            target_bytes: 128 * 1024,
            ..SynthConfig::default()
        };
        let (bytes, summary) = session_bytes(&config);
        let mut count = 0;
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            Event::from_line(line).expect("generated line parses");
            count += 1;
        }
        assert_eq!(count, summary.events);
    }
}
