//! Emitting events: persisted ones go to the journal first (write-ahead), then into the
//! folded state, then to live subscribers; ephemeral ones only to subscribers.
//!
//! Emitting takes `&self`: the tool calls of one turn run concurrently and each emits its own
//! events. One lock covers the append, the fold and the fan-out of an event, so the journal's
//! `parentId` chain, the folded state and every subscriber see the same order.
//!
//! A suspended session ([`Emitter::suspension`], `SessionHandle::suspend`) records nothing:
//! an emission is checked under the same lock, so the journal ends at one event, the folded
//! state with it, and the chain of the next recorded event (`session.shutdown`) has no gap.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc::UnboundedSender;
use turnstile_journal::payload::Payload;
use turnstile_journal::{Durability, Event, JournalWriter, Uuid};
use turnstile_replay::{Folder, SessionState};

use super::LoopError;

/// Live subscribers; each gets every event, in order, through its own unbounded queue so a
/// slow subscriber never makes another miss events.
pub(crate) type Subscribers = Arc<Mutex<Live>>;

/// The subscribers' queues, and the last persisted event they were sent: a notice sent from
/// outside the session's task ([`publish_live`]) is chained to it, as an ephemeral event
/// from inside is, since both are fanned out under this one lock.
#[derive(Default)]
pub(crate) struct Live {
    /// One queue per subscriber.
    pub(crate) senders: Vec<UnboundedSender<Arc<Event>>>,
    last_persisted: Option<Uuid>,
}

impl Live {
    /// A list holding one subscriber.
    pub(crate) fn with(sender: UnboundedSender<Arc<Event>>) -> Self {
        Live {
            senders: vec![sender],
            last_persisted: None,
        }
    }

    fn send(&mut self, event: &Arc<Event>) {
        self.senders.retain(|tx| tx.send(Arc::clone(event)).is_ok());
    }
}

/// The session's single path to the journal and to subscribers.
pub(crate) struct Emitter {
    writer: JournalWriter,
    /// Held for the whole of one emission (see the module doc).
    folder: Mutex<Folder>,
    subscribers: Subscribers,
    /// While set, emissions record nothing and reach nobody (see the module doc).
    suspended: Arc<AtomicBool>,
}

/// A read view of the folded state; holds the emission lock, so never keep it across an await.
pub(crate) struct StateGuard<'a>(MutexGuard<'a, Folder>);

impl Deref for StateGuard<'_> {
    type Target = SessionState;

    fn deref(&self) -> &SessionState {
        self.0.state()
    }
}

impl Emitter {
    pub(crate) fn new(
        writer: JournalWriter,
        state: SessionState,
        subscribers: Subscribers,
    ) -> Self {
        // A notice sent before the first emission hangs off the journal's last line.
        lock_live(&subscribers).last_persisted = writer.last_id();
        Emitter {
            writer,
            folder: Mutex::new(Folder::from_state(state)),
            subscribers,
            suspended: Arc::default(),
        }
    }

    /// The switch that suspends recording (shared with the session's handles).
    pub(crate) fn suspension(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.suspended)
    }

    /// Records again after a suspension (the session's own close: `session.shutdown`).
    pub(crate) fn end_suspension(&self) {
        // Under the emission lock: an emission under way finishes before the switch flips.
        let _folder = self.lock_folder();
        self.suspended.store(false, Ordering::Release);
    }

    /// The folded state as of the last emitted event.
    pub(crate) fn state(&self) -> StateGuard<'_> {
        StateGuard(self.lock_folder())
    }

    fn lock_folder(&self) -> MutexGuard<'_, Folder> {
        self.folder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live subscribers, for notices sent from outside the session's task
    /// ([`publish_live`]).
    pub(crate) fn subscribers(&self) -> Subscribers {
        Arc::clone(&self.subscribers)
    }

    pub(crate) fn writer(&self) -> &JournalWriter {
        &self.writer
    }

    /// Builds and emits an event of a typed payload, chained to the journal's last event.
    pub(crate) fn emit<P: Payload>(&self, payload: &P) -> Result<Arc<Event>, LoopError> {
        let mut folder = self.lock_folder();
        let event = Event::new(payload, self.writer.last_id());
        self.emit_locked(&mut folder, event)
    }

    /// Emits a live-only event of a typed payload chained to `parent` (an event it was made
    /// at, with others recorded since): the journal's chain is the persisted events' alone.
    pub(crate) fn emit_live_after<P: Payload>(
        &self,
        payload: &P,
        parent: Uuid,
    ) -> Result<Arc<Event>, LoopError> {
        let mut folder = self.lock_folder();
        let event = Event::new(payload, Some(parent));
        if !event.is_live_only() {
            return self.emit_locked(&mut folder, Event::new(payload, self.writer.last_id()));
        }
        self.emit_locked(&mut folder, event)
    }

    /// Builds and emits an event of any type from its raw `data` (a recording's, written
    /// again by a replay), chained to the journal's last event.
    pub(crate) fn emit_raw(
        &self,
        event_type: &str,
        data: Box<serde_json::value::RawValue>,
    ) -> Result<Arc<Event>, LoopError> {
        let mut folder = self.lock_folder();
        let event = Event::with_raw_data(event_type.into(), data, self.writer.last_id());
        self.emit_locked(&mut folder, event)
    }

    /// [`Emitter::emit`] for an event of the sub-agent `agent` (the envelope's `agentId`);
    /// `None` is the main agent.
    pub(crate) fn emit_as<P: Payload>(
        &self,
        agent: Option<&str>,
        payload: &P,
    ) -> Result<Arc<Event>, LoopError> {
        self.emit_as_with_live(agent, payload, None)
    }

    /// [`Emitter::emit_as`], with `live` sent to subscribers in place of `payload`: the same
    /// event (id, time, parent) with fields the journal leaves out, as the runtime strips a
    /// tool result's `contents` from its journal but sends them live.
    pub(crate) fn emit_as_with_live<P: Payload>(
        &self,
        agent: Option<&str>,
        payload: &P,
        live: Option<&P>,
    ) -> Result<Arc<Event>, LoopError> {
        let mut folder = self.lock_folder();
        let mut event = Event::new(payload, self.writer.last_id());
        event.agent_id = agent.map(str::to_owned);
        let live = live.map(|live| {
            let mut copy = Event::new(live, event.parent_id);
            copy.id = event.id;
            copy.timestamp = event.timestamp.clone();
            copy.agent_id = event.agent_id.clone();
            copy
        });
        self.emit_locked_with_live(&mut folder, event, live)
    }

    /// Emits a prepared event (e.g. from a resume plan).
    pub(crate) fn emit_event(&self, event: Event) -> Result<Arc<Event>, LoopError> {
        let mut folder = self.lock_folder();
        self.emit_locked(&mut folder, event)
    }

    fn emit_locked(&self, folder: &mut Folder, event: Event) -> Result<Arc<Event>, LoopError> {
        self.emit_locked_with_live(folder, event, None)
    }

    /// Appends and folds `event`; subscribers get `live` when given (the same event with
    /// live-only fields), else `event`.
    fn emit_locked_with_live(
        &self,
        folder: &mut Folder,
        event: Event,
        live: Option<Event>,
    ) -> Result<Arc<Event>, LoopError> {
        if self.suspended.load(Ordering::Acquire) {
            // Neither written nor folded nor sent: the caller goes on as if it were, and the
            // journal stays as the suspension found it.
            return Ok(Arc::new(event));
        }
        if !event.is_live_only() {
            let before = self.writer.byte_len();
            // `append` fsyncs before returning in `event` mode (the mode that pays for it);
            // otherwise durability is awaited at turn boundaries.
            self.writer.append(&event)?;
            folder.apply_persisted(&event, self.writer.byte_len() - before);
        } else {
            folder.apply(&event);
        }
        let event = Arc::new(event);
        let shown = live.map_or_else(|| Arc::clone(&event), Arc::new);
        let mut subs = lock_live(&self.subscribers);
        if !event.is_live_only() {
            subs.last_persisted = Some(event.id);
        }
        subs.send(&shown);
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
        lock_live(&self.subscribers).senders.clear();
        self.writer
    }
}

/// Sends an ephemeral notice to the live subscribers from outside the session's task (the send
/// queue changes on the caller's side, a shell ends on its own). It is chained to the last
/// persisted event the subscribers were sent, taken under the same lock as the fan-out, so
/// every subscriber sees a chain without gaps whatever the task appends meanwhile.
pub(crate) fn publish_live<P: Payload>(subscribers: &Subscribers, payload: &P) {
    let mut live = lock_live(subscribers);
    let event = Arc::new(Event::new(payload, live.last_persisted));
    debug_assert!(event.is_ephemeral(), "{} is persisted", P::TYPE);
    if !event.is_ephemeral() {
        return;
    }
    live.send(&event);
}

fn lock_live(subscribers: &Subscribers) -> MutexGuard<'_, Live> {
    subscribers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
