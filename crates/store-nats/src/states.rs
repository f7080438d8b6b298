//! The state bucket: folded states too large for one message (a checkpoint entry must fit in
//! the server's `max_payload`, 1 MB by default), kept as JetStream objects, one per session
//! under its id. The client's object store cuts a state into chunks under that limit and
//! describes it; this file sizes the chunks, reads them back through the leader-bounded reader
//! of `read.rs` (not the client's object reader, see [`StateBucket::read`]), bounds what it
//! reads, and checks it against the size and hash the checkpoint entry names.
//!
//! One object per session, replaced by each write: the bucket never holds more than one
//! state per session, and nothing is left to collect. A write that loses the entry's
//! compare-and-swap to another host (`checkpoints.rs`) may leave the object holding its own
//! state under the other host's entry; the hash then differs, the reader takes no state, and
//! the next resume folds the journal whole, as it would without a checkpoint.
//!
//! The bucket is opened the first time a state needs it (`objects.rs`), so a store whose
//! states all fit inline never asks for it.

use async_nats::jetstream;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::object_store::{InfoErrorKind, ObjectMetadata};
use turnstile_store::{StoreError, journal_bytes};
use uuid::Uuid;

use crate::config::NatsConfig;
use crate::connect::remote;
use crate::objects::{LazyBucket, Opened};
use crate::records::FoldedObject;
use crate::{leader, read, transient};

/// The largest folded state kept or read back: a state is held in memory whole when it is
/// written and when it is adopted, so a damaged or hostile entry naming a larger one is not
/// read (the journal is folded instead).
pub const MAX_STATE_BYTES: u64 = 256 << 20;

/// The chunk size the client uses when the server takes larger messages.
const LARGEST_CHUNK: usize = 128 << 10;

/// Room left in each chunk message for what the client adds to it.
const CHUNK_HEADROOM: usize = 1 << 10;

/// The state bucket of one store, opened on first use.
#[derive(Clone, Debug)]
pub(crate) struct StateBucket {
    bucket: LazyBucket,
}

impl Default for StateBucket {
    fn default() -> Self {
        StateBucket {
            bucket: LazyBucket::new(NatsConfig::state_bucket),
        }
    }
}

/// Why a stored state was not read back; each costs a full fold, never a wrong state.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unread {
    /// The entry names a state larger than [`MAX_STATE_BYTES`].
    #[error("it names a state of {0} bytes, over the {MAX_STATE_BYTES} bytes read back")]
    TooLarge(u64),
    /// The bucket holds no state for the session, or one of another size (replaced since).
    #[error("the state bucket holds no state of {0} bytes for it")]
    Missing(u64),
    /// The bytes read are not the ones the entry names.
    #[error("the state read back is not the one the entry names (its hash differs)")]
    Replaced,
    /// The bytes are not JSON.
    #[error("the state read back is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The server could not be asked.
    #[error("{0}")]
    Remote(String),
}

impl StateBucket {
    /// Keeps `state` (a folded state as JSON) as the state of `id`, replacing the one kept
    /// before; what the checkpoint entry must name for a reader to take it.
    pub(crate) async fn write(
        &self,
        js: &jetstream::Context,
        config: &NatsConfig,
        id: Uuid,
        state: &[u8],
    ) -> Result<FoldedObject, StoreError> {
        let what = || format!("keeping the folded state of {id}");
        if state.len() as u64 > MAX_STATE_BYTES {
            return Err(remote(
                config,
                &what(),
                format!(
                    "it is {} bytes, over the {MAX_STATE_BYTES} bytes a kept state may have; a resume elsewhere folds the whole journal",
                    state.len()
                ),
            ));
        }
        let Some(Opened {
            objects: bucket, ..
        }) = self.bucket.open(js, config, true).await?
        else {
            return Err(remote(config, &what(), "the state bucket cannot be made"));
        };
        let chunk_size = crate::objects::chunk_size(js, CHUNK_HEADROOM, LARGEST_CHUNK);
        transient::retry("keeping a folded state", || {
            let meta = ObjectMetadata {
                name: id.to_string(),
                chunk_size: Some(chunk_size),
                ..Default::default()
            };
            let mut reader = state;
            async move { bucket.put(meta, &mut reader).await }
        })
        .await
        .map_err(|e| remote(config, &what(), e))?;
        Ok(FoldedObject {
            bytes: state.len() as u64,
            sha256: journal_bytes::sha256_hex(state),
        })
    }

    /// The state of `id` the entry names by `object`, parsed.
    pub(crate) async fn read(
        &self,
        js: &jetstream::Context,
        config: &NatsConfig,
        id: Uuid,
        object: &FoldedObject,
    ) -> Result<serde_json::Value, Unread> {
        if object.bytes > MAX_STATE_BYTES {
            return Err(Unread::TooLarge(object.bytes));
        }
        let bucket = self
            .bucket
            .open(js, config, false)
            .await
            .map_err(|e| Unread::Remote(e.to_string()))?
            .ok_or(Unread::Missing(object.bytes))?;
        let name = id.to_string();
        let info =
            match transient::retry("reading a folded state", || bucket.objects.info(&name)).await {
                Ok(info) => info,
                Err(e) if e.kind() == InfoErrorKind::NotFound => {
                    return Err(Unread::Missing(object.bytes));
                }
                Err(e) => return Err(Unread::Remote(e.to_string())),
            };
        if info.deleted || info.size as u64 != object.bytes {
            return Err(Unread::Missing(object.bytes));
        }
        // The chunks are read as a journal is (`read.rs`), up to the last one the leader
        // holds: the client's own object reader ends where its replica has nothing pending,
        // which on a replica still catching up is before the end (seen in `tests/cluster.rs`).
        let chunks = format!("$O.{}.C.{}", bucket.name, info.nuid);
        let until = leader::last_sequence(&bucket.stream, &chunks)
            .await
            .map_err(|e| Unread::Remote(e.to_string()))?;
        let mut state = Vec::with_capacity(usize::try_from(object.bytes).unwrap_or(0));
        read::Read::to(chunks, DeliverPolicy::All, until)
            .each(&js.client(), &bucket.stream, |chunk| {
                // Never more than the entry names, whatever the chunks hold.
                if (state.len() + chunk.payload.len()) as u64 > object.bytes {
                    return Err("the chunks hold more than the entry names".to_owned());
                }
                state.extend_from_slice(&chunk.payload);
                Ok(())
            })
            .await
            .map_err(Unread::Remote)?;
        if state.len() as u64 != object.bytes || journal_bytes::sha256_hex(&state) != object.sha256
        {
            return Err(Unread::Replaced);
        }
        serde_json::from_slice(&state).map_err(Unread::NotJson)
    }
}
