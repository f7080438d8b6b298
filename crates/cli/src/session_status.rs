//! How a listed session ended and which model it used, for `turnstile sessions`: read off the
//! journal's first line and its last 64 KiB only (a listing reads no journal whole).
//!
//! - `in use`: a live process holds the Copilot CLI's in-use marker (turnstile's writers
//!   leave one too);
//! - `clean`: the journal ends with `session.shutdown` and no `session.error` follows the
//!   last prompt in the tail;
//! - `failed`: it ends with `session.shutdown` after a `session.error` of the last prompt;
//! - `crashed`: it ends without `session.shutdown` (killed, or a power cut) and nobody holds it.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

/// Bytes read from a journal's end.
const TAIL_BYTES: u64 = 64 << 10;

/// What the listing adds to a session's summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    /// `clean`, `failed`, `crashed` or `in use`; `unknown` when the journal cannot be read.
    pub status: &'static str,
    /// The model selected last (as far as the tail and the first line tell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The status of the session in `dir`.
pub fn read(dir: &Path) -> Status {
    read_journal(&dir.join("events.jsonl"))
        .unwrap_or(Status {
            status: "unknown",
            model: None,
        })
        .held(dir)
}

impl Status {
    fn held(mut self, dir: &Path) -> Self {
        let held = turnstile_journal::session_dir::SessionDir::open(dir)
            .ok()
            .and_then(|d| turnstile_journal::inuse::live_holder(&d, std::process::id()).ok())
            .flatten()
            .is_some();
        if held {
            self.status = "in use";
        }
        self
    }
}

fn read_journal(path: &Path) -> std::io::Result<Status> {
    let mut file = std::fs::File::open(path)?;
    let mut first = String::new();
    BufReader::new(&mut file)
        .take(TAIL_BYTES)
        .read_line(&mut first)?;
    let mut model = line_value(&first).and_then(|v| model_of(&v));
    let len = file.metadata()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut tail)?;
    let text = String::from_utf8_lossy(&tail);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        lines.remove(0); // cut in the middle
    }
    let mut last_type = None;
    let mut error_since_prompt = false;
    for line in lines {
        let Some(value) = line_value(line) else {
            continue;
        };
        if value.get("agentId").is_some_and(|a| !a.is_null()) {
            continue;
        }
        if let Some(m) = model_of(&value) {
            model = Some(m);
        }
        match value["type"].as_str() {
            Some("user.message") => error_since_prompt = false,
            Some("session.error") => error_since_prompt = true,
            _ => {}
        }
        last_type = value["type"].as_str().map(str::to_owned);
    }
    let status = match last_type.as_deref() {
        Some("session.shutdown") if error_since_prompt => "failed",
        Some("session.shutdown") => "clean",
        _ => "crashed",
    };
    Ok(Status { status, model })
}

fn line_value(line: &str) -> Option<serde_json::Value> {
    serde_json::from_str(line.trim_end()).ok()
}

fn model_of(event: &serde_json::Value) -> Option<String> {
    let key = match event["type"].as_str()? {
        "session.start" | "session.resume" => "selectedModel",
        "session.model_change" => "newModel",
        _ => return None,
    };
    event["data"][key].as_str().map(str::to_owned)
}
