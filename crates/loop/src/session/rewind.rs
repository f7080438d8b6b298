//! Rewinds and truncations of the conversation (SDK `session.history.rewind`/`truncate`,
//! `turnstile rewind`): the journal keeps every line, so a cut is a `session.snapshot_rewind`
//! marker appended after the messages sent before it; the fold drops what it removes.

use turnstile_journal::payload::SnapshotRewind;
use turnstile_journal::{JournalReader, ReadMode};
use turnstile_replay::{CutKind, plan_cut, visible_events};

use super::LoopError;
use super::actor::Actor;

impl Actor {
    /// Appends the marker that removes `target` and every later event of the view, durably;
    /// [`LoopError::Rewind`] is a cut that cannot be made (nothing written).
    pub(super) async fn cut(
        &self,
        target: &str,
        kind: CutKind,
    ) -> Result<SnapshotRewind, LoopError> {
        // Every event written so far is on disk before the journal is read back.
        self.emitter.boundary().await?;
        let path = self.emitter.writer().paths().events.clone();
        let mut events = Vec::new();
        for record in JournalReader::open(&path, ReadMode::Strict)? {
            events.push(record?.event);
        }
        let marker = plan_cut(&visible_events(events), target, kind)?;
        self.emitter.emit(&marker)?;
        self.emitter.boundary().await?;
        Ok(marker)
    }
}
