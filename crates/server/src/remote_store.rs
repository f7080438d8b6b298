//! Sessions kept in a remote journal store (`turnstile serve --store nats://…`).
//!
//! The server runs every session in its local state directory as usual; with a remote store
//! that directory holds working copies. Before a session opens, [`RemoteStore::attach`] takes
//! the writer's lease and makes the working copy equal to the store; the writer then sends
//! every line to the store before the file (the session's `JournalSink`); the forwarder
//! hands every event, ephemeral ones too, to the store's live feed; after the session closed,
//! [`RemoteSession::detach`] brings the store's index and checkpoint up to date and gives the
//! lease up. Listings come from the store's index, so every server on the store sees every
//! session.
//!
//! The traits are object-safe so the server does not depend on any one store; the binary
//! implements them for the JetStream store.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use turnstile_journal::{Event, JournalSink, SessionSummary, StateRoot, Uuid};
pub use turnstile_store::{AttachMode, StoreError};

/// A boxed, sendable future (the traits stay object-safe).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A journal store the server keeps its sessions in (see the module doc).
pub trait RemoteStore: Send + Sync + std::fmt::Debug {
    /// The store's name in messages (a URL).
    fn describe(&self) -> String;

    /// Prepares session `id` in the local state root for `mode`: the lease and the working
    /// copy. Waits for a dead holder's lease to lapse; refuses a live holder.
    fn attach<'a>(
        &'a self,
        id: Uuid,
        root: &'a StateRoot,
        mode: AttachMode,
    ) -> StoreFuture<'a, Result<Arc<dyn RemoteSession>, StoreError>>;

    /// Every stored session, most recently updated first (from the store's index).
    fn list(&self) -> StoreFuture<'_, Result<Vec<SessionSummary>, StoreError>>;

    /// The index entry of one session (`None`: the index does not know it), without
    /// listing the others.
    fn summary(&self, id: Uuid) -> StoreFuture<'_, Result<Option<SessionSummary>, StoreError>>;
}

/// A session attached to a [`RemoteStore`] while it is open in this server.
pub trait RemoteSession: Send + Sync {
    /// The sink the session's writer appends through.
    fn sink(&self) -> Option<Arc<dyn JournalSink>>;

    /// Sends a live event (persisted or ephemeral) to the store's watchers; best effort.
    fn publish_live<'a>(&'a self, event: &'a Event) -> StoreFuture<'a, ()>;

    /// Ends the attachment after the session closed (index, checkpoint, lease); a second
    /// call does nothing.
    fn detach(&self) -> StoreFuture<'_, Result<(), StoreError>>;
}
