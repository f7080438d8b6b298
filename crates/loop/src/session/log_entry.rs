//! Client log entries (`session.log`): a message the client wants in the session's timeline,
//! recorded as the Copilot CLI records it: `session.info`, `session.warning` or
//! `session.error`, with the entry's category as `infoType`/`warningType`/`errorType`.

use serde::{Deserialize, Serialize};
use turnstile_journal::payload::{Payload, SessionError, SessionWarning};
use turnstile_journal::{Event, LiveMark, Uuid};

/// Severity of a log entry; picks the event type it is recorded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// `session.info`.
    Info,
    /// `session.warning`.
    Warning,
    /// `session.error`.
    Error,
}

impl LogLevel {
    /// The level named `name` (`info`, `warning`, `error`), if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "info" => Some(LogLevel::Info),
            "warning" => Some(LogLevel::Warning),
            "error" => Some(LogLevel::Error),
            _ => None,
        }
    }
}

/// One client log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Severity.
    pub level: LogLevel,
    /// Category (`notification` when the client names none, as in the Copilot CLI).
    pub category: String,
    /// The text, for people.
    pub message: String,
    /// A link with more to read.
    pub url: Option<String>,
    /// A tip shown with the message; kept only on `info` entries (the schema's rule).
    pub tip: Option<String>,
    /// Live only (`ephemeral: true`): sent to the subscribers with `"ephemeral":true`, never
    /// written to the journal, as the Copilot CLI treats such an entry.
    pub ephemeral: bool,
}

impl LogEntry {
    /// An entry of `level` in the default `notification` category.
    pub fn new(level: LogLevel, message: impl Into<String>) -> Self {
        LogEntry {
            level,
            category: "notification".into(),
            message: message.into(),
            url: None,
            tip: None,
            ephemeral: false,
        }
    }

    /// The event recording this entry, chained after `parent`; a live-only entry carries the
    /// live mark, which keeps it out of the journal and the fold's persisted state.
    pub(super) fn event(&self, parent: Option<Uuid>) -> Event {
        let mut event = self.event_of_level(parent);
        if self.ephemeral {
            event.live_mark = LiveMark::AfterData;
        }
        event
    }

    fn event_of_level(&self, parent: Option<Uuid>) -> Event {
        match self.level {
            LogLevel::Info => Event::new(
                &SessionInfo {
                    info_type: self.category.clone(),
                    message: self.message.clone(),
                    url: self.url.clone(),
                    tip: self.tip.clone(),
                },
                parent,
            ),
            LogLevel::Warning => Event::new(
                &SessionWarning {
                    warning_type: self.category.clone(),
                    message: self.message.clone(),
                    url: self.url.clone(),
                    remediation: None,
                },
                parent,
            ),
            LogLevel::Error => Event::new(
                &SessionError {
                    error_type: self.category.clone(),
                    message: self.message.clone(),
                    url: self.url.clone(),
                    ..Default::default()
                },
                parent,
            ),
        }
    }
}

/// `session.info`: an informational message in the timeline (the schema's `InfoData`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionInfo {
    /// Category, e.g. `notification`.
    info_type: String,
    /// The text.
    message: String,
    /// A link with more to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// A tip shown with the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tip: Option<String>,
}

impl Payload for SessionInfo {
    const TYPE: &'static str = "session.info";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn levels_pick_the_event_type_and_category_key() {
        let cases = [
            (LogLevel::Info, "session.info", "infoType"),
            (LogLevel::Warning, "session.warning", "warningType"),
            (LogLevel::Error, "session.error", "errorType"),
        ];
        for (level, ty, key) in cases {
            let event = LogEntry::new(level, "hello log").event(None);
            assert_eq!(event.event_type.as_str(), ty);
            let data: Value = serde_json::from_str(event.data.get()).unwrap();
            assert_eq!(data, json!({key: "notification", "message": "hello log"}));
            assert!(!event.is_ephemeral());
        }
    }

    #[test]
    fn tips_are_kept_on_info_only() {
        let mut entry = LogEntry::new(LogLevel::Warning, "m");
        entry.tip = Some("t".into());
        entry.url = Some("https://example.invalid/x".into());
        let data: Value = serde_json::from_str(entry.event(None).data.get()).unwrap();
        assert_eq!(data.get("tip"), None);
        assert_eq!(data["url"], "https://example.invalid/x");
        entry.level = LogLevel::Info;
        let data: Value = serde_json::from_str(entry.event(None).data.get()).unwrap();
        assert_eq!(data["tip"], "t");
    }

    #[test]
    fn an_ephemeral_entry_is_marked_live_only() {
        let mut entry = LogEntry::new(LogLevel::Info, "m");
        entry.ephemeral = true;
        let event = entry.event(None);
        assert!(event.is_live_only());
        let mut live = Vec::new();
        event.write_live(&mut live);
        assert!(
            String::from_utf8(live)
                .unwrap()
                .contains(r#""ephemeral":true"#)
        );
        entry.ephemeral = false;
        assert!(!entry.event(None).is_live_only());
    }

    #[test]
    fn levels_parse_by_their_schema_names() {
        assert_eq!(LogLevel::parse("warning"), Some(LogLevel::Warning));
        assert_eq!(LogLevel::parse("debug"), None);
    }
}
