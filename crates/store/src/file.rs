//! The file store: the sessions of a state directory on this machine, as the engine writes
//! them (`<root>/<id>/events.jsonl`). The journal writer's lock is the one-writer rule, so an
//! attachment holds nothing and the writer gets no sink.

use std::io::{Read, Write};
use std::sync::Arc;

use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::session_dir::{Access, SessionDir};
use turnstile_journal::{JournalSink, SessionSummary, StateRoot, Uuid};

use crate::{AttachMode, Attachment, Imported, JournalStore, StoreError, journal_bytes};

/// The sessions of one state directory.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: StateRoot,
}

/// A file-store session needs nothing besides its directory.
#[derive(Debug)]
pub struct FileAttachment;

impl Attachment for FileAttachment {
    fn sink(&self) -> Option<Arc<dyn JournalSink>> {
        None
    }
}

impl FileStore {
    /// The store of the state root `root`.
    pub fn new(root: StateRoot) -> Self {
        FileStore { root }
    }

    /// The state root.
    pub fn root(&self) -> &StateRoot {
        &self.root
    }

    fn read(&self, id: Uuid) -> Result<Option<Vec<u8>>, StoreError> {
        let paths = self.root.session(id);
        if std::fs::symlink_metadata(&paths.dir).is_err() {
            return Ok(None);
        }
        let dir = SessionDir::open(&paths.dir)?;
        if dir.stat(EVENTS_FILE)?.is_none() {
            return Ok(None);
        }
        let mut file = dir.open_file(EVENTS_FILE, Access::Read)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|source| StoreError::Io {
                path: paths.events.clone(),
                source,
            })?;
        Ok(Some(bytes))
    }
}

impl JournalStore for FileStore {
    type Attachment = FileAttachment;

    fn describe(&self) -> String {
        self.root.dir().display().to_string()
    }

    async fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        Ok(SessionSummary::list_indexed(&self.root)?.0)
    }

    async fn contains(&self, id: Uuid) -> Result<bool, StoreError> {
        Ok(self.read(id)?.is_some())
    }

    async fn export(&self, id: Uuid) -> Result<Vec<u8>, StoreError> {
        self.read(id)?.ok_or_else(|| StoreError::NotFound {
            store: self.describe(),
            id,
        })
    }

    async fn import(&self, id: Uuid, journal: &[u8]) -> Result<Imported, StoreError> {
        journal_bytes::check(&format!("the journal of {id}"), journal)?;
        if let Some(existing) = self.read(id)? {
            if existing == journal {
                return Ok(Imported::AlreadyPresent);
            }
            return Err(StoreError::Conflict {
                store: self.describe(),
                id,
                existing: existing.len() as u64,
                imported: journal.len() as u64,
            });
        }
        let paths = self.root.create_session(id)?;
        let dir = SessionDir::open(&paths.dir)?;
        let mut file = dir.open_file(EVENTS_FILE, Access::Append)?;
        let io = |source| StoreError::Io {
            path: paths.events.clone(),
            source,
        };
        file.write_all(journal).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(Imported::Created)
    }

    async fn attach(
        &self,
        id: Uuid,
        _root: &StateRoot,
        mode: AttachMode,
    ) -> Result<FileAttachment, StoreError> {
        // The writer's lock and the engine's own checks do the rest; this keeps the answers
        // to a taken or an unknown id the same as the other stores'.
        let exists = self.root.session(id).events.exists();
        match mode {
            AttachMode::Create if exists => Err(StoreError::AlreadyExists {
                store: self.describe(),
                id,
            }),
            AttachMode::Resume | AttachMode::Read if !exists => Err(StoreError::NotFound {
                store: self.describe(),
                id,
            }),
            _ => Ok(FileAttachment),
        }
    }

    async fn detach(
        &self,
        _attachment: FileAttachment,
        _root: &StateRoot,
    ) -> Result<(), StoreError> {
        Ok(())
    }
}
