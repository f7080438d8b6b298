//! How a session's journal ends and which model it used last, as `turnstile sessions` shows
//! them: taken from the journal's first line and its last 64 KiB (a listing reads no journal
//! whole), or kept in step by the session's writer, and carried by the session index's record
//! so that a listing whose records are current reads no journal at all.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use crate::event::Event;

/// Bytes read from a journal's end.
pub const TAIL_BYTES: u64 = 64 << 10;

/// How a journal ends, for listings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ending {
    /// Its last event (of the session's own agent) is `session.shutdown`.
    pub shut_down: bool,
    /// A `session.error` came after the last `user.message`.
    pub error_since_prompt: bool,
    /// The model selected last (`session.start` or `session.resume`, then
    /// `session.model_change`), as far as the first line and the tail tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What a listing makes of an [`Ending`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndState {
    /// Shut down, and no error followed the last prompt.
    Clean,
    /// Shut down after an error of the last prompt.
    Failed,
    /// Not shut down: still running, or killed (whether a process holds it is the in-use
    /// marker's to say, `inuse.rs`).
    Open,
}

impl Ending {
    /// What the journal's last events say.
    pub fn state(&self) -> EndState {
        match (self.shut_down, self.error_since_prompt) {
            (true, false) => EndState::Clean,
            (true, true) => EndState::Failed,
            (false, _) => EndState::Open,
        }
    }

    /// Takes in one event appended after the ones seen so far.
    pub fn absorb(&mut self, event: &Event) {
        // A sub-agent's events say nothing of how the session itself ended.
        if event.agent_id.is_some() {
            return;
        }
        let kind = event.event_type.as_str();
        if let Some(model) = model_of(kind, event.data.get()) {
            self.model = Some(model);
        }
        match kind {
            "user.message" => self.error_since_prompt = false,
            "session.error" => self.error_since_prompt = true,
            _ => {}
        }
        self.shut_down = kind == "session.shutdown";
    }

    /// The ending of the journal open as `file`, `len` bytes long: its first line and the
    /// complete lines of its last [`TAIL_BYTES`] (a line cut by the window's start is
    /// skipped, as is any line that is not an event).
    pub fn read(file: &std::fs::File, len: u64) -> std::io::Result<Self> {
        let mut file = file;
        let mut ending = Ending::default();
        file.seek(SeekFrom::Start(0))?;
        let mut first = Vec::new();
        BufReader::new(&mut file)
            .take(TAIL_BYTES.min(len))
            .read_until(b'\n', &mut first)?;
        if first.ends_with(b"\n")
            && let Ok(event) = Event::from_line(first.trim_ascii_end())
            && event.agent_id.is_none()
        {
            ending.model = model_of(event.event_type.as_str(), event.data.get());
        }
        let from = len.saturating_sub(TAIL_BYTES);
        file.seek(SeekFrom::Start(from))?;
        let mut tail = Vec::new();
        file.take(len - from).read_to_end(&mut tail)?;
        let mut lines = tail.split_inclusive(|&b| b == b'\n');
        if from > 0 {
            lines.next(); // cut by the window's start
        }
        for line in lines {
            if !line.ends_with(b"\n") {
                break; // torn: not part of the journal yet
            }
            if let Ok(event) = Event::from_line(line.trim_ascii_end()) {
                ending.absorb(&event);
            }
        }
        Ok(ending)
    }
}

/// The model an event of type `kind` with `data` selects, if it selects one.
fn model_of(kind: &str, data: &str) -> Option<String> {
    let key = match kind {
        "session.start" | "session.resume" => "selectedModel",
        "session.model_change" => "newModel",
        _ => return None,
    };
    #[derive(Deserialize)]
    struct Data<'a> {
        #[serde(rename = "selectedModel", borrow)]
        selected: Option<std::borrow::Cow<'a, str>>,
        #[serde(rename = "newModel", borrow)]
        new: Option<std::borrow::Cow<'a, str>>,
    }
    let data: Data<'_> = serde_json::from_str(data).ok()?;
    let model = if key == "newModel" {
        data.new
    } else {
        data.selected
    };
    model.map(|m| m.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_type::EventType;

    fn event(kind: &str, data: &str, agent: Option<&str>) -> Event {
        let mut e = Event::with_raw_data(
            EventType::new(kind),
            serde_json::value::RawValue::from_string(data.to_owned()).unwrap(),
            None,
        );
        e.agent_id = agent.map(str::to_owned);
        e
    }

    fn journal(events: &[Event]) -> Vec<u8> {
        let mut out = Vec::new();
        for e in events {
            e.write_persisted(&mut out);
            out.push(b'\n');
        }
        out
    }

    fn read(bytes: &[u8]) -> Ending {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        Ending::read(&file, bytes.len() as u64).unwrap()
    }

    #[test]
    fn clean_failed_and_open_endings_with_the_last_model() {
        let start = event("session.start", r#"{"selectedModel":"a"}"#, None);
        let prompt = event("user.message", r#"{"content":"x"}"#, None);
        let error = event("session.error", r#"{"message":"boom"}"#, None);
        let change = event("session.model_change", r#"{"newModel":"b"}"#, None);
        let sub = event(
            "session.model_change",
            r#"{"newModel":"c"}"#,
            Some("agent-1"),
        );
        let shutdown = event("session.shutdown", "{}", None);
        let cases = [
            (
                vec![&start, &prompt, &change, &sub, &shutdown],
                EndState::Clean,
                "b",
            ),
            (
                vec![&start, &prompt, &error, &shutdown],
                EndState::Failed,
                "a",
            ),
            (
                vec![&start, &error, &prompt, &shutdown],
                EndState::Clean,
                "a",
            ),
            (
                vec![&start, &prompt, &shutdown, &prompt],
                EndState::Open,
                "a",
            ),
        ];
        for (events, state, model) in cases {
            let events: Vec<Event> = events.into_iter().cloned().collect();
            let mut kept = Ending::default();
            for e in &events {
                kept.absorb(e);
            }
            let read = read(&journal(&events));
            assert_eq!(read, kept, "the read and the kept ending agree");
            assert_eq!((read.state(), read.model.as_deref()), (state, Some(model)));
        }
    }

    #[test]
    fn a_torn_last_line_and_a_line_cut_by_the_window_are_left_out() {
        let start = event("session.start", r#"{"selectedModel":"a"}"#, None);
        let big = event(
            "assistant.message",
            &format!(r#"{{"content":"{}"}}"#, "y".repeat(TAIL_BYTES as usize)),
            None,
        );
        let shutdown = event("session.shutdown", "{}", None);
        let mut bytes = journal(&[start, big, shutdown]);
        assert_eq!(read(&bytes).state(), EndState::Clean);
        bytes.extend_from_slice(b"{\"type\":\"user.mess");
        let torn = read(&bytes);
        assert_eq!(
            (torn.state(), torn.model.as_deref()),
            (EndState::Clean, Some("a"))
        );
    }
}
