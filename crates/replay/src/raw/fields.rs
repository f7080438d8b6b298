//! The few `data` fields the invariants read, decoded leniently from raw JSON values.
//!
//! Every path that reads a line (the fixed-layout fast path, the full-parse fallback and the
//! streaming path for giant lines) hands the raw JSON of each top-level `data` member to the same
//! [`Fields::set`], so all paths see the same values: a field of the wrong JSON type is absent,
//! a repeated key keeps its last value, and strings are stored once in a per-chunk [`Store`].

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};

use super::json;

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

    /// The string of a span.
    pub(crate) fn get(&self, span: Span) -> &str {
        let start = span.start as usize;
        self.text
            .get(start..start + span.len as usize)
            .unwrap_or("")
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
    SystemMessage,
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
    CompactionStart,
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
            "system.message" => Kind::SystemMessage,
            "assistant.message" => Kind::AssistantMessage,
            // A command the user ran opens a call as a start does (the runtime records no
            // start for it), so its `tool.execution_complete` pairs up.
            "tool.execution_start" | "tool.user_requested" => Kind::ToolStart,
            "tool.execution_complete" => Kind::ToolComplete,
            "permission.requested" => Kind::PermissionRequested,
            "permission.completed" => Kind::PermissionCompleted,
            "external_tool.requested" => Kind::ExternalRequested,
            "external_tool.completed" => Kind::ExternalCompleted,
            "session.task_complete" => Kind::TaskComplete,
            "session.error" => Kind::SessionError,
            "session.resume" => Kind::SessionResume,
            "session.compaction_start" => Kind::CompactionStart,
            "abort" => Kind::Abort,
            _ => Kind::Other,
        }
    }

    /// Whether any field of this kind is read.
    pub(crate) fn reads_fields(self) -> bool {
        !matches!(
            self,
            Kind::SessionError
                | Kind::SystemMessage
                | Kind::SessionResume
                | Kind::CompactionStart
                | Kind::Abort
                | Kind::Other
        )
    }

    fn wants(self, key: Key) -> bool {
        use Key::*;
        match self {
            Kind::TurnStart => matches!(key, TurnId | InteractionId),
            Kind::TurnEnd => matches!(key, TurnId),
            Kind::UserMessage => matches!(key, IsAutopilotContinuation | Source),
            Kind::AssistantMessage => matches!(key, ToolRequests | Model),
            Kind::ToolStart => matches!(key, ToolCallId | ToolName),
            Kind::ToolComplete => matches!(key, ToolCallId | Success),
            Kind::PermissionRequested => matches!(key, RequestId | PermissionRequest),
            Kind::PermissionCompleted => matches!(key, RequestId),
            Kind::ExternalRequested => matches!(key, RequestId | ToolCallId | ToolName),
            Kind::ExternalCompleted => matches!(key, RequestId),
            Kind::TaskComplete => matches!(key, Summary | Success),
            Kind::SessionError
            | Kind::SystemMessage
            | Kind::SessionResume
            | Kind::CompactionStart
            | Kind::Abort
            | Kind::Other => false,
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
    Source,
    Summary,
    ToolRequests,
    Model,
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
            b"source" => Key::Source,
            b"summary" => Key::Summary,
            b"toolRequests" => Key::ToolRequests,
            b"model" => Key::Model,
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
    /// A `user.message` holding a loaded skill's context (`source` `skill-…`): part of the
    /// running turn, not a prompt.
    pub(crate) skill_context: bool,
    pub(crate) summary: Option<Span>,
    /// `model` of an `assistant.message`: the model its tool calls' results name.
    pub(crate) model: Option<Span>,
    /// Range of this event's entries in [`Store::requests`].
    pub(crate) requests: (u32, u32),
}

impl Fields {
    /// [`Fields::set`] for a raw (quoted, maybe escaped) key as the validator reports it.
    #[inline]
    pub(crate) fn set_raw(
        &mut self,
        kind: Kind,
        raw_key: &[u8],
        value: &[u8],
        store: &mut Store,
        stack: &mut Vec<u8>,
    ) {
        let inner = &raw_key[1..raw_key.len().saturating_sub(1).max(1)];
        // Plain keys (the norm) are compared as they are; only a key with an escape is decoded.
        if Key::of(inner).is_some() {
            self.set(Some(kind), inner, value, store, stack);
        } else if inner.contains(&b'\\')
            && let Some(key) = decode_key(raw_key)
        {
            self.set(Some(kind), &key, value, store, stack);
        }
    }

    /// Records one top-level member of `data` (`key` unescaped, `value` its raw JSON) if
    /// `kind` reads it; `None` as kind means "the type is not known yet": keep every field.
    /// `stack` is scratch space for the nested values.
    pub(crate) fn set(
        &mut self,
        kind: Option<Kind>,
        key: &[u8],
        value: &[u8],
        store: &mut Store,
        stack: &mut Vec<u8>,
    ) {
        let Some(key) = Key::of(key) else { return };
        if let Some(kind) = kind
            && !kind.wants(key)
        {
            return;
        }
        let text = |store: &mut Store| decode_str(value).map(|s| store.push(&s));
        match key {
            Key::TurnId => self.turn_id = text(store),
            Key::InteractionId => self.interaction_id = text(store),
            Key::ToolCallId => self.tool_call_id = text(store),
            Key::ToolName => self.tool_name = text(store),
            Key::RequestId => self.request_id = text(store),
            Key::Summary => self.summary = text(store),
            Key::Model => self.model = text(store),
            Key::Success => self.success = decode_bool(value),
            Key::IsAutopilotContinuation => self.autopilot = decode_bool(value),
            Key::Source => {
                self.skill_context = decode_str(value)
                    .is_some_and(|s| s.starts_with(turnstile_journal::payload::SKILL_SOURCE_PREFIX))
            }
            Key::PermissionRequest => {
                let mut id = None;
                json::scan_object(value, stack, &mut |k, v| {
                    if k == b"\"toolCallId\""
                        || decode_key(k).as_deref() == Some(b"toolCallId".as_slice())
                    {
                        id = Some(v);
                    }
                });
                self.permission_tool_call_id = id.and_then(decode_str).map(|s| store.push(&s));
            }
            Key::ToolRequests => {
                let start = store.requests.len();
                json::scan_array(value, stack, &mut |element, stack| {
                    let (mut id, mut name) = (None, None);
                    let object = json::scan_object(element, stack, &mut |k, v| match decode_key(k)
                        .as_deref()
                    {
                        Some(b"toolCallId") => id = Some(v),
                        Some(b"name") => name = Some(v),
                        _ => {}
                    });
                    if object {
                        let id = id.and_then(decode_str).map(|s| store.push(&s));
                        let name = name.and_then(decode_str).map(|s| store.push(&s));
                        store.requests.push((id, name));
                    }
                });
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
        if !keep(Key::Source) {
            self.skill_context = false;
        }
        if !keep(Key::Summary) {
            self.summary = None;
        }
        if !keep(Key::ToolRequests) {
            self.requests = (0, 0);
        }
        if !keep(Key::Model) {
            self.model = None;
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
    serde_json::from_slice::<KeyBytes>(quoted)
        .ok()
        .map(|k| Cow::Owned(k.0))
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
        f.set(
            Some(Kind::AssistantMessage),
            b"toolRequests",
            raw,
            &mut store,
            &mut Vec::new(),
        );
        let got: Vec<_> = f
            .requests(&store)
            .iter()
            .map(|(i, n)| (store.opt(*i), store.opt(*n)))
            .collect();
        assert_eq!(got, vec![(Some("a"), Some("bash")), (Some("b"), None)]);
        f.set(
            Some(Kind::AssistantMessage),
            b"toolRequests",
            b"{}",
            &mut store,
            &mut Vec::new(),
        );
        assert!(f.requests(&store).is_empty());
    }

    #[test]
    fn unwanted_keys_are_skipped() {
        let mut store = Store::default();
        let mut f = Fields::default();
        f.set(
            Some(Kind::TurnEnd),
            b"toolCallId",
            br#""x""#,
            &mut store,
            &mut Vec::new(),
        );
        assert_eq!(f.tool_call_id, None);
        f.set(None, b"toolCallId", br#""x""#, &mut store, &mut Vec::new());
        assert_eq!(store.opt(f.tool_call_id), Some("x"));
        f.retain_for(Kind::TurnEnd);
        assert_eq!(f.tool_call_id, None);
    }
}
