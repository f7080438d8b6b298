//! Emitting events: persisted ones go to the journal first (write-ahead), then into the
//! folded state, then to live subscribers; ephemeral ones only to subscribers.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;
use turnstile_journal::payload::Payload;
use turnstile_journal::{Durability, Event, JournalWriter};
use turnstile_replay::{Folder, SessionState};

use super::LoopError;

/// Live subscribers; each gets every event, in order, through its own unbounded queue so a
/// slow subscriber never makes another miss events.
pub(crate) type Subscribers = Arc<Mutex<Vec<UnboundedSender<Arc<Event>>>>>;

/// The session's single path to the journal and to subscribers.
pub(crate) struct Emitter {
    writer: JournalWriter,
    folder: Folder,
    subscribers: Subscribers,
}

impl Emitter {
    pub(crate) fn new(
        writer: JournalWriter,
        state: SessionState,
        subscribers: Subscribers,
    ) -> Self {
        Emitter {
            writer,
            folder: Folder::from_state(state),
            subscribers,
        }
    }

    pub(crate) fn state(&self) -> &SessionState {
        self.folder.state()
    }

    pub(crate) fn writer(&self) -> &JournalWriter {
        &self.writer
    }

    /// Builds and emits an event of a typed payload, chained to the journal's last event.
    pub(crate) fn emit<P: Payload>(&mut self, payload: &P) -> Result<Arc<Event>, LoopError> {
        let event = Event::new(payload, self.writer.last_id());
        self.emit_event(event)
    }

    /// Emits a prepared event (e.g. from a resume plan).
    pub(crate) fn emit_event(&mut self, event: Event) -> Result<Arc<Event>, LoopError> {
        if !event.is_ephemeral() {
            let before = self.writer.byte_len();
            // `append` fsyncs before returning in `event` mode (the mode that pays for it);
            // otherwise durability is awaited at turn boundaries.
            self.writer.append(&event)?;
            self.folder
                .apply_persisted(&event, self.writer.byte_len() - before);
        } else {
            self.folder.apply(&event);
        }
        let event = Arc::new(event);
        let mut subs = self
            .subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        subs.retain(|tx| tx.send(Arc::clone(&event)).is_ok());
        Ok(event)
    }

    /// Makes everything written so far durable per the durability mode (turn end, idle).
    pub(crate) async fn boundary(&self) -> Result<(), LoopError> {
        if self.writer.durability() == Durability::Off {
            return Ok(());
        }
        self.writer.durable(self.writer.event_count()).await?;
        Ok(())
    }

    /// Ends every subscription (their receivers see the end of the stream) and returns the
    /// writer so the caller can close it.
    pub(crate) fn into_writer(self) -> JournalWriter {
        self.subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.writer
    }
}
