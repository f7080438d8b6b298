//! The session index's view of the journal a writer keeps: the listing facts, kept in step with
//! appends, and the record a writer adds to `turnstile-index.jsonl` (see `index.rs`).

use std::fs::File;
use std::path::PathBuf;

use crate::ending::Ending;
use crate::index::{IndexRecord, JournalId};
use crate::layout::{EVENTS_FILE, SessionPaths};
use crate::session_dir::{Access, SessionDir};
use crate::summary::{HeadFacts, SessionSummary, last_line_timestamp};

/// The listing facts of the session, kept in step with appends for the session index.
#[derive(Debug)]
pub(super) struct IndexFacts {
    pub(super) root: PathBuf,
    pub(super) id: uuid::Uuid,
    pub(super) head: HeadFacts,
    pub(super) updated: Option<crate::timestamp::Timestamp>,
    /// How the journal ends so far; `None` when its ends could not be read at open.
    pub(super) ending: Option<Ending>,
    /// A turn ended (or the session shut down) since the last record.
    pub(super) due: bool,
}

/// The index facts of a session in a state root (a directory named by its id), read from
/// the head and the last line of the journal as recovered (`bytes` long).
pub(super) fn index_facts(
    paths: &SessionPaths,
    dir: &SessionDir,
    name: &str,
    bytes: u64,
) -> Option<IndexFacts> {
    let id = paths.id?;
    let root = paths.dir.parent()?.to_path_buf();
    if name != EVENTS_FILE {
        return None;
    }
    let file = dir.open_file(name, Access::Read).ok()?;
    let head = HeadFacts::read(&file).ok()?;
    let updated = last_line_timestamp(&file, bytes)
        .ok()?
        .and_then(|t| crate::timestamp::Timestamp::parse(&t).ok());
    let ending = Ending::read(&file, bytes).ok();
    Some(IndexFacts {
        root,
        id,
        head,
        updated,
        ending,
        due: false,
    })
}

impl IndexFacts {
    /// The index record of the journal open as `file`, `events` events and `bytes` bytes long
    /// as its writer wrote it; `None` if the writer is poisoned or the file is not exactly
    /// that long (someone else appended: let the listing read it).
    pub(super) fn record(
        &self,
        file: &File,
        events: u64,
        bytes: u64,
        poisoned: bool,
    ) -> Option<(PathBuf, IndexRecord)> {
        let meta = file.metadata().ok()?;
        let journal = JournalId::of(&meta);
        if journal.size != bytes || poisoned {
            return None;
        }
        let summary = SessionSummary {
            id: Some(self.id),
            cwd: self.head.cwd.clone(),
            created: self.head.created.clone(),
            updated: self.updated.as_ref().map(|t| t.to_text()),
            events,
            size: bytes,
            first_prompt: self.head.first_prompt.clone(),
        };
        Some((
            self.root.clone(),
            IndexRecord::new(self.id, journal, &summary, self.ending.clone()),
        ))
    }
}
