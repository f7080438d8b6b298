//! The session index's view of the journal a writer keeps: the listing facts, kept in step with
//! appends, and the record a writer adds to `turnstile-index.jsonl` (see `index.rs`).

use std::path::PathBuf;

use crate::index::{IndexRecord, JournalId};
use crate::layout::{EVENTS_FILE, SessionPaths};
use crate::session_dir::{Access, SessionDir};
use crate::summary::{HeadFacts, SessionSummary, last_line_timestamp};

use super::{JournalWriter, Shared, State};

/// The listing facts of the session, kept in step with appends for the session index.
#[derive(Debug)]
pub(super) struct IndexFacts {
    pub(super) root: PathBuf,
    pub(super) id: uuid::Uuid,
    pub(super) head: HeadFacts,
    pub(super) updated: Option<crate::timestamp::Timestamp>,
    /// A turn ended (or the session shut down) since the last record.
    pub(super) due: bool,
}

/// The index record of the journal as it is now; `None` if the file is not exactly what this
/// writer wrote (someone else appended: let the listing read it).
pub(super) fn index_record(shared: &Shared, st: &State) -> Option<(PathBuf, IndexRecord)> {
    let facts = st.facts.as_ref()?;
    let meta = shared.file.metadata().ok()?;
    let journal = JournalId::of(&meta);
    if journal.size != st.bytes || st.poisoned.is_some() {
        return None;
    }
    let summary = SessionSummary {
        id: Some(facts.id),
        cwd: facts.head.cwd.clone(),
        created: facts.head.created.clone(),
        updated: facts.updated.as_ref().map(|t| t.to_text()),
        events: st.written,
        size: st.bytes,
        first_prompt: facts.head.first_prompt.clone(),
    };
    Some((
        facts.root.clone(),
        IndexRecord::new(facts.id, journal, &summary),
    ))
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
    Some(IndexFacts {
        root,
        id,
        head,
        updated,
        due: false,
    })
}

impl JournalWriter {
    /// Appends the session's current facts to the session index (no fsync; see `index.rs`).
    pub(super) fn update_index(&self) {
        let record = {
            let mut st = self.lock_state();
            if let Some(facts) = st.facts.as_mut() {
                facts.due = false;
            }
            index_record(&self.shared, &st)
        };
        if let Some((root, record)) = record {
            crate::index::append(&root, &record);
        }
    }
}
