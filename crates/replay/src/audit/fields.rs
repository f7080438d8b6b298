//! The few `data` fields the invariants read, decoded leniently from raw JSON values.
//!
//! Every path that reads a line (the fixed-layout fast path, the full-parse fallback and the
//! streaming path for giant lines) hands the raw JSON of each top-level `data` member to the same
//! [`Fields::set`], so all paths see the same values: a field of the wrong JSON type is absent,
//! a repeated key keeps its last value, and strings are stored once in a per-chunk [`Store`].

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// A string stored in a [`Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// Strings and tool requests of the lines of one chunk.
#[derive(Debug, Default)]
pub(crate) struct Store {
    text: String,
    /// `(toolCallId, name)` of tool requests.
    pub(crate) requests: Vec<(Option<Span>, Option<Span>)>,
}

impl Store {
    /// Stores a string.
    pub(crate) fn push(&mut self, s: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(s);
        // Chunks are at most a few MiB of input, so offsets fit in u32; saturate defensively.
        Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            len: u32::try_from(s.len()).unwrap_or(0),
        }
    }

    /// Forgets every string (the store is reused for the next line).
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.requests.clear();
    }

    /// Bytes held (for memory accounting in tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }

    /// The string of a span.
    pub(crate) fn get(&self, span: Span) -> &str {
        let start = span.start as usize;
        self.text.get(start..start + span.len as usize).unwrap_or("")
    }

    /// The string of an optional span.
    pub(crate) fn opt(&self, span: Option<Span>) -> Option<&str> {
        span.map(|s| self.get(s))
    }
}

/// Which event kinds need which fields (so the fast path stores nothing it will not read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    TurnStart,
    TurnEnd,
    UserMessage,
    AssistantMessage,
    ToolStart,
    ToolComplete,
    PermissionRequested,
    PermissionCompleted,
    ExternalRequested,
    ExternalCompleted,
    TaskComplete,
    SessionError,
    SessionResume,
    Abort,
    Other,
}

impl Kind {
    /// The kind of a type name.
    pub(crate) fn of(name: &str) -> Kind {
        match name {
            "assistant.turn_start" => Kind::TurnStart,
            "assistant.turn_end" => Kind::TurnEnd,
            "user.message" => Kind::UserMessage,
            "assistant.message" => Kind::AssistantMessage,
            "tool.execution_start" => Kind::ToolStart,
            "tool.execution_complete" => Kind::ToolComplete,
            "permission.requested" => Kind::PermissionRequested,
            "permission.completed" => Kind::PermissionCompleted,
            "external_tool.requested" => Kind::ExternalRequested,
            "external_tool.completed" => Kind::ExternalCompleted,
            "session.task_complete" => Kind::TaskComplete,
            "session.error" => Kind::SessionError,
            "session.resume" => Kind::SessionResume,
            "abort" => Kind::Abort,
            _ => Kind::Other,
        }
    }

    /// Whether any field of this kind is read.
    pub(crate) fn reads_fields(self) -> bool {
        !matches!(self, Kind::SessionError | Kind::SessionResume | Kind::Abort | Kind::Other)
    }

    fn wants(self, key: Key) -> bool {
        use Key::*;
        match self {
            Kind::TurnStart => matches!(key, TurnId | InteractionId),
            Kind::TurnEnd => matches!(key, TurnId),
            Kind::UserMessage => matches!(key, IsAutopilotContinuation),
            Kind::AssistantMessage => matches!(key, ToolRequests),
            Kind::ToolStart => matches!(key, ToolCallId | ToolName),
            Kind::ToolComplete => matches!(key, ToolCallId | Success),
            Kind::PermissionRequested => matches!(key, RequestId | PermissionRequest),
            Kind::PermissionCompleted => matches!(key, RequestId),
            Kind::ExternalRequested => matches!(key, RequestId | ToolCallId | ToolName),
            Kind::ExternalCompleted => matches!(key, RequestId),
            Kind::TaskComplete => matches!(key, Summary | Success),
            Kind::SessionError | Kind::SessionResume | Kind::Abort | Kind::Other => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    TurnId,
    InteractionId,
    ToolCallId,
    ToolName,
    Success,
    RequestId,
    PermissionRequest,
    IsAutopilotContinuation,
    Summary,
    ToolRequests,
}

impl Key {
    fn of(name: &[u8]) -> Option<Key> {
        Some(match name {
            b"turnId" => Key::TurnId,
            b"interactionId" => Key::InteractionId,
            b"toolCallId" => Key::ToolCallId,
            b"toolName" => Key::ToolName,
            b"success" => Key::Success,
            b"requestId" => Key::RequestId,
            b"permissionRequest" => Key::PermissionRequest,
            b"isAutopilotContinuation" => Key::IsAutopilotContinuation,
            b"summary" => Key::Summary,
            b"toolRequests" => Key::ToolRequests,
            _ => return None,
        })
    }
}

/// The decoded fields of one event's `data`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) turn_id: Option<Span>,
    pub(crate) interaction_id: Option<Span>,
    pub(crate) tool_call_id: Option<Span>,
    pub(crate) tool_name: Option<Span>,
    pub(crate) success: Option<bool>,
    pub(crate) request_id: Option<Span>,
    /// `permissionRequest.toolCallId`.
    pub(crate) permission_tool_call_id: Option<Span>,
    pub(crate) autopilot: Option<bool>,
    pub(crate) summary: Option<Span>,
    /// Range of this event's entries in [`Store::requests`].
    pub(crate) requests: (u32, u32),
}

impl Fields {
    /// Records one top-level member of `data` (`key` unescaped, `value` its raw JSON) if
    /// `kind` reads it; `None` as kind means "the type is not known yet": keep every field.
    pub(crate) fn set(&mut self, kind: Option<Kind>, key: &[u8], value: &[u8], store: &mut Store) {
        let Some(key) = Key::of(key) else { return };
        if let Some(kind) = kind {
            if !kind.wants(key) {
                return;
            }
        }
        let text = |store: &mut Store| decode_str(value).map(|s| store.push(&s));
        match key {
            Key::TurnId => self.turn_id = text(store),
            Key::InteractionId => self.interaction_id = text(store),
            Key::ToolCallId => self.tool_call_id = text(store),
            Key::ToolName => self.tool_name = text(store),
            Key::RequestId => self.request_id = text(store),
            Key::Summary => self.summary = text(store),
            Key::Success => self.success = decode_bool(value),
            Key::IsAutopilotContinuation => self.autopilot = decode_bool(value),
            Key::PermissionRequest => {
                self.permission_tool_call_id = serde_json::from_slice::<PermissionRequestLite>(value)
                    .ok()
                    .and_then(|p| p.tool_call_id)
                    .map(|s| store.push(&s));
            }
            Key::ToolRequests => {
                let start = store.requests.len();
                if let Ok(list) = serde_json::from_slice::<RequestList>(value) {
                    for (id, name) in list.0 {
                        let id = id.map(|s| store.push(&s));
                        let name = name.map(|s| store.push(&s));
                        store.requests.push((id, name));
                    }
                }
                self.requests = (
                    u32::try_from(start).unwrap_or(u32::MAX),
                    u32::try_from(store.requests.len() - start).unwrap_or(0),
                );
            }
        }
    }

    /// Clears what `kind` does not read (after a parse that did not know the type up front).
    pub(crate) fn retain_for(&mut self, kind: Kind) {
        let keep = |key: Key| kind.wants(key);
        if !keep(Key::TurnId) {
            self.turn_id = None;
        }
        if !keep(Key::InteractionId) {
            self.interaction_id = None;
        }
        if !keep(Key::ToolCallId) {
            self.tool_call_id = None;
        }
        if !keep(Key::ToolName) {
            self.tool_name = None;
        }
        if !keep(Key::Success) {
            self.success = None;
        }
        if !keep(Key::RequestId) {
            self.request_id = None;
        }
        if !keep(Key::PermissionRequest) {
            self.permission_tool_call_id = None;
        }
        if !keep(Key::IsAutopilotContinuation) {
            self.autopilot = None;
        }
        if !keep(Key::Summary) {
            self.summary = None;
        }
        if !keep(Key::ToolRequests) {
            self.requests = (0, 0);
        }
    }

    /// The tool requests as `(toolCallId, name)`.
    pub(crate) fn requests<'s>(&self, store: &'s Store) -> &'s [(Option<Span>, Option<Span>)] {
        let (start, len) = (self.requests.0 as usize, self.requests.1 as usize);
        store.requests.get(start..start + len).unwrap_or(&[])
    }
}

/// Whether any kind reads the member `key` of `data`.
pub(crate) fn is_wanted_key(key: &[u8]) -> bool {
    Key::of(key).is_some()
}

/// The unescaped bytes of a raw object key (with its quotes); `None` when it cannot be decoded.
pub(crate) fn decode_key(quoted: &[u8]) -> Option<Cow<'_, [u8]>> {
    let inner = quoted.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_slice::<KeyBytes>(quoted).ok().map(|k| Cow::Owned(k.0))
}

/// A JSON string value's text; `None` for any other JSON type (or an undecodable escape).
pub(crate) fn decode_str(value: &[u8]) -> Option<Cow<'_, str>> {
    let inner = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') {
        // Already validated JSON (so UTF-8 and no raw control characters).
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(value).ok().map(Cow::Owned)
}

fn decode_bool(value: &[u8]) -> Option<bool> {
    match value {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}

/// An object key as raw decoded bytes.
///
/// Read through `deserialize_bytes`, so a key with a lone surrogate escape is just a key that
/// matches nothing, as in the fast path, instead of an error that would fail the whole line.
pub(crate) struct KeyBytes(pub(crate) Vec<u8>);

impl<'de> de::Deserialize<'de> for KeyBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyBytes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<KeyBytes, E> {
                Ok(KeyBytes(v.to_vec()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyBytes, E> {
                Ok(KeyBytes(v.as_bytes().to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// Reads a member's raw value and decodes it as a string, leniently.
fn raw_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<String>, A::Error> {
    let raw: Box<RawValue> = map.next_value()?;
    Ok(decode_str(raw.get().as_bytes()).map(Cow::into_owned))
}

/// `permissionRequest` reduced to its `toolCallId`; any JSON is accepted.
struct PermissionRequestLite {
    tool_call_id: Option<String>,
}

impl<'de> de::Deserialize<'de> for PermissionRequestLite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PermissionRequestLite;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut tool_call_id = None;
                while let Some(key) = map.next_key::<KeyBytes>()? {
                    if key.0 == b"toolCallId" {
                        tool_call_id = raw_str(&mut map)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(PermissionRequestLite { tool_call_id })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(PermissionRequestLite { tool_call_id: None })
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(PermissionRequestLite { tool_call_id: None })
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(PermissionRequestLite { tool_call_id: None })
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(PermissionRequestLite { tool_call_id: None })
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(PermissionRequestLite { tool_call_id: None })
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(PermissionRequestLite { tool_call_id: None })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(PermissionRequestLite { tool_call_id: None })
            }
        }
        d.deserialize_any(V)
    }
}

/// `toolRequests` reduced to `(toolCallId, name)` pairs; non-objects are skipped, a non-array
/// is an empty list.
struct RequestList(Vec<(Option<String>, Option<String>)>);

struct RequestLite(Option<(Option<String>, Option<String>)>);

impl<'de> de::Deserialize<'de> for RequestList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RequestList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<RequestLite>()? {
                    if let Some(pair) = item.0 {
                        out.push(pair);
                    }
                }
                Ok(RequestList(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RequestList(Vec::new()))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RequestList(Vec::new()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RequestList(Vec::new()))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RequestList(Vec::new()))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RequestList(Vec::new()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RequestList(Vec::new()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RequestList(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> de::Deserialize<'de> for RequestLite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RequestLite;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut id, mut name) = (None, None);
                while let Some(key) = map.next_key::<KeyBytes>()? {
                    match key.0.as_slice() {
                        b"toolCallId" => id = raw_str(&mut map)?,
                        b"name" => name = raw_str(&mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(RequestLite(Some((id, name))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RequestLite(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RequestLite(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RequestLite(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RequestLite(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RequestLite(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RequestLite(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RequestLite(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_lenient() {
        assert_eq!(decode_str(br#""abc""#).as_deref(), Some("abc"));
        assert_eq!(decode_str(br#""a\"b\u0041""#).as_deref(), Some("a\"bA"));
        assert_eq!(decode_str(b"12"), None);
        assert_eq!(decode_str(br#""\ud800""#), None);
    }

    #[test]
    fn tool_requests_skip_non_objects() {
        let mut store = Store::default();
        let mut f = Fields::default();
        let raw = br#"[{"toolCallId":"a","name":"bash","arguments":{"type":"x"}},3,{"name":7,"toolCallId":"b"}]"#;
        f.set(Some(Kind::AssistantMessage), b"toolRequests", raw, &mut store);
        let got: Vec<_> = f.requests(&store).iter().map(|(i, n)| (store.opt(*i), store.opt(*n))).collect();
        assert_eq!(got, vec![(Some("a"), Some("bash")), (Some("b"), None)]);
        f.set(Some(Kind::AssistantMessage), b"toolRequests", b"{}", &mut store);
        assert!(f.requests(&store).is_empty());
    }

    #[test]
    fn unwanted_keys_are_skipped() {
        let mut store = Store::default();
        let mut f = Fields::default();
        f.set(Some(Kind::TurnEnd), b"toolCallId", br#""x""#, &mut store);
        assert_eq!(f.tool_call_id, None);
        f.set(None, b"toolCallId", br#""x""#, &mut store);
        assert_eq!(store.opt(f.tool_call_id), Some("x"));
        f.retain_for(Kind::TurnEnd);
        assert_eq!(f.tool_call_id, None);
    }
}
