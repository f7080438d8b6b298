//! Live events on core NATS (never stored): every event of a running session, ephemeral ones
//! too, as its live JSON line on `<prefix>.live.<id>`, so a watcher on any host sees deltas
//! and `session.idle` as they happen.
//!
//! Fenced like the journal. A feed belongs to the writer's sink: it sends nothing once the
//! sink failed or while the lease's last renewal is not fresh, sends an event of a persisted
//! type only once the store acknowledged its line (so a watcher never sees a line the store
//! refused), and marks every message with the lease's token. A watcher follows the lease key
//! and drops every message whose token is not the holder's: a paused old writer woken after
//! another host took the session is silent on the live channel too.

use std::sync::Arc;

use async_nats::HeaderMap;
use async_nats::jetstream::kv;
use futures_util::StreamExt;
use turnstile_journal::{Event, Uuid};
use turnstile_store::StoreError;

use crate::leader;
use crate::records::Holder;
use crate::sink::NatsSink;

/// The header naming the lease (its token) a live message was sent under.
pub(crate) const WRITER: &str = "Turnstile-Writer";

/// Publishes a session's live events.
#[derive(Debug, Clone)]
pub struct LiveFeed {
    client: async_nats::Client,
    subject: String,
    writer: Option<Arc<NatsSink>>,
}

impl LiveFeed {
    pub(crate) fn new(
        client: async_nats::Client,
        subject: String,
        writer: Option<Arc<NatsSink>>,
    ) -> Self {
        LiveFeed {
            client,
            subject,
            writer,
        }
    }

    /// Sends `event` to the watchers (best effort: a live view is not the journal), under the
    /// rules of the module doc; a feed without a writer (a read-only attachment) sends nothing.
    pub async fn publish(&self, event: &Event) {
        let Some(writer) = &self.writer else {
            return;
        };
        if !event.is_live_only() && !writer.stored(event.id).await {
            return;
        }
        if !writer.holds_lease() {
            return;
        }
        let mut line = Vec::with_capacity(event.data.get().len() + 180);
        event.write_live(&mut line);
        let mut headers = HeaderMap::new();
        headers.insert(WRITER, writer.token());
        let _ = self
            .client
            .publish_with_headers(self.subject.clone(), headers, line.into())
            .await;
    }
}

/// A subscription to a session's live events, from its lease holder only.
pub struct LiveEvents {
    subscriber: async_nats::Subscriber,
    holders: kv::Watch,
    leases: kv::Store,
    id: Uuid,
    /// The token of the lease holder as last seen (kept when the key is deleted: the holder
    /// that gave the lease up was the one writing).
    holder: Option<String>,
}

impl LiveEvents {
    pub(crate) async fn subscribe(
        client: &async_nats::Client,
        leases: &kv::Store,
        subject: String,
        id: Uuid,
        store: &str,
    ) -> Result<Self, StoreError> {
        let remote = |e: &dyn std::fmt::Display| StoreError::Remote {
            store: store.to_owned(),
            what: format!("watching session {id}"),
            reason: e.to_string(),
        };
        let subscriber = client.subscribe(subject).await.map_err(|e| remote(&e))?;
        // Changes first, then the current value: nothing falls between the two.
        let holders = leases.watch(id.to_string()).await.map_err(|e| remote(&e))?;
        let mut events = LiveEvents {
            subscriber,
            holders,
            leases: leases.clone(),
            id,
            holder: None,
        };
        events.refresh().await;
        // The subscription is registered with the server before the history is read.
        let _ = client.flush().await;
        Ok(events)
    }

    /// Reads the holder's token from the bucket's leader (kept when it cannot be read or the
    /// key is gone).
    async fn refresh(&mut self) {
        if let Ok(Some(value)) = leader::kv_value(&self.leases, &self.id.to_string()).await
            && let Ok(holder) = serde_json::from_slice::<Holder>(&value)
        {
            self.holder = Some(holder.token);
        }
    }

    /// The next live event of the lease holder; `None` when the connection ends. Messages
    /// of another writer and lines that are not events are skipped.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            let message = tokio::select! {
                // A change of holder is applied before any message that came with it.
                biased;
                Some(Ok(entry)) = self.holders.next() => {
                    if entry.operation == kv::Operation::Put
                        && let Ok(holder) = serde_json::from_slice::<Holder>(&entry.value)
                    {
                        self.holder = Some(holder.token);
                    }
                    continue;
                }
                message = self.subscriber.next() => message?,
            };
            let writer = message
                .headers
                .as_ref()
                .and_then(|h| h.get(WRITER))
                .map(|w| w.as_str().to_owned());
            if writer.is_some() && writer != self.holder {
                // Perhaps a holder this watcher has not heard of yet: ask the leader once.
                self.refresh().await;
            }
            if writer.is_none() || writer != self.holder {
                tracing::debug!(session = %self.id, "dropping a live message of a writer that does not hold the lease");
                continue;
            }
            match Event::from_line(&message.payload) {
                Ok(event) => return Some(event),
                Err(e) => {
                    tracing::warn!(session = %self.id, error = %e, "a live message is not an event")
                }
            }
        }
    }
}
