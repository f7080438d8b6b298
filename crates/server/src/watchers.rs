//! Watchers of every session's events besides its clients: the cli's live OpenTelemetry
//! traces (`ServerConfig::watchers`). A watcher gets each event in order, from a task of its
//! own between the session and its clients, and is told when the session's stream ends; it
//! must not block (the clients' events pass through the same task).

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use turnstile_journal::{Event, Uuid};

/// One session's watcher.
pub trait SessionWatch: Send {
    /// An event the session emitted, persisted or live-only.
    fn event(&mut self, event: &Event);
    /// The session's stream ended: it closed.
    fn end(self: Box<Self>);
}

/// What makes a watcher for each session opened (created or resumed).
pub trait SessionWatchers: Send + Sync + std::fmt::Debug {
    /// The watcher of `session`, if it is to be watched.
    fn open(&self, session: Uuid) -> Option<Box<dyn SessionWatch>>;
}

/// `events` as the session's clients get them, each one shown to the watcher of `watchers`
/// for `session` first; `events` itself when there is none.
pub fn watched(
    watchers: Option<&Arc<dyn SessionWatchers>>,
    session: Uuid,
    events: UnboundedReceiver<Arc<Event>>,
) -> UnboundedReceiver<Arc<Event>> {
    tee(watchers.and_then(|w| w.open(session)), events)
}

/// Forwards `events`, each shown to `watch` first; `watch` is ended when they end. Without a
/// watcher, `events` itself.
pub fn tee(
    watch: Option<Box<dyn SessionWatch>>,
    mut events: UnboundedReceiver<Arc<Event>>,
) -> UnboundedReceiver<Arc<Event>> {
    let Some(mut watch) = watch else {
        return events;
    };
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            watch.event(&event);
            // The clients may be gone while the session finishes: the watcher still sees it.
            let _ = tx.send(event);
        }
        watch.end();
    });
    rx
}
