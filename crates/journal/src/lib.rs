//! Copilot-format `events.jsonl` journals.
//!
//! This crate owns the event model (the runtime's envelope, typed payloads for the events the
//! engine emits, raw `data` for every other type), the persisted/ephemeral policy of every type
//! in the schema, the on-disk layout of sessions, the single crash-safe writer of a session and
//! a streaming reader. It knows nothing of models or tools.

pub mod ending;
mod event;
mod event_type;
mod event_types;
pub mod index;
pub mod inuse;
pub mod layout;
mod layout_error;
pub mod line_meter;
pub mod lines;
pub mod payload;
mod persistence;
pub mod reader;
pub mod repair;
pub mod scan;
pub mod seal_file;
pub mod session_dir;
pub mod sink;
mod summary;
mod timestamp;
pub mod writer;
pub mod writer_lock;

pub use event::{Event, EventError, LiveMark};
pub use event_type::{
    EventType, Persistence, REWIND_MARKER, all_event_types, persistence_of, schema_persistence,
};
pub use layout::{SessionPaths, StateRoot, parse_session_id};
pub use line_meter::{LineMeter, LongLine, Measured};
pub use lines::{BoundedLines, DEFAULT_MAX_LINE_BYTES, LineInfo, max_line_bytes};
pub use reader::{JournalReader, ReadError, ReadMode, Record};
pub use repair::{RepairError, RepairOutcome, repair};
pub use scan::{JournalScan, Verdict};
pub use seal_file::Sealing;
pub use sink::{JournalSink, SinkError, SinkErrorKind};
pub use summary::SessionSummary;
pub use timestamp::{Timestamp, TimestampError};
pub use uuid::Uuid;
pub use writer::{Durability, JournalWriter, Recovery, TrustedPrefix, WriteError, WriterOptions};
pub use writer_lock::{LockError, LockHolder};
