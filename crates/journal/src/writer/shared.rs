//! The state a writer shares with its syncer thread, and the two things done under its lock
//! from both sides: taking the lock, and poisoning the writer.
//!
//! Its own file so the writer (`mod.rs`), the syncer (`syncer.rs`) and the index record
//! (`index_facts.rs`) all build on it rather than on each other.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard};

use tokio::sync::watch;
use uuid::Uuid;

use crate::index::IndexRecord;
use crate::seal_file::SealWriter;

use super::index_facts::IndexFacts;

/// Sequence numbers count events appended through this writer plus those already on disk.
#[derive(Debug)]
pub(super) struct State {
    pub(super) written: u64,
    pub(super) bytes: u64,
    pub(super) last_id: Option<Uuid>,
    pub(super) durable: u64,
    pub(super) requested: u64,
    pub(super) poisoned: Option<String>,
    pub(super) closing: bool,
    /// What the session index needs (`None` when the session is not in a state root).
    pub(super) facts: Option<IndexFacts>,
    /// The journal's seal, kept in step with the lines written (`None`: unsealed).
    pub(super) seal: Option<SealWriter>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) state: Mutex<State>,
    /// Wakes the syncer when a sync is requested.
    pub(super) work: Condvar,
    /// Wakes blocking waiters when durability advances or the writer is poisoned.
    pub(super) progress: Condvar,
    /// The same progress for async waiters: (durable seq, poisoned).
    pub(super) durable_tx: watch::Sender<(u64, bool)>,
}

impl State {
    /// The index record of the journal as it is now; `None` if the writer is poisoned or the
    /// file is not exactly what this writer wrote (someone else appended: let the listing read
    /// it).
    pub(super) fn index_record(&self, file: &File) -> Option<(PathBuf, IndexRecord)> {
        self.facts
            .as_ref()?
            .record(file, self.written, self.bytes, self.poisoned.is_some())
    }
}

pub(super) fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock cannot leave State inconsistent (plain counters).
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) fn poison(shared: &Shared, st: &mut State, reason: String) {
    if st.poisoned.is_none() {
        tracing::error!(journal = %shared.path.display(), %reason, "journal writer poisoned");
        st.poisoned = Some(reason);
    }
    shared.progress.notify_all();
    shared.durable_tx.send_replace((st.durable, true));
}
