//! One record of the index: a session's listing facts and the identity of the journal
//! version they describe, and its line.

use std::os::unix::fs::MetadataExt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ending::Ending;
use crate::summary::SessionSummary;

/// Longest record written or read; longer lines are skipped (a cwd near PATH_MAX is not indexed).
pub(super) const MAX_RECORD: usize = 4096;

/// Which version of a journal a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalId {
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

impl JournalId {
    /// The identity of a journal from its metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        JournalId {
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
        }
    }
}

/// One line of the index: a session's listing facts and the journal version they describe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IndexRecord {
    /// The session id.
    pub id: Uuid,
    /// The journal version.
    pub journal: JournalId,
    /// Complete lines in the journal.
    pub events: u64,
    /// Timestamp of the first event.
    pub created: Option<String>,
    /// Timestamp of the last complete event.
    pub updated: Option<String>,
    /// Working directory from `session.start`.
    pub cwd: Option<String>,
    /// The first user prompt, shortened.
    pub first_prompt: Option<String>,
    /// How the journal ends and its model; `None` when not known (the listing reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<Ending>,
}

impl IndexRecord {
    /// The record of a summary and an ending read from (or kept in step with) the journal
    /// version `journal`.
    pub fn new(id: Uuid, journal: JournalId, s: &SessionSummary, ending: Option<Ending>) -> Self {
        IndexRecord {
            id,
            journal,
            events: s.events,
            created: s.created.clone(),
            updated: s.updated.clone(),
            cwd: s.cwd.clone(),
            first_prompt: s.first_prompt.clone(),
            ending,
        }
    }

    /// The summary this record stands for.
    pub fn into_summary(self) -> SessionSummary {
        SessionSummary {
            id: Some(self.id),
            cwd: self.cwd,
            created: self.created,
            updated: self.updated,
            events: self.events,
            size: self.journal.size,
            first_prompt: self.first_prompt,
        }
    }

    pub(super) fn line(&self) -> Option<Vec<u8>> {
        let mut line = serde_json::to_vec(self).ok()?;
        line.push(b'\n');
        (line.len() <= MAX_RECORD).then_some(line)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::index) fn record(n: u128) -> IndexRecord {
        IndexRecord {
            id: Uuid::from_u128(n),
            journal: JournalId {
                ino: 1,
                size: 2,
                mtime_ns: 3,
            },
            events: 4,
            created: Some("2026-11-29T14:34:34.757Z".into()),
            updated: None,
            cwd: Some("/home/dev".into()),
            first_prompt: Some("hello \"quoted\" \u{2028}".into()),
            ending: n.is_multiple_of(2).then(|| Ending {
                shut_down: true,
                error_since_prompt: false,
                model: Some("gpt-5".into()),
            }),
        }
    }

    #[test]
    fn oversized_records_are_not_written() {
        let mut r = record(1);
        r.cwd = Some("d".repeat(MAX_RECORD));
        assert!(r.line().is_none());
    }
}
