//! How a session reached its model, remembered in its journal so that `resume` goes back to
//! the same place: the model as the Copilot runtime records it (`session.start` and
//! `session.resume`'s `selectedModel`, `session.model_change`'s `newModel`), and the endpoint
//! (provider, wire API, base URL or replay fixture), which the runtime's events have no field
//! for, in a `session.info` of the runtime's `model` category. Never the key or a header.
//!
//! The endpoint entry is written by `run` after `session.start`, and by `resume` whenever the
//! endpoint in effect differs from the last one recorded (a Copilot CLI journal has none); its
//! text is for people and for [`Reached::read`] alike, one fixed shape:
//! `model server: provider openai, wire API completions, base URL http://127.0.0.1:8000/v1`.

use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use turnstile_journal::BoundedLines;
use turnstile_loop::{LogEntry, LogLevel};

use crate::provider_flags::{ProviderFlags, ProviderKind, WireApiArg};

/// `infoType` of the endpoint entry (the schema names `model` among the runtime's categories).
pub const INFO_TYPE: &str = "model";
/// Start of the endpoint entry's message.
const PREFIX: &str = "model server: provider ";

/// Where answers come from: what the entry records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An HTTP model server.
    Http {
        /// Its kind (`openai`, `azure` or `anthropic`).
        provider: ProviderKind,
        /// The OpenAI wire format.
        wire_api: WireApiArg,
        /// Its base URL.
        base_url: String,
    },
    /// The answers of a recorded journal.
    Replay {
        /// The journal's path.
        fixture: String,
    },
}

impl Endpoint {
    /// The entry's message.
    pub fn message(&self) -> String {
        match self {
            Endpoint::Http {
                provider,
                wire_api,
                base_url,
            } => format!(
                "{PREFIX}{}, wire API {}, base URL {base_url}",
                kind_name(*provider),
                wire_name(*wire_api)
            ),
            Endpoint::Replay { fixture } => format!("{PREFIX}replay, fixture {fixture}"),
        }
    }

    /// The endpoint a message of [`Endpoint::message`]'s shape names; `None` for any other.
    pub fn parse(message: &str) -> Option<Self> {
        let rest = message.strip_prefix(PREFIX)?;
        if let Some(fixture) = rest.strip_prefix("replay, fixture ") {
            return Some(Endpoint::Replay {
                fixture: fixture.to_owned(),
            });
        }
        let (kind, rest) = rest.split_once(", wire API ")?;
        let (wire, base_url) = rest.split_once(", base URL ")?;
        let provider = [
            ProviderKind::Openai,
            ProviderKind::Azure,
            ProviderKind::Anthropic,
        ]
        .into_iter()
        .find(|k| kind_name(*k) == kind)?;
        let wire_api = [WireApiArg::Completions, WireApiArg::Responses]
            .into_iter()
            .find(|w| wire_name(*w) == wire)?;
        Some(Endpoint::Http {
            provider,
            wire_api,
            base_url: base_url.to_owned(),
        })
    }

    /// The log entry recording this endpoint.
    pub fn entry(&self) -> LogEntry {
        let mut entry = LogEntry::new(LogLevel::Info, self.message());
        entry.category = INFO_TYPE.into();
        if let Endpoint::Http { base_url, .. } = self {
            entry.url = Some(base_url.clone());
        }
        entry
    }
}

/// What a journal remembers of how its session reached the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reached {
    /// The model selected last (start, resume or a model change of the main agent).
    pub model: Option<String>,
    /// The endpoint recorded last.
    pub endpoint: Option<Endpoint>,
}

impl Reached {
    /// Reads `journal`: one pass that parses only the lines of the four event types that say
    /// something here (each line starts with its type: the writer's key order).
    pub fn read(journal: &Path) -> Result<Self> {
        let file = std::fs::File::open(journal)
            .with_context(|| format!("cannot open {}", journal.display()))?;
        let mut lines = BoundedLines::new(
            BufReader::with_capacity(1 << 16, file),
            turnstile_journal::max_line_bytes(),
        );
        let mut reached = Reached::default();
        while let Some(info) = lines
            .next_line()
            .with_context(|| format!("cannot read {}", journal.display()))?
        {
            if info.oversized {
                continue;
            }
            let bytes = lines.bytes();
            let wanted = [
                "session.start",
                "session.resume",
                "session.model_change",
                "session.info",
            ]
            .iter()
            .any(|ty| {
                bytes
                    .strip_prefix(b"{\"type\":\"")
                    .and_then(|b| b.strip_prefix(ty.as_bytes()))
                    .is_some_and(|b| b.starts_with(b"\""))
            });
            if wanted {
                // A line that does not parse is the fsck's business, not the resume's.
                if let Ok(event) = serde_json::from_slice::<serde_json::Value>(bytes) {
                    reached.apply(&event);
                }
            }
        }
        Ok(reached)
    }

    fn apply(&mut self, event: &serde_json::Value) {
        if event.get("agentId").is_some_and(|a| !a.is_null()) {
            return;
        }
        let data = &event["data"];
        let text = |key: &str| data[key].as_str().map(str::to_owned);
        match event["type"].as_str() {
            Some("session.start" | "session.resume") => {
                if let Some(model) = text("selectedModel") {
                    self.model = Some(model);
                }
            }
            Some("session.model_change") => {
                if let Some(model) = text("newModel") {
                    self.model = Some(model);
                }
            }
            Some("session.info") if data["infoType"] == INFO_TYPE => {
                if let Some(endpoint) = text("message").as_deref().and_then(Endpoint::parse) {
                    self.endpoint = Some(endpoint);
                }
            }
            _ => {}
        }
    }

    /// `flags` with what they leave unsaid taken from this record: the model unless `--model`,
    /// the endpoint unless `--provider` names another kind (each of its parts unless its own
    /// flag is given). The environment and the settings files come after the record.
    pub fn fill(
        &self,
        flags: &ProviderFlags,
        fixture: Option<&Path>,
    ) -> (ProviderFlags, Option<std::path::PathBuf>) {
        let mut flags = flags.clone();
        let mut fixture = fixture.map(Path::to_path_buf);
        if flags.model.is_none() {
            flags.model = self.model.clone();
        }
        match &self.endpoint {
            Some(Endpoint::Http {
                provider,
                wire_api,
                base_url,
            }) if flags.provider.is_none_or(|p| p == *provider) => {
                flags.provider = Some(*provider);
                flags.wire_api.get_or_insert(*wire_api);
                flags.base_url.get_or_insert_with(|| base_url.clone());
            }
            Some(Endpoint::Replay { fixture: recorded })
                if flags.provider.is_none_or(|p| p == ProviderKind::Replay) =>
            {
                flags.provider = Some(ProviderKind::Replay);
                fixture.get_or_insert_with(|| recorded.into());
            }
            _ => {}
        }
        (flags, fixture)
    }
}

/// The provider's name as `--provider` spells it.
pub fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Azure => "azure",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Replay => "replay",
    }
}

fn wire_name(wire: WireApiArg) -> &'static str {
    match wire {
        WireApiArg::Completions => "completions",
        WireApiArg::Responses => "responses",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_reads_back_as_the_endpoint_it_was_written_for() {
        for endpoint in [
            Endpoint::Http {
                provider: ProviderKind::Anthropic,
                wire_api: WireApiArg::Responses,
                base_url: "https://api.example.com/v1, odd".into(),
            },
            Endpoint::Http {
                provider: ProviderKind::Openai,
                wire_api: WireApiArg::Completions,
                base_url: "http://127.0.0.1:8011/v1".into(),
            },
            Endpoint::Replay {
                fixture: "/tmp/a, b/events.jsonl".into(),
            },
        ] {
            assert_eq!(Endpoint::parse(&endpoint.message()), Some(endpoint));
        }
        assert_eq!(
            Endpoint::parse("model server: provider gpt, wire API x"),
            None
        );
        assert_eq!(Endpoint::parse("hello"), None);
    }

    #[test]
    fn the_last_record_wins_and_sub_agents_are_not_the_session() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("events.jsonl");
        let info = |url: &str| {
            serde_json::json!({"type": "session.info", "data": {"infoType": "model",
                "message": format!("model server: provider openai, wire API completions, base URL {url}")}})
            .to_string()
        };
        let lines = [
            r#"{"type":"session.start","data":{"selectedModel":"a"}}"#.to_owned(),
            info("http://127.0.0.1:1/v1"),
            r#"{"type":"session.model_change","data":{"newModel":"b"}}"#.to_owned(),
            r#"{"type":"session.model_change","data":{"newModel":"child"},"agentId":"x"}"#
                .to_owned(),
            r#"{"type":"user.message","data":{"content":"{\"type\":\"session.start\",\"selectedModel\":\"q\"}"}}"#.to_owned(),
            info("http://127.0.0.1:2/v1"),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let reached = Reached::read(&path).unwrap();
        assert_eq!(reached.model.as_deref(), Some("b"));
        assert_eq!(
            reached.endpoint,
            Some(Endpoint::Http {
                provider: ProviderKind::Openai,
                wire_api: WireApiArg::Completions,
                base_url: "http://127.0.0.1:2/v1".into()
            })
        );
    }
}
