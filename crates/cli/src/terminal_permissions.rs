//! The person at the terminal as the answerer of permission requests no rule decides, as the
//! Copilot CLI asks: allow once, allow for the rest of the session, or deny. The answer takes
//! the path an SDK client's does (`PermissionAsker`), so the journal records the same
//! `permission.requested`/`permission.completed` pair and a session approval joins the
//! session's live rules. Without a terminal, a refused call's hint is told in plain words
//! ([`PlainRefusal`]).

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use turnstile_loop::client::{AskError, PermissionAsker, RefusalNotice};
use turnstile_permissions::prompt_request;
use turnstile_tools::BoxFuture;

/// Where questions are shown: the live view's printer once it runs, so that a question
/// follows the events recorded before it (the call's `→ bash …` line) instead of racing them;
/// stderr directly before that. The CLI runs one session per process.
static SHOWN_BY: Mutex<Option<UnboundedSender<String>>> = Mutex::new(None);

/// Makes the live view's printer show the questions from now on.
pub fn show_questions_through(printer: UnboundedSender<String>) {
    *SHOWN_BY.lock().unwrap_or_else(PoisonError::into_inner) = Some(printer);
}

/// Shows `text` through the printer, or on stderr when none runs.
fn show(text: String) {
    let printer = SHOWN_BY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let unsent = match printer {
        Some(printer) => printer.send(text).err().map(|e| e.0),
        None => Some(text),
    };
    if let Some(text) = unsent {
        note(&text);
    }
}

/// Asks on stderr and reads the answer, one line, from stdin (both a terminal).
#[derive(Debug, Clone, Default)]
pub struct TerminalApproval {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// One question at a time: calls of one answer that all ask are asked in turn.
    turn: tokio::sync::Mutex<()>,
    lines: Mutex<Lines>,
}

/// The reader of stdin: a thread of its own (a blocked read must not hold up the runtime's
/// shutdown), started at the first question. A line read when no question waits is dropped,
/// so nothing typed before a question answers it.
#[derive(Debug, Default)]
struct Lines {
    started: bool,
    /// stdin ended: nobody is left to answer.
    closed: bool,
    waiting: Option<oneshot::Sender<Option<String>>>,
}

/// What the person chose.
#[derive(Debug, PartialEq)]
enum Choice {
    Once,
    Session,
    Deny(Option<String>),
}

impl TerminalApproval {
    /// The next line typed, `None` once stdin has ended.
    fn next_line(&self) -> oneshot::Receiver<Option<String>> {
        let (tx, rx) = oneshot::channel();
        let mut lines = self
            .inner
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if lines.closed {
            let _ = tx.send(None);
            return rx;
        }
        lines.waiting = Some(tx);
        if !lines.started {
            lines.started = true;
            let inner = Arc::clone(&self.inner);
            std::thread::spawn(move || read_lines(&inner));
        }
        rx
    }
}

fn read_lines(inner: &Inner) {
    let stdin = std::io::stdin();
    loop {
        let mut line = String::new();
        let read = stdin.lock().read_line(&mut line);
        let mut lines = inner.lines.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = lines.waiting.take();
        if matches!(read, Ok(0) | Err(_)) {
            lines.closed = true;
            if let Some(tx) = waiting {
                let _ = tx.send(None);
            }
            return;
        }
        if let Some(tx) = waiting {
            let _ = tx.send(Some(line));
        }
    }
}

impl PermissionAsker for TerminalApproval {
    fn ask(
        &self,
        _request_id: String,
        request: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        let this = self.clone();
        Box::pin(async move {
            let _turn = this.inner.turn.lock().await;
            let approval = session_approval(&request);
            show(question(&request, approval.as_ref()));
            loop {
                let Ok(Some(line)) = this.next_line().await else {
                    note("  (no answer: stdin ended; the call is denied)");
                    return Ok(
                        json!({"kind": "denied-no-approval-rule-and-could-not-request-from-user"}),
                    );
                };
                match choice(&line, approval.is_some()) {
                    Some(Choice::Once) => return Ok(json!({"kind": "approved"})),
                    Some(Choice::Session) => {
                        return Ok(json!({"kind": "approved-for-session", "approval": approval}));
                    }
                    Some(Choice::Deny(Some(feedback))) => {
                        return Ok(
                            json!({"kind": "denied-interactively-by-user", "feedback": feedback}),
                        );
                    }
                    Some(Choice::Deny(None)) => {
                        return Ok(json!({"kind": "denied-interactively-by-user"}));
                    }
                    None => note(if approval.is_some() {
                        "  answer 1 (once), 2 (for the session) or 3 (deny)\n> "
                    } else {
                        "  answer 1 (once) or 3 (deny)\n> "
                    }),
                }
            }
        })
    }
}

/// The question: what the call does, then the choices.
fn question(request: &Value, approval: Option<&Value>) -> String {
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
    let what = match text("kind") {
        "shell" => format!("run `{}`", text("fullCommandText")),
        "write" => format!("write {}", text("fileName")),
        "url" => format!("fetch {}", text("url")),
        "mcp" => format!(
            "call {} of the MCP server {}",
            text("toolName"),
            text("serverName")
        ),
        "custom-tool" => format!("call the tool {}", text("toolName")),
        kind => format!("{kind}: {}", text("intention")),
    };
    let mut out = format!("\nAllow the agent to {what}?\n  1. Yes, this once\n");
    if let Some(approval) = approval {
        out.push_str(&format!(
            "  2. Yes, and {} for the rest of this session\n",
            approval_words(approval)
        ));
    }
    out.push_str("  3. No (optionally followed by what to do instead: `3 use ls`)\n> ");
    out
}

/// What a session approval allows, in words.
fn approval_words(approval: &Value) -> String {
    let text = |key: &str| {
        approval
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match text("kind") {
        "commands" => {
            let ids: Vec<&str> = approval["commandIdentifiers"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!("allow `{}`", ids.join("`, `"))
        }
        "custom-tool" => format!("allow the tool {}", text("toolName")),
        "mcp" => format!("allow {} of {}", text("toolName"), text("serverName")),
        kind => format!("allow every {kind}"),
    }
}

/// The approval a session-wide answer gives (the `UserToolSessionApproval` an SDK client
/// sends), `None` when the request offers none (a URL, a command line that cannot be split).
fn session_approval(request: &Value) -> Option<Value> {
    let prompt = prompt_request(request)?;
    let text = |key: &str| request.get(key).and_then(Value::as_str);
    match prompt.get("kind").and_then(Value::as_str)? {
        "commands" => (prompt["canOfferSessionApproval"] == true).then(
            || json!({"kind": "commands", "commandIdentifiers": prompt["commandIdentifiers"]}),
        ),
        "custom-tool" => Some(json!({"kind": "custom-tool", "toolName": text("toolName")?})),
        "mcp" => Some(json!({"kind": "mcp", "serverName": text("serverName")?,
            "toolName": text("toolName")?})),
        kind @ ("read" | "write" | "memory") => Some(json!({"kind": kind})),
        _ => None,
    }
}

/// The choice a line names (`1`/`y`, `2`/`a`, `3`/`n`, the first word), `None` for anything
/// else: an empty line approves nothing, it asks again.
fn choice(line: &str, session_offered: bool) -> Option<Choice> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" => Some(Choice::Once),
        "2" | "a" | "always" if session_offered => Some(Choice::Session),
        "3" | "n" | "no" => {
            let rest = rest.trim();
            Some(Choice::Deny((!rest.is_empty()).then(|| rest.to_owned())))
        }
        _ => None,
    }
}

/// Tells the person running a non-interactive session, on stderr, which flag would have
/// allowed a refused call (instead of a log line).
#[derive(Debug)]
pub struct PlainRefusal;

impl RefusalNotice for PlainRefusal {
    fn refused(&self, tool: &str, request: &Value, hint: &str) {
        let command = request.get("fullCommandText").and_then(Value::as_str);
        let what = match command {
            Some(command) => format!("{tool} `{command}`"),
            None => tool.to_owned(),
        };
        let hint = if hint.is_empty() {
            " (--allow-all-tools allows it)"
        } else {
            hint
        };
        note(&format!(
            "  not allowed: {what}: no rule allows it and there is no terminal to ask{hint}"
        ));
    }
}

/// A line on stderr (a prompt for an answer stays on its line); a failed write is dropped
/// (there is nobody to tell).
pub fn note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{text}");
    if !text.ends_with("> ") {
        let _ = writeln!(err);
    }
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_choices() {
        assert_eq!(choice("1\n", true), Some(Choice::Once));
        assert_eq!(choice(" Y ", false), Some(Choice::Once));
        assert_eq!(choice("2", true), Some(Choice::Session));
        assert_eq!(choice("2", false), None, "no session approval offered");
        assert_eq!(choice("n", true), Some(Choice::Deny(None)));
        assert_eq!(
            choice("3  use ls instead\n", true),
            Some(Choice::Deny(Some("use ls instead".into())))
        );
        assert_eq!(choice("\n", true), None, "Enter alone approves nothing");
        assert_eq!(choice("yess", true), None);
    }

    #[test]
    fn a_command_is_approved_for_the_session_by_its_identifiers() {
        let request = json!({"kind": "shell", "fullCommandText": "touch a && ls",
            "commands": [{"identifier": "touch"}, {"identifier": "ls"}],
            "canOfferSessionApproval": true});
        assert_eq!(
            session_approval(&request),
            Some(json!({"kind": "commands", "commandIdentifiers": ["touch", "ls"]}))
        );
        let unsplit = json!({"kind": "shell", "fullCommandText": "$(x)", "commands": [],
            "canOfferSessionApproval": false});
        assert_eq!(session_approval(&unsplit), None);
        assert_eq!(
            session_approval(&json!({"kind": "url", "url": "https://x"})),
            None
        );
    }
}
