//! How much of two journals is compared: everything but what always differs (`strict`), or,
//! between two runtimes, only what the model saw and did (`behaviour`); and which runtime
//! wrote a journal, which chooses between them.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnstile_journal::{JournalReader, ReadMode};

use crate::error::DiffError;

/// Lines read from a journal's head to find which runtime wrote it (its first main-agent
/// `system.message` comes within the first few lines).
pub const RUNTIME_SCAN_LINES: u64 = 1_000;

/// What is compared; also what a fixture's manifest names (`"profile": "behaviour"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Every event, in order, less the volatile fields: for two sessions of one runtime.
    Strict,
    /// The requests each LLM call sent (without the system prompt), the answers, the tool
    /// calls and their results (in the engines' common wording), prompts, errors, aborts and
    /// task completions of the main agent: for two runtimes, each of which records its own
    /// bookkeeping (permission asks, hooks, system prompt, telemetry).
    Behaviour,
}

impl Profile {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Behaviour => "behaviour",
        }
    }

    /// The profile for two journals written by `a` and `b`: strict unless they are two
    /// different known runtimes.
    pub fn for_runtimes(a: Runtime, b: Runtime) -> Profile {
        match (a, b) {
            (Runtime::Turnstile, Runtime::CopilotCli)
            | (Runtime::CopilotCli, Runtime::Turnstile) => Profile::Behaviour,
            _ => Profile::Strict,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which runtime wrote a journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Runtime {
    /// turnstile: its main-agent `system.message` carries `metadata.promptVersion`
    /// `turnstile/<version>` (older journals: `session.start`'s `producer` is `turnstile`).
    Turnstile,
    /// The Copilot CLI: a main-agent `system.message` without turnstile's mark.
    CopilotCli,
    /// No main-agent `system.message` in the first [`RUNTIME_SCAN_LINES`] lines.
    Unknown,
}

impl Runtime {
    /// Reads the head of the journal at `path` for its runtime.
    pub fn of(path: &Path) -> Result<Runtime, DiffError> {
        let reader = JournalReader::open(path, ReadMode::Lenient)?;
        for record in reader {
            let record = record?;
            if record.line > RUNTIME_SCAN_LINES {
                break;
            }
            let event = &record.event;
            let kind = event.event_type.as_str();
            let data = || serde_json::from_str::<Value>(event.data.get()).unwrap_or(Value::Null);
            // Older turnstile journals named it as the producer.
            if kind == "session.start" && data()["producer"] == "turnstile" {
                return Ok(Runtime::Turnstile);
            }
            if kind != "system.message" || event.agent_id.is_some() {
                continue;
            }
            let data = data();
            let version = data
                .pointer("/metadata/promptVersion")
                .and_then(Value::as_str);
            return Ok(match version {
                Some(v)
                    if v.starts_with(
                        turnstile_journal::payload::TURNSTILE_PROMPT_VERSION_PREFIX,
                    ) =>
                {
                    Runtime::Turnstile
                }
                _ => Runtime::CopilotCli,
            });
        }
        Ok(Runtime::Unknown)
    }

    /// The runtime's name, for people.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Turnstile => "turnstile",
            Runtime::CopilotCli => "Copilot CLI",
            Runtime::Unknown => "runtime unknown",
        }
    }
}
