//! Checkpoint entries: one key per session in the checkpoint bucket, naming the journal prefix
//! it covers (events, bytes, stream sequence, SHA-256) and, when one was recorded, the folded
//! state of that prefix. An entry only moves forward: it is written by compare-and-swap on the
//! key's revision, read through the leader, and never replaced by one covering less. A state
//! that would make the entry larger than one message goes to the state bucket (`states.rs`)
//! and the entry names its size and hash instead.

use async_nats::jetstream::kv;
use turnstile_store::StoreError;
use uuid::Uuid;

use crate::records::{StoreCheckpoint, StoredEntry};
use crate::{NatsStore, leader, transient};

/// How many times a checkpoint write looks again at an entry another host wrote meanwhile.
const CHECKPOINT_SWAPS: usize = 8;

/// Why one compare-and-swap of an entry did not write it.
enum Unswapped {
    /// Another host wrote the key since it was read: read it again.
    Raced,
    /// The server refused or could not be reached.
    Failed(String),
}

impl NatsStore {
    /// The checkpoint of `id` with its folded state, if one is stored and readable. A state
    /// the state bucket cannot give back as the entry names it is left out (with a warning):
    /// the resume then folds the journal, which is what an entry without a state means.
    pub async fn checkpoint(&self, id: Uuid) -> Result<Option<StoreCheckpoint>, StoreError> {
        let Some(entry) = self.checkpoint_entry(id).await? else {
            return Ok(None);
        };
        let StoredEntry {
            mut checkpoint,
            folded_object,
        } = entry;
        if let Some(object) = folded_object {
            match self.states.read(&self.js, &self.config, id, &object).await {
                Ok(state) => checkpoint.folded = Some(state),
                Err(why) => {
                    tracing::warn!(%id, "the stored folded state is not used: {why}");
                }
            }
        }
        Ok(Some(checkpoint))
    }

    /// The checkpoint entry of `id` as the bucket holds it, without reading a state kept in
    /// the state bucket; `None` when there is none or it is unreadable (which only costs a
    /// full read of the subject).
    pub async fn checkpoint_entry(&self, id: Uuid) -> Result<Option<StoredEntry>, StoreError> {
        let value = leader::kv_value(&self.checkpoints, &id.to_string())
            .await
            .map_err(|e| self.remote(format!("reading the checkpoint of {id}"), e))?;
        Ok(value.and_then(|v| serde_json::from_slice(&v).ok()))
    }

    /// The largest message the server takes (its `max_payload`): a KV value, and a checkpoint
    /// entry with its folded state inline, must fit in it.
    pub fn max_value_bytes(&self) -> usize {
        self.js.client().max_payload()
    }

    /// Stores `checkpoint` as the checkpoint of `id` unless the stored one covers more of the
    /// journal (a later `stream_seq`): hosts recording at once never put an older entry over a
    /// newer one (a compare-and-swap on the key's revision, asked again when another host
    /// wrote in between). Returns whether `checkpoint` was stored. The caller vouches that it
    /// covers a prefix of the stored journal (a copy read from the store). A folded state too
    /// large for the entry is kept in the state bucket, once the entry is known to move
    /// forward; one over [`crate::MAX_STATE_BYTES`] is refused.
    pub async fn put_checkpoint(
        &self,
        id: Uuid,
        checkpoint: &StoreCheckpoint,
    ) -> Result<bool, StoreError> {
        let key = id.to_string();
        let what = || format!("writing the checkpoint of {id}");
        let inline = serde_json::to_vec(checkpoint).map_err(|e| self.remote(what(), e))?;
        let mut value = match &checkpoint.folded {
            Some(_) if inline.len() > self.max_value_bytes() => None,
            _ => Some(bytes::Bytes::from(inline)),
        };
        for _ in 0..CHECKPOINT_SWAPS {
            let current = leader::kv_entry(&self.checkpoints, &key)
                .await
                .map_err(|e| self.remote(what(), e))?;
            let stored = current
                .as_ref()
                .and_then(|entry| entry.value.as_ref())
                .and_then(|v| serde_json::from_slice::<StoredEntry>(v).ok());
            if stored.is_some_and(|s| s.checkpoint.stream_seq > checkpoint.stream_seq) {
                return Ok(false);
            }
            let value = match &value {
                Some(value) => value.clone(),
                None => value
                    .insert(self.entry_keeping_state(id, checkpoint).await?)
                    .clone(),
            };
            match self
                .swap(&key, current.map(|entry| entry.revision), value)
                .await
            {
                Ok(()) => return Ok(true),
                Err(Unswapped::Raced) => continue,
                Err(Unswapped::Failed(reason)) => return Err(self.remote(what(), reason)),
            }
        }
        Err(self.remote(
            what(),
            format!("other hosts wrote it each of {CHECKPOINT_SWAPS} times it was tried"),
        ))
    }

    /// Keeps the folded state of `checkpoint` in the state bucket; the entry naming it.
    async fn entry_keeping_state(
        &self,
        id: Uuid,
        checkpoint: &StoreCheckpoint,
    ) -> Result<bytes::Bytes, StoreError> {
        let what = || format!("writing the checkpoint of {id}");
        let state = serde_json::to_vec(&checkpoint.folded).map_err(|e| self.remote(what(), e))?;
        let object = self
            .states
            .write(&self.js, &self.config, id, &state)
            .await?;
        let entry = StoredEntry {
            checkpoint: StoreCheckpoint {
                folded: None,
                sha256: checkpoint.sha256.clone(),
                ..*checkpoint
            },
            folded_object: Some(object),
        };
        serde_json::to_vec(&entry)
            .map(bytes::Bytes::from)
            .map_err(|e| self.remote(what(), e))
    }

    /// Writes `value` as `key` if the key's revision is still `revision` (`None`: the key was
    /// never written).
    async fn swap(
        &self,
        key: &str,
        revision: Option<u64>,
        value: bytes::Bytes,
    ) -> Result<(), Unswapped> {
        match revision {
            Some(revision) => transient::retry("writing a checkpoint", || {
                self.checkpoints.update(key, value.clone(), revision)
            })
            .await
            .map(drop)
            .map_err(|e| match e.kind() {
                kv::UpdateErrorKind::WrongLastRevision => Unswapped::Raced,
                _ => Unswapped::Failed(e.to_string()),
            }),
            None => transient::retry("writing a checkpoint", || {
                self.checkpoints.create(key, value.clone())
            })
            .await
            .map(drop)
            .map_err(|e| match e.kind() {
                kv::CreateErrorKind::AlreadyExists => Unswapped::Raced,
                _ => Unswapped::Failed(e.to_string()),
            }),
        }
    }
}
