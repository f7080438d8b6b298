//! A replica of the journal that the writer hands every appended line to: the hook a remote
//! journal store (JetStream) plugs into, so the engine's one write path serves both stores.
//!
//! The writer calls [`JournalSink::send`] under its lock, before the line goes to the file, so
//! the replica sees lines in journal order and a sink that refuses (fenced, lease lost) stops
//! the line from reaching the local file too. Durability waits cover the sink: a sequence
//! number is durable only when the file is fsynced (per the mode) *and* the sink acknowledged
//! it. A sink failure poisons the writer: nothing is appended after it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use uuid::Uuid;

/// A future a sink returns from [`JournalSink::wait_async`].
pub type SinkWait<'a> = Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send + 'a>>;

/// Where the lines of a journal are also stored (see the module doc).
pub trait JournalSink: Send + Sync + fmt::Debug {
    /// Takes the line (with its newline) of event number `seq` (1-based), whose id is `id`.
    /// Must not wait for the replica's acknowledgement; fails at once if the sink has failed.
    fn send(&self, seq: u64, id: Uuid, line: &[u8]) -> Result<(), SinkError>;
    /// Blocks until every line up to `seq` is acknowledged by the replica.
    fn wait(&self, seq: u64) -> Result<(), SinkError>;
    /// Waits asynchronously until every line up to `seq` is acknowledged.
    fn wait_async(&self, seq: u64) -> SinkWait<'_>;
    /// Takes a record of the journal's seal (one seal line, `\n` included), which covers
    /// lines sent before it: the replica stores it after them, under the same fence. Must not
    /// wait; fails at once if the sink has failed. The default keeps no seal.
    fn seal(&self, record: &[u8]) -> Result<(), SinkError> {
        let _ = record;
        Ok(())
    }
}

/// Why a sink refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkErrorKind {
    /// Another writer appended to the session (the expected last sequence did not match).
    Fenced,
    /// The writer's lease expired or was taken over.
    LeaseLost,
    /// The replica could not be reached or answered with an error.
    Failed,
}

/// A sink failure, naming the store and the session.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{store}: session {session}: {reason}")]
pub struct SinkError {
    /// What went wrong, for callers that react to a kind.
    pub kind: SinkErrorKind,
    /// The store (its URL or name).
    pub store: String,
    /// The session.
    pub session: Uuid,
    /// The explanation, with what to do.
    pub reason: String,
}
