//! The file store: the sessions of a state directory on this machine, as the engine writes
//! them (`<root>/<id>/events.jsonl`). The journal writer's lock is the one-writer rule, so an
//! attachment holds nothing and the writer gets no sink.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::session_dir::{Access, SessionDir};
use turnstile_journal::{JournalSink, LineMeter, SessionSummary, StateRoot, Uuid, max_line_bytes};

use crate::journal_bytes::{self, Checked};
use crate::journal_stream::{self, CopyError, Hashing, PIECE_BYTES, SameBytes};
use crate::{AttachMode, Attachment, Exported, Imported, JournalStore, StoreError};

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

    /// The session's journal opened for reading; `None` when the store does not hold it.
    fn open(&self, id: Uuid) -> Result<Option<File>, StoreError> {
        let paths = self.root.session(id);
        if std::fs::symlink_metadata(&paths.dir).is_err() {
            return Ok(None);
        }
        let dir = SessionDir::open(&paths.dir)?;
        if dir.stat(EVENTS_FILE)?.is_none() {
            return Ok(None);
        }
        Ok(Some(dir.open_file(EVENTS_FILE, Access::Read)?))
    }

    /// Whether the session's journal holds exactly the bytes of `journal` (from its start).
    fn holds<R: Read + Seek>(
        &self,
        id: Uuid,
        mut existing: File,
        journal: &mut R,
        checked: &Checked,
        origin: &str,
    ) -> Result<Imported, StoreError> {
        rewind(journal, origin)?;
        let mut same = SameBytes::new(BufReader::with_capacity(PIECE_BYTES, &mut *journal));
        let path = self.root.session(id).events;
        journal_stream::copy(&mut existing, &mut same).map_err(|e| match e {
            CopyError::Read(source) => StoreError::Io {
                path: path.clone(),
                source,
            },
            // The comparison keeps its own read errors for `finish`.
            CopyError::Write(source) => read_error(origin, source),
        })?;
        let compared = same.finish().map_err(|e| read_error(origin, e))?;
        if compared.same {
            return Ok(Imported::AlreadyPresent);
        }
        Err(StoreError::Conflict {
            store: self.describe(),
            id,
            existing: compared.bytes,
            imported: checked.bytes,
        })
    }

    /// Copies `journal` into the new session's file and checks that it gave the bytes the
    /// check read.
    fn write_new<R: Read + Seek>(
        &self,
        id: Uuid,
        journal: &mut R,
        checked: &Checked,
        origin: &str,
    ) -> Result<(), StoreError> {
        let paths = self.root.create_session(id)?;
        let written = (|| {
            let dir = SessionDir::open(&paths.dir)?;
            let mut file = dir.open_file(EVENTS_FILE, Access::Append)?;
            let io = |source| StoreError::Io {
                path: paths.events.clone(),
                source,
            };
            rewind(journal, origin)?;
            let mut hashing = Hashing::new(&mut *journal);
            journal_stream::copy(&mut hashing, &mut file).map_err(|e| match e {
                CopyError::Read(source) => read_error(origin, source),
                CopyError::Write(source) => io(source),
            })?;
            let (copied, sha256) = hashing.finish();
            if copied != checked.bytes || sha256 != checked.sha256 {
                return Err(StoreError::Changed {
                    origin: origin.to_owned(),
                    checked: checked.bytes,
                    copied,
                });
            }
            file.sync_all().map_err(io)
        })();
        if written.is_err() {
            // The session was made here a moment ago: nothing of it is kept half written.
            let _ = std::fs::remove_file(&paths.events);
            let _ = std::fs::remove_dir(&paths.dir);
        }
        written
    }
}

fn rewind(journal: &mut impl Seek, origin: &str) -> Result<(), StoreError> {
    journal
        .seek(SeekFrom::Start(0))
        .map(drop)
        .map_err(|e| read_error(origin, e))
}

fn read_error(origin: &str, source: std::io::Error) -> StoreError {
    StoreError::Read {
        origin: origin.to_owned(),
        source,
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
        Ok(self.open(id)?.is_some())
    }

    async fn export_to<W: Write + Send>(
        &self,
        id: Uuid,
        out: &mut W,
    ) -> Result<Exported, StoreError> {
        let Some(mut file) = self.open(id)? else {
            return Err(StoreError::NotFound {
                store: self.describe(),
                id,
            });
        };
        let mut meter = LineMeter::new(out, max_line_bytes());
        journal_stream::copy(&mut file, &mut meter).map_err(|e| match e {
            CopyError::Read(source) => StoreError::Io {
                path: self.root.session(id).events,
                source,
            },
            CopyError::Write(source) => StoreError::Write { source },
        })?;
        let (measured, _) = meter
            .finish()
            .map_err(|source| StoreError::Write { source })?;
        Ok(measured)
    }

    async fn import_from<R: Read + Seek + Send>(
        &self,
        id: Uuid,
        journal: &mut R,
    ) -> Result<Imported, StoreError> {
        let origin = format!("the journal of {id}");
        rewind(journal, &origin)?;
        let checked = journal_bytes::check_reader(&origin, &mut *journal)?;
        if let Some(existing) = self.open(id)? {
            return self.holds(id, existing, journal, &checked, &origin);
        }
        self.write_new(id, journal, &checked, &origin)?;
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
