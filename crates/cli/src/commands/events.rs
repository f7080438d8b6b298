//! `turnstile events`: print a journal's events, as a table or as JSON lines.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use turnstile_journal::{Event, JournalReader, ReadMode};

/// Prints the events of `target`, optionally only some types.
pub fn run(
    target: &str,
    json: bool,
    types: &[String],
    state_dir: Option<&Path>,
) -> Result<ExitCode> {
    crate::type_warning::warn_unknown(types);
    let paths = crate::target::resolve(target, state_dir)?;
    paths.check_events_file()?;
    let reader = JournalReader::open(&paths.events, ReadMode::Lenient)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut damaged = false;
    let mut line = Vec::new();
    for record in reader {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                eprintln!("warning: {e}");
                damaged = true;
                continue;
            }
        };
        if !types.is_empty() && !types.iter().any(|t| t == record.event.event_type.as_str()) {
            continue;
        }
        let result = if json {
            line.clear();
            record.event.write_as_read(&mut line);
            line.push(b'\n');
            out.write_all(&line)
        } else {
            writeln!(
                out,
                "{:>6}  {}  {:<28}  {}",
                record.line,
                record.event.timestamp,
                record.event.event_type.as_str(),
                brief(&record.event)
            )
        };
        if let Err(e) = result {
            // A closed pipe (`| head`) is a normal way to stop reading.
            if e.kind() == io::ErrorKind::BrokenPipe {
                return Ok(ExitCode::SUCCESS);
            }
            return Err(e.into());
        }
    }
    out.flush().or_else(|e| {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    Ok(if damaged {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A one-line gist of an event's data for the table.
fn brief(event: &Event) -> String {
    let Ok(data) = serde_json::from_str::<serde_json::Value>(event.data.get()) else {
        return String::new();
    };
    let text = |k: &str| data.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let gist = match event.event_type.as_str() {
        "user.message" | "system.message" => text("content").to_owned(),
        "assistant.message" => {
            let tools: Vec<&str> = data["toolRequests"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
                .unwrap_or_default();
            if tools.is_empty() {
                text("content").to_owned()
            } else {
                format!("tools: {}", tools.join(", "))
            }
        }
        "assistant.turn_start" | "assistant.turn_end" => format!("turn {}", text("turnId")),
        "tool.execution_start" => format!("{} {}", text("toolName"), data["arguments"]),
        "tool.execution_complete" => {
            let ok = data["success"].as_bool().unwrap_or(false);
            let content = data["result"]["content"]
                .as_str()
                .or_else(|| data["error"]["message"].as_str())
                .unwrap_or("");
            format!("{} {}", if ok { "ok" } else { "failed" }, content)
        }
        "session.start" => format!("cwd {}", data["context"]["cwd"].as_str().unwrap_or("?")),
        "session.error" => format!("{}: {}", text("errorType"), text("message")),
        "session.task_complete" => text("summary").to_owned(),
        _ => String::new(),
    };
    let flat = gist.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 100 {
        format!("{}…", flat.chars().take(99).collect::<String>())
    } else {
        flat
    }
}
