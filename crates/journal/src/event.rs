//! The event envelope of the Copilot runtime and its exact line serialization.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::event_type::EventType;
use crate::payload::Payload;
use crate::timestamp::Timestamp;

/// One session event: the envelope with the event's `data` kept as raw JSON.
///
/// `data` stays as the exact bytes that were read (or that a typed payload serialized to),
/// so an event read from a journal written by any runtime is written back byte for byte.
/// Typed access goes through [`Event::payload`].
#[derive(Clone)]
pub struct Event {
    /// The `type` discriminator.
    pub event_type: EventType,
    /// The event's `data` object, as raw JSON.
    pub data: Box<RawValue>,
    /// Unique event id (UUID v4).
    pub id: Uuid,
    /// When the event was created.
    pub timestamp: Timestamp,
    /// The previous event of the session, `None` for the first.
    pub parent_id: Option<Uuid>,
    /// Sub-agent instance id; absent for the main agent.
    pub agent_id: Option<String>,
    /// How the `ephemeral` key appeared in the text this event was read from.
    pub live_mark: LiveMark,
}

/// Presence and position of the `"ephemeral":true` key in a live copy of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LiveMark {
    /// No `ephemeral` key (every line on disk).
    #[default]
    Absent,
    /// `"ephemeral":true` right after `data` (how live copies are written).
    AfterData,
    /// `"ephemeral":true` right before `data` (seen in some runtime live copies).
    BeforeData,
}

/// Why an event could not be built or read.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The text is not a JSON object with the envelope's keys.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// `data` does not match the typed payload of its type.
    #[error("`data` of {event_type} does not match the schema: {source}")]
    Payload {
        /// The event's type.
        event_type: String,
        /// What serde said.
        source: serde_json::Error,
    },
}

impl Event {
    /// Builds a new event of a typed payload, with a fresh id and the current time.
    pub fn new<P: Payload>(payload: &P, parent_id: Option<Uuid>) -> Self {
        Self::with_raw_data(P::event_type(), payload_json(payload), parent_id)
    }

    /// Builds a new event from a type name and raw `data` (any type, known or not).
    pub fn with_raw_data(
        event_type: EventType,
        data: Box<RawValue>,
        parent_id: Option<Uuid>,
    ) -> Self {
        Event {
            event_type,
            data,
            id: Uuid::new_v4(),
            timestamp: Timestamp::now(),
            parent_id,
            agent_id: None,
            live_mark: LiveMark::Absent,
        }
    }

    /// Parses `data` as the typed payload `P`; fails when the type differs or a field is wrong.
    pub fn payload<P: Payload>(&self) -> Result<P, EventError> {
        if self.event_type.as_str() != P::TYPE {
            return Err(EventError::Payload {
                event_type: self.event_type.to_string(),
                source: de::Error::custom(format!("expected type {}", P::TYPE)),
            });
        }
        serde_json::from_str(self.data.get()).map_err(|source| EventError::Payload {
            event_type: self.event_type.to_string(),
            source,
        })
    }

    /// True when this event's type must never be written to disk.
    pub fn is_ephemeral(&self) -> bool {
        self.event_type.is_ephemeral()
    }

    /// True when this event goes to live subscribers only: its type is ephemeral, or this one
    /// event was made live only (it carries the live mark, e.g. an `ephemeral` log entry of a
    /// type that is otherwise persisted).
    pub fn is_live_only(&self) -> bool {
        self.is_ephemeral() || self.live_mark != LiveMark::Absent
    }

    /// Parses one journal line (without its `\n`).
    pub fn from_line(line: &[u8]) -> Result<Self, EventError> {
        Ok(serde_json::from_slice(line)?)
    }

    /// Serializes the event as it is stored on disk: `type, data, id, timestamp, parentId`,
    /// compact, U+2028/U+2029 escaped, no `ephemeral` key and no trailing newline.
    pub fn write_persisted(&self, out: &mut Vec<u8>) {
        self.write(out, LiveMark::Absent);
    }

    /// Serializes the live copy sent to subscribers; types the schema calls ephemeral carry
    /// `"ephemeral":true` (the persisted rewind marker too, as the runtime sends it).
    pub fn write_live(&self, out: &mut Vec<u8>) {
        let schema_ephemeral = crate::event_type::schema_persistence(self.event_type.as_str())
            == crate::event_type::Persistence::Ephemeral;
        let mark = if schema_ephemeral {
            match self.live_mark {
                LiveMark::BeforeData => LiveMark::BeforeData,
                _ => LiveMark::AfterData,
            }
        } else {
            self.live_mark
        };
        self.write(out, mark);
    }

    /// Serializes the event exactly as it was read (keeps the `ephemeral` key where it was).
    pub fn write_as_read(&self, out: &mut Vec<u8>) {
        self.write(out, self.live_mark);
    }

    /// The persisted line as a `String` (no newline).
    pub fn to_persisted_line(&self) -> String {
        let mut out = Vec::with_capacity(self.data.get().len() + 160);
        self.write_persisted(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The live copy as a JSON value (for subscribers that want a tree).
    pub fn to_live_value(&self) -> serde_json::Value {
        let mut out = Vec::with_capacity(self.data.get().len() + 180);
        self.write_live(&mut out);
        serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null)
    }

    fn write(&self, out: &mut Vec<u8>, mark: LiveMark) {
        let start = out.len();
        out.extend_from_slice(b"{\"type\":");
        write_json_str(self.event_type.as_str(), out);
        if mark == LiveMark::BeforeData {
            out.extend_from_slice(b",\"ephemeral\":true");
        }
        out.extend_from_slice(b",\"data\":");
        out.extend_from_slice(self.data.get().as_bytes());
        if mark == LiveMark::AfterData {
            out.extend_from_slice(b",\"ephemeral\":true");
        }
        // The runtime writes a sub-agent's id right after `data` (and `ephemeral`).
        if let Some(agent) = &self.agent_id {
            out.extend_from_slice(b",\"agentId\":");
            write_json_str(agent, out);
        }
        out.extend_from_slice(b",\"id\":\"");
        let mut buf = Uuid::encode_buffer();
        out.extend_from_slice(self.id.hyphenated().encode_lower(&mut buf).as_bytes());
        out.extend_from_slice(b"\",\"timestamp\":\"");
        self.timestamp.write_to(out);
        out.extend_from_slice(b"\",\"parentId\":");
        match self.parent_id {
            Some(p) => {
                out.push(b'"');
                out.extend_from_slice(p.hyphenated().encode_lower(&mut buf).as_bytes());
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        escape_line_separators(out, start);
    }
}

/// Serializes a typed payload to raw JSON. Payloads are plain data; failure is a bug.
pub(crate) fn payload_json<P: Payload>(payload: &P) -> Box<RawValue> {
    let text = serde_json::to_string(payload).unwrap_or_else(|e| {
        // Only maps with non-string keys or failing Serialize impls can fail; payloads have neither.
        panic!("payload {} failed to serialize: {e}", P::TYPE)
    });
    RawValue::from_string(text).unwrap_or_else(|e| panic!("payload {} is not JSON: {e}", P::TYPE))
}

fn write_json_str(s: &str, out: &mut Vec<u8>) {
    // serde_json never fails writing a str into a Vec.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Replaces raw U+2028/U+2029 (UTF-8 `E2 80 A8`/`E2 80 A9`) after `start` with `\u2028`/`\u2029`.
///
/// They are legal in JSON but end a line for JavaScript readers of the journal. They can only
/// occur inside strings, where the escape means the same character.
fn escape_line_separators(out: &mut Vec<u8>, start: usize) {
    let Some(first) = find_line_separator(&out[start..]) else {
        return;
    };
    let mut fixed = Vec::with_capacity(out.len() + 8);
    fixed.extend_from_slice(&out[..start + first]);
    let mut rest = &out[start + first..];
    while let Some(i) = find_line_separator(rest) {
        fixed.extend_from_slice(&rest[..i]);
        fixed.extend_from_slice(if rest[i + 2] == 0xA8 {
            b"\\u2028"
        } else {
            b"\\u2029"
        });
        rest = &rest[i + 3..];
    }
    fixed.extend_from_slice(rest);
    *out = fixed;
}

fn find_line_separator(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(0xE2, &bytes[from..]) {
        let at = from + i;
        if bytes.len() >= at + 3 && bytes[at + 1] == 0x80 && matches!(bytes[at + 2], 0xA8 | 0xA9) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_persisted_line())
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.event_type == other.event_type
            && self.data.get() == other.data.get()
            && self.id == other.id
            && self.timestamp == other.timestamp
            && self.parent_id == other.parent_id
            && self.agent_id == other.agent_id
    }
}

impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = Vec::new();
        self.write_as_read(&mut out);
        let raw: Box<RawValue> = serde_json::from_slice(&out).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object with type, data, id, timestamp and parentId")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut event_type: Option<EventType> = None;
        let mut data: Option<Box<RawValue>> = None;
        let mut id: Option<Uuid> = None;
        let mut timestamp: Option<Timestamp> = None;
        let mut parent_id: Option<Option<Uuid>> = None;
        let mut agent_id: Option<String> = None;
        let mut live_mark = LiveMark::Absent;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "type" => {
                    let name = map.next_value::<std::borrow::Cow<'de, str>>()?;
                    set_once(&mut event_type, EventType::new(&name), "type")?;
                }
                "data" => set_once(&mut data, map.next_value()?, "data")?,
                "id" => set_once(&mut id, map.next_value()?, "id")?,
                "timestamp" => set_once(&mut timestamp, map.next_value()?, "timestamp")?,
                "parentId" => set_once(&mut parent_id, map.next_value()?, "parentId")?,
                "agentId" => set_once(&mut agent_id, map.next_value()?, "agentId")?,
                "ephemeral" => {
                    let flag: bool = map.next_value()?;
                    if flag {
                        live_mark = if data.is_some() {
                            LiveMark::AfterData
                        } else {
                            LiveMark::BeforeData
                        };
                    }
                }
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown top-level key `{other}` (the envelope allows type, data, id, timestamp, parentId, ephemeral, agentId)"
                    )));
                }
            }
        }
        let data = data.ok_or_else(|| de::Error::missing_field("data"))?;
        if !data.get().starts_with('{') {
            return Err(de::Error::custom("`data` must be a JSON object"));
        }
        Ok(Event {
            event_type: event_type.ok_or_else(|| de::Error::missing_field("type"))?,
            data,
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            timestamp: timestamp.ok_or_else(|| de::Error::missing_field("timestamp"))?,
            parent_id: parent_id.ok_or_else(|| de::Error::missing_field("parentId"))?,
            agent_id,
            live_mark,
        })
    }
}

fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(key));
    }
    *slot = Some(value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"439426cc-d140-40b1-a7f4-a48af710017c","timestamp":"2026-11-29T14:34:35.148Z","parentId":"46ebbc9b-45ca-4607-b40c-3ec209918ade"}"#;

    #[test]
    fn persisted_line_round_trips() {
        let ev = Event::from_line(LINE.as_bytes()).expect("parse");
        assert_eq!(ev.event_type.as_str(), "assistant.turn_end");
        assert_eq!(ev.to_persisted_line(), LINE);
    }

    #[test]
    fn live_mark_position_is_kept() {
        let before = r#"{"type":"session.usage_info","ephemeral":true,"data":{},"id":"439426cc-d140-40b1-a7f4-a48af710017c","timestamp":"2026-11-29T14:34:35.148Z","parentId":null}"#;
        let ev = Event::from_line(before.as_bytes()).expect("parse");
        assert_eq!(ev.live_mark, LiveMark::BeforeData);
        let mut out = Vec::new();
        ev.write_as_read(&mut out);
        assert_eq!(out, before.as_bytes());
        out.clear();
        ev.write_persisted(&mut out);
        assert!(!String::from_utf8_lossy(&out).contains("ephemeral"));
    }

    #[test]
    fn live_copy_of_ephemeral_type_is_marked_after_data() {
        let mut ev = Event::from_line(LINE.as_bytes()).expect("parse");
        ev.event_type = EventType::new("session.idle");
        let mut out = Vec::new();
        ev.write_live(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r#""data":{"turnId":"0"},"ephemeral":true,"id""#),
            "{text}"
        );
    }

    #[test]
    fn line_separators_are_escaped() {
        let data = RawValue::from_string("{\"content\":\"a\u{2028}b\u{2029}c\"}".into()).unwrap();
        let ev = Event::with_raw_data(EventType::new("user.message"), data, None);
        let line = ev.to_persisted_line();
        assert!(line.contains(r#""a\u2028b\u2029c""#), "{line}");
        let back = Event::from_line(line.as_bytes()).unwrap();
        let v: serde_json::Value = serde_json::from_str(back.data.get()).unwrap();
        assert_eq!(v["content"], "a\u{2028}b\u{2029}c");
    }

    #[test]
    fn envelope_errors_are_clear() {
        let missing =
            r#"{"type":"x","data":{},"timestamp":"2026-11-29T14:34:35.148Z","parentId":null}"#;
        let err = Event::from_line(missing.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `id`"), "{err}");
        let extra = LINE.replace("\"parentId\"", "\"extra\":1,\"parentId\"");
        let err = Event::from_line(extra.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("unknown top-level key `extra`"), "{err}");
        let not_obj = LINE.replace(r#"{"turnId":"0"}"#, "[1]");
        assert!(Event::from_line(not_obj.as_bytes()).is_err());
    }
}
