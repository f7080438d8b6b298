//! Event type names and their persisted/ephemeral property, looked up in one generated table.

use std::borrow::Cow;
use std::fmt;

use crate::event_types::EVENT_TYPES;
pub use crate::persistence::Persistence;

/// The `type` of an event, e.g. `assistant.turn_start`.
///
/// Names known to the schema borrow the table's static string, so parsing a journal does not
/// allocate a name per line.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventType(Cow<'static, str>);

impl EventType {
    /// Makes a type from any name; known names are interned in the schema table.
    pub fn new(name: &str) -> Self {
        match lookup(name) {
            Some(i) => EventType(Cow::Borrowed(EVENT_TYPES[i].0)),
            None => EventType(Cow::Owned(name.to_owned())),
        }
    }

    /// A type from a static name (used by the typed payloads).
    pub const fn from_static(name: &'static str) -> Self {
        EventType(Cow::Borrowed(name))
    }

    /// The type name as written in the journal.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the schema lists this type.
    pub fn is_known(&self) -> bool {
        lookup(&self.0).is_some()
    }

    /// Persistence of this type. Types the schema does not know are treated as persisted:
    /// a journal written by a newer runtime holds them on disk, and they must round-trip.
    pub fn persistence(&self) -> Persistence {
        persistence_of(&self.0)
    }

    /// True when events of this type must never reach the disk.
    pub fn is_ephemeral(&self) -> bool {
        self.persistence() == Persistence::Ephemeral
    }
}

/// The rewind marker's type. The schema makes `session.snapshot_rewind` ephemeral because the
/// runtime rewinds by cutting its journal file; a turnstile journal never loses a line, so the
/// rewind is this event written to disk, and the fold drops the events it names from the view.
pub const REWIND_MARKER: &str = "session.snapshot_rewind";

/// Persistence of a type name (unknown names count as persisted; the one type the schema
/// calls ephemeral and turnstile persists is [`REWIND_MARKER`]).
pub fn persistence_of(name: &str) -> Persistence {
    if name == REWIND_MARKER {
        return Persistence::Persisted;
    }
    schema_persistence(name)
}

/// Persistence as the schema gives it (`ephemeral: true` on live copies follows this).
pub fn schema_persistence(name: &str) -> Persistence {
    lookup(name).map_or(Persistence::Persisted, |i| EVENT_TYPES[i].1)
}

/// Every type name of the schema with its persistence, sorted by name.
pub fn all_event_types() -> impl Iterator<Item = (&'static str, Persistence)> {
    EVENT_TYPES.iter().copied()
}

fn lookup(name: &str) -> Option<usize> {
    EVENT_TYPES.binary_search_by(|(n, _)| (*n).cmp(name)).ok()
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl From<&str> for EventType {
    fn from(s: &str) -> Self {
        EventType::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_complete() {
        assert!(EVENT_TYPES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(EVENT_TYPES.len(), 149);
        let ephemeral = EVENT_TYPES
            .iter()
            .filter(|(_, p)| *p == Persistence::Ephemeral)
            .count();
        assert_eq!(ephemeral, 78);
    }

    #[test]
    fn known_policies() {
        assert!(EventType::new("session.idle").is_ephemeral());
        assert!(EventType::new("assistant.message_delta").is_ephemeral());
        assert!(EventType::new("assistant.usage").is_ephemeral());
        assert!(EventType::new("external_tool.completed").is_ephemeral());
        assert!(!EventType::new("assistant.turn_start").is_ephemeral());
        assert!(!EventType::new("external_tool.requested").is_ephemeral());
        assert!(!EventType::new(REWIND_MARKER).is_ephemeral());
        assert_eq!(
            schema_persistence(REWIND_MARKER),
            Persistence::Ephemeral,
            "live copies of the marker carry the schema's flag"
        );
        let future = EventType::new("session.something_new");
        assert!(!future.is_known());
        assert_eq!(future.persistence(), Persistence::Persisted);
    }
}
