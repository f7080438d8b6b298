//! Why a store operation failed.

use std::path::PathBuf;

use turnstile_journal::Uuid;
use turnstile_journal::layout::LayoutError;

/// A store failure, naming the store, the session and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store does not hold the session.
    #[error("{store}: no session {id} (list sessions with `turnstile sessions`)")]
    NotFound {
        /// The store.
        store: String,
        /// The session.
        id: Uuid,
    },
    /// A new session's id is taken.
    #[error("{store}: session {id} already exists")]
    AlreadyExists {
        /// The store.
        store: String,
        /// The session.
        id: Uuid,
    },
    /// `import` of bytes that differ from the session the store holds.
    #[error(
        "{store}: session {id} already exists with a different journal ({existing} bytes, the import has {imported}); nothing was changed — import it under another id or remove the existing session first"
    )]
    Conflict {
        /// The store.
        store: String,
        /// The session.
        id: Uuid,
        /// Bytes the store holds.
        existing: u64,
        /// Bytes offered.
        imported: u64,
    },
    /// An import whose store holds fewer (or other) lines than were read: a line the store
    /// took for a duplicate of another, or lines lost in transit.
    #[error(
        "{store}: importing session {id} read {read} lines but the store holds {stored}; the import failed — export the session to see what it holds, then import again under another id"
    )]
    ShortImport {
        /// The store.
        store: String,
        /// The session.
        id: Uuid,
        /// Lines read from the journal offered.
        read: u64,
        /// Lines the store holds for the session afterwards.
        stored: u64,
    },
    /// The journal offered is not whole valid lines.
    #[error(
        "{origin}:{line} (byte {offset}): {message}; only whole valid journal lines can be stored"
    )]
    BadJournal {
        /// Where the bytes came from.
        origin: String,
        /// The first bad line (1-based).
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// The journal offered has a line longer than a journal line may take in memory: it was
    /// measured, never held, and nothing was stored.
    #[error(
        "{origin}:{line} (byte {offset}): a line of {len} bytes, over the {max} bytes a journal line may take in memory (TURNSTILE_MAX_LINE_BYTES); nothing was imported — set TURNSTILE_MAX_LINE_BYTES above {len} to import it, or move it aside with `turnstile repair --salvage` and import the rest"
    )]
    OversizedLine {
        /// Where the bytes came from.
        origin: String,
        /// The line (1-based).
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// Its length, the `\n` included.
        len: u64,
        /// The readers' limit.
        max: u64,
    },
    /// The journal offered could not be read.
    #[error("{origin}: cannot read it: {source}")]
    Read {
        /// Where the bytes came from.
        origin: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The journal offered changed between the import's check of it and its copy.
    #[error(
        "{origin} changed while it was being imported ({checked} bytes checked, {copied} bytes copied); nothing was imported — import it again once nothing writes to it"
    )]
    Changed {
        /// Where the bytes came from.
        origin: String,
        /// Bytes the check read.
        checked: u64,
        /// Bytes the copy read.
        copied: u64,
    },
    /// Where an export was going failed (a closed pipe, a full disk).
    #[error("cannot write the export: {source}")]
    Write {
        /// The OS error.
        source: std::io::Error,
    },
    /// Another process holds the session.
    #[error(
        "{store}: session {id} is held by {holder}; wait for it to finish (a dead holder's lease lapses after {ttl_secs} s) or stop it"
    )]
    Held {
        /// The store.
        store: String,
        /// The session.
        id: Uuid,
        /// Who holds it (host, pid).
        holder: String,
        /// The lease's time to live.
        ttl_secs: u64,
    },
    /// The state directory's layout refused something.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A local file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The remote store failed or could not be reached.
    #[error("{store}: {what}: {reason}")]
    Remote {
        /// The store.
        store: String,
        /// What was being done.
        what: String,
        /// The client's error.
        reason: String,
    },
}
