//! [`Persistence`]: whether a type's events reach the disk. Its own file because both the
//! generated table (`event_types.rs`) and the lookups over it (`event_type.rs`) name it.

/// Whether events of a type are written to `events.jsonl` or only sent to live subscribers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Persistence {
    /// Written to the journal (and sent live).
    Persisted,
    /// Sent to live subscribers only; never on disk.
    Ephemeral,
}
