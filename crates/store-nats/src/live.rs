//! Live events on core NATS (never stored): every event of a running session, ephemeral ones
//! too, as its live JSON line on `<prefix>.live.<id>`, so a watcher on any host sees deltas
//! and `session.idle` as they happen.

use futures_util::StreamExt;
use turnstile_journal::{Event, Uuid};
use turnstile_store::StoreError;

/// Publishes a session's live events.
#[derive(Debug, Clone)]
pub struct LiveFeed {
    client: async_nats::Client,
    subject: String,
}

impl LiveFeed {
    pub(crate) fn new(client: async_nats::Client, subject: String) -> Self {
        LiveFeed { client, subject }
    }

    /// Sends `event` to the watchers (best effort: a live view is not the journal).
    pub async fn publish(&self, event: &Event) {
        let mut line = Vec::with_capacity(event.data.get().len() + 180);
        event.write_live(&mut line);
        let _ = self.client.publish(self.subject.clone(), line.into()).await;
    }
}

/// A subscription to a session's live events.
pub struct LiveEvents {
    subscriber: async_nats::Subscriber,
    id: Uuid,
}

impl LiveEvents {
    pub(crate) async fn subscribe(
        client: &async_nats::Client,
        subject: String,
        id: Uuid,
        store: &str,
    ) -> Result<Self, StoreError> {
        let subscriber = client
            .subscribe(subject)
            .await
            .map_err(|e| StoreError::Remote {
                store: store.to_owned(),
                what: format!("watching session {id}"),
                reason: e.to_string(),
            })?;
        // The subscription is registered with the server before the history is read.
        let _ = client.flush().await;
        Ok(LiveEvents { subscriber, id })
    }

    /// The next live event; `None` when the connection ends. Lines that are not events are
    /// skipped with a warning.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            let message = self.subscriber.next().await?;
            match Event::from_line(&message.payload) {
                Ok(event) => return Some(event),
                Err(e) => {
                    tracing::warn!(session = %self.id, error = %e, "a live message is not an event")
                }
            }
        }
    }
}
