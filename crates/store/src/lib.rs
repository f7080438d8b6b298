//! Where session journals live.
//!
//! A [`JournalStore`] keeps whole journals (the exact bytes of `events.jsonl`) and lists their
//! sessions; it moves them in bounded pieces ([`JournalStore::export_to`],
//! [`JournalStore::import_from`]), never holding a journal, or a line longer than the readers'
//! limit, whole. Two stores exist: [`FileStore`], the state directory on this machine (the
//! default), and the JetStream store of `turnstile-store-nats`. The engine always runs a
//! session in a local session directory; with a remote store that directory is a working
//! copy made from the store before the session opens ([`JournalStore::attach`]), and every line
//! the engine appends reaches the store first through the writer's
//! [`turnstile_journal::JournalSink`].

mod error;
mod file;
pub mod journal_bytes;
pub mod journal_stream;

use std::future::Future;
use std::io::{Read, Seek, Write};
use std::sync::Arc;

pub use error::StoreError;
pub use file::FileStore;
pub use turnstile_journal::Measured as Exported;
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

    /// Writes the session's journal to `out`, byte for byte as `events.jsonl`, in bounded
    /// pieces (the file store's through one buffer, a remote store's a stored line at a time);
    /// says how many bytes and lines went out and which lines are longer than the readers'
    /// limit (`turnstile_journal::max_line_bytes`), which are written like the others. A
    /// failure of `out` is [`StoreError::Write`].
    fn export_to<W: Write + Send>(
        &self,
        id: Uuid,
        out: &mut W,
    ) -> impl Future<Output = Result<Exported, StoreError>> + Send;

    /// The session's journal as one buffer ([`JournalStore::export_to`] into memory), for
    /// journals known to be small.
    fn export(&self, id: Uuid) -> impl Future<Output = Result<Vec<u8>, StoreError>> + Send {
        async move {
            let mut out = Vec::new();
            self.export_to(id, &mut out).await?;
            Ok(out)
        }
    }

    /// Stores the journal `journal` gives (read from its start, as many times as the store
    /// needs, in bounded pieces) under `id`, refusing bytes that are not whole valid lines, a
    /// line longer than the readers' limit ([`StoreError::OversizedLine`], never held), and a
    /// session the store already holds with other bytes.
    fn import_from<R: Read + Seek + Send>(
        &self,
        id: Uuid,
        journal: &mut R,
    ) -> impl Future<Output = Result<Imported, StoreError>> + Send;

    /// [`JournalStore::import_from`] of a journal held in memory.
    fn import(
        &self,
        id: Uuid,
        journal: &[u8],
    ) -> impl Future<Output = Result<Imported, StoreError>> + Send {
        async move {
            self.import_from(id, &mut std::io::Cursor::new(journal))
                .await
        }
    }

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
