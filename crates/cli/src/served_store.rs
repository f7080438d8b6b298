//! The JetStream store as the SDK server's remote store (`turnstile serve --store nats://…`):
//! `turnstile-server` knows a store only through its object-safe `RemoteStore` traits, this
//! file implements them with `turnstile-store-nats`.

use std::sync::{Arc, Mutex};

use turnstile_journal::{Event, JournalSink, SessionSummary, StateRoot, Uuid};
use turnstile_server::remote_store::{
    AttachMode, RemoteSession, RemoteStore, StoreError, StoreFuture,
};
use turnstile_store::{Attachment, JournalStore};
use turnstile_store_nats::{LiveFeed, NatsAttachment, NatsStore};

/// The server's sessions kept in JetStream.
#[derive(Debug)]
pub struct ServedNats {
    store: Arc<NatsStore>,
}

impl ServedNats {
    /// Serves sessions from `store`.
    pub fn new(store: NatsStore) -> Self {
        ServedNats {
            store: Arc::new(store),
        }
    }
}

impl RemoteStore for ServedNats {
    fn describe(&self) -> String {
        self.store.describe()
    }

    fn attach<'a>(
        &'a self,
        id: Uuid,
        root: &'a StateRoot,
        mode: AttachMode,
    ) -> StoreFuture<'a, Result<Arc<dyn RemoteSession>, StoreError>> {
        Box::pin(async move {
            let attachment = self.store.attach(id, root, mode).await?;
            if mode == AttachMode::Resume {
                // As `turnstile resume` does: a fresh copy starts from the stored folded state.
                if let Err(e) =
                    crate::stored_checkpoint::adopt(&self.store, id, &root.session(id).dir).await
                {
                    eprintln!("warning: the stored checkpoint of {id} is not used: {e:#}");
                }
            }
            let session: Arc<dyn RemoteSession> = Arc::new(ServedSession {
                id,
                store: Arc::clone(&self.store),
                root: root.clone(),
                sink: attachment.sink(),
                live: self.store.live_feed(&attachment),
                attachment: Mutex::new(Some(attachment)),
            });
            Ok(session)
        })
    }

    fn list(&self) -> StoreFuture<'_, Result<Vec<SessionSummary>, StoreError>> {
        Box::pin(self.store.list())
    }

    fn summary(&self, id: Uuid) -> StoreFuture<'_, Result<Option<SessionSummary>, StoreError>> {
        Box::pin(self.store.summary(id))
    }
}

/// One session attached to JetStream while the server has it open.
struct ServedSession {
    id: Uuid,
    store: Arc<NatsStore>,
    root: StateRoot,
    sink: Option<Arc<dyn JournalSink>>,
    live: LiveFeed,
    /// Taken by the first `detach`.
    attachment: Mutex<Option<NatsAttachment>>,
}

impl RemoteSession for ServedSession {
    fn sink(&self) -> Option<Arc<dyn JournalSink>> {
        self.sink.clone()
    }

    fn publish_live<'a>(&'a self, event: &'a Event) -> StoreFuture<'a, ()> {
        Box::pin(self.live.publish(event))
    }

    fn detach(&self) -> StoreFuture<'_, Result<(), StoreError>> {
        let attachment = self
            .attachment
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        Box::pin(async move {
            match attachment {
                Some(attachment) => {
                    self.store.detach(attachment, &self.root).await?;
                    let dir = self.root.session(self.id).dir;
                    crate::stored_checkpoint::record_after_close(&self.store, self.id, &dir).await;
                    Ok(())
                }
                None => Ok(()),
            }
        })
    }
}
