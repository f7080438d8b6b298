//! Where session journals live.
//!
//! A [`JournalStore`] keeps whole journals (the exact bytes of `events.jsonl`) and lists their
//! sessions. Two stores exist: [`FileStore`], the state directory on this machine (the
//! default), and the JetStream store of `turnstile-store-nats`. The engine always runs a
//! session in a local session directory; with a remote store that directory is a working
//! copy made from the store before the session opens ([`JournalStore::attach`]), and every line
//! the engine appends reaches the store first through the writer's
//! [`turnstile_journal::JournalSink`].

mod error;
mod file;
pub mod journal_bytes;

use std::future::Future;
use std::sync::Arc;

pub use error::StoreError;
pub use file::FileStore;
use turnstile_journal::{JournalSink, SessionSummary, StateRoot, Uuid};

/// What [`JournalStore::attach`] prepares a session for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// A new session: the store must not know the id yet.
    Create,
    /// Continue an existing session as its one writer.
    Resume,
    /// Read it (audit, events): a working copy, no writer rights.
    Read,
}

/// What `import` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    /// The session is new in the store.
    Created,
    /// The store already held exactly these bytes; nothing changed.
    AlreadyPresent,
}

/// A session prepared by [`JournalStore::attach`]: the sink the writer appends through (none
/// for the file store, whose writer lock is the one-writer rule) and whatever the store holds
/// while the session is open (a lease).
pub trait Attachment: Send {
    /// The sink to give the session's writer (`SessionConfig::journal_sink`).
    fn sink(&self) -> Option<Arc<dyn JournalSink>>;
}

/// A place that keeps session journals (see the crate doc).
pub trait JournalStore: Send + Sync {
    /// What the store holds while a session is attached.
    type Attachment: Attachment;

    /// The store's name in messages (a directory, a URL).
    fn describe(&self) -> String;

    /// Every session, most recently updated first, without reading journals where the store
    /// has an index.
    fn list(&self) -> impl Future<Output = Result<Vec<SessionSummary>, StoreError>> + Send;

    /// Whether the store holds the session.
    fn contains(&self, id: Uuid) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The session's journal, byte for byte as `events.jsonl`.
    fn export(&self, id: Uuid) -> impl Future<Output = Result<Vec<u8>, StoreError>> + Send;

    /// Stores a whole journal under `id`, refusing bytes that are not whole valid lines and
    /// a session the store already holds with other bytes.
    fn import(
        &self,
        id: Uuid,
        journal: &[u8],
    ) -> impl Future<Output = Result<Imported, StoreError>> + Send;

    /// Prepares the session in the local state root `root` for `mode`: for a remote store the
    /// writer's lease and the working copy of the journal.
    fn attach(
        &self,
        id: Uuid,
        root: &StateRoot,
        mode: AttachMode,
    ) -> impl Future<Output = Result<Self::Attachment, StoreError>> + Send;

    /// Ends an attachment after the session closed: brings the store's index and checkpoint
    /// up to date from the working copy and gives up the lease.
    fn detach(
        &self,
        attachment: Self::Attachment,
        root: &StateRoot,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
