//! A session of `run` or `resume` kept in a JetStream store (`--store nats://…`): attached
//! before the session opens, its writes sent through the store's sink, detached after.

use std::process::ExitCode;

use anyhow::{Context, Result};
use turnstile_journal::StateRoot;
use turnstile_loop::SessionParts;
use turnstile_store::{AttachMode, Attachment, JournalStore};
use turnstile_store_nats::{LiveFeed, NatsAttachment, NatsStore};

use crate::store::StoreArgs;

/// A session attached to a JetStream store: the store, its lease and sink, its live feed.
pub(super) struct Remote {
    pub(super) store: NatsStore,
    pub(super) id: uuid::Uuid,
    pub(super) attachment: NatsAttachment,
    pub(super) live: LiveFeed,
}

impl Remote {
    pub(super) async fn attach(
        store: &StoreArgs,
        id: uuid::Uuid,
        root: &StateRoot,
        mode: AttachMode,
    ) -> Result<Option<Self>> {
        let Some(config) = store.nats()? else {
            return Ok(None);
        };
        let store = crate::store::open_nats(config).await?;
        let attachment = store
            .attach(id, root, mode)
            .await
            .with_context(|| format!("cannot open session {id} in {}", store.describe()))?;
        if mode == AttachMode::Resume {
            // A copy just made from the subject has no checkpoint of its own; the store's
            // folded state spares the resume a fold of the whole journal.
            match crate::stored_checkpoint::adopt(&store, id, &root.session(id).dir).await {
                Ok(crate::stored_checkpoint::Adopted::Mismatch) => eprintln!(
                    "note: the stored checkpoint of {id} does not match its journal; the journal is folded whole"
                ),
                Ok(_) => {}
                Err(e) => eprintln!("warning: the stored checkpoint of {id} is not used: {e:#}"),
            }
        }
        let live = store.live_feed(&attachment);
        Ok(Some(Remote {
            store,
            id,
            attachment,
            live,
        }))
    }

    /// Makes `parts` write through this attachment's sink.
    pub(super) fn connect(remote: Option<&Self>, parts: &mut SessionParts) {
        if let Some(remote) = remote {
            parts.config.journal_sink = remote.attachment.sink();
        }
    }

    /// Detaches after the session ran; the session's own error, if any, comes first.
    pub(super) async fn detach(
        remote: Option<Self>,
        root: &StateRoot,
        ran: Result<ExitCode>,
    ) -> Result<ExitCode> {
        let Some(remote) = remote else {
            return ran;
        };
        let failure = remote
            .attachment
            .nats_sink()
            .and_then(|sink| sink.failure());
        let detached = remote.store.detach(remote.attachment, root).await;
        if let Some(failure) = failure {
            return Err(anyhow::Error::new(failure).context("the session stopped"));
        }
        let code = ran?;
        detached.context("cannot record the session in the store")?;
        crate::stored_checkpoint::record_after_close(
            &remote.store,
            remote.id,
            &root.session(remote.id).dir,
        )
        .await;
        Ok(code)
    }
}
