//! How a writer is opened: when it fsyncs, where lines go besides the file, what it may skip,
//! and what opening found.

use std::sync::Arc;

use uuid::Uuid;

use crate::repair::RepairOutcome;
use crate::seal_file::Sealing;
use crate::sink::JournalSink;

/// When appended events are fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every append waits for an fsync covering it (group-committed with concurrent appends).
    Event,
    /// fsync at turn boundaries and before idle ([`JournalWriter::turn_boundary`](super::JournalWriter::turn_boundary)).
    #[default]
    Turn,
    /// Never fsync; the OS writes back when it likes. For throwaway sessions and benchmarks.
    Off,
}

/// A durability name that is not `event`, `turn` or `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown durability {0:?}: expected event, turn or off")]
pub struct UnknownDurability(pub String);

impl std::str::FromStr for Durability {
    type Err = UnknownDurability;
    fn from_str(s: &str) -> Result<Self, UnknownDurability> {
        match s {
            "event" => Ok(Durability::Event),
            "turn" => Ok(Durability::Turn),
            "off" => Ok(Durability::Off),
            other => Err(UnknownDurability(other.to_owned())),
        }
    }
}

/// Options for opening a writer.
#[derive(Debug, Clone, Default)]
pub struct WriterOptions {
    /// When to fsync.
    pub durability: Durability,
    /// A replica every line goes to before the file (a remote store); `None` for the file
    /// store alone.
    pub sink: Option<Arc<dyn JournalSink>>,
    /// Bytes at the start of the journal already known to be whole valid lines (from a verified
    /// checkpoint), so opening only scans what follows. `None` scans the whole file.
    pub trusted_prefix: Option<TrustedPrefix>,
    /// Whether the journal is sealed as it is written (`events.jsonl.seal`), and with which
    /// key; sealed by default.
    pub sealing: Sealing,
}

/// A prefix of the journal vouched for by a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedPrefix {
    /// Length in bytes (at a line boundary).
    pub len: u64,
    /// Number of lines in it.
    pub lines: u64,
    /// Id of its last event.
    pub last_id: Option<Uuid>,
}

/// What opening found and did.
#[derive(Debug, Clone, Default)]
pub struct Recovery {
    /// Valid events in the journal after opening.
    pub events: u64,
    /// Size in bytes after opening.
    pub bytes: u64,
    /// Id of the last event.
    pub last_id: Option<Uuid>,
    /// A torn tail that was cut, if any.
    pub torn_tail: Option<RepairOutcome>,
}
