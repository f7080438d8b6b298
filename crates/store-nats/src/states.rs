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
//! The bucket's stream is made here, with direct gets off, so an object's description is
//! read from the stream leader like every deciding read (`leader.rs`); it is opened the first
//! time a state needs it, so a store whose states all fit inline never asks for it.

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::object_store::{InfoErrorKind, ObjectMetadata, ObjectStore};
use async_nats::jetstream::{self, stream};
use tokio::sync::OnceCell;
use turnstile_store::{StoreError, journal_bytes};
use uuid::Uuid;

use crate::config::NatsConfig;
use crate::connect::remote;
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
#[derive(Clone, Default)]
pub(crate) struct StateBucket {
    bucket: std::sync::Arc<OnceCell<Opened>>,
}

/// The open bucket: the client's object store, and its stream for the reads.
#[derive(Clone)]
struct Opened {
    objects: ObjectStore,
    stream: stream::Stream,
    name: String,
}

impl std::fmt::Debug for StateBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateBucket")
            .field("open", &self.bucket.initialized())
            .finish()
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
    /// The bucket, opened (and made when `create`) on first use; `None` when it does not
    /// exist and `create` is false.
    async fn open(
        &self,
        js: &jetstream::Context,
        config: &NatsConfig,
        create: bool,
    ) -> Result<Option<&Opened>, StoreError> {
        if let Some(bucket) = self.bucket.get() {
            return Ok(Some(bucket));
        }
        let name = config.state_bucket();
        let wanted = stream::Config {
            name: format!("OBJ_{name}"),
            subjects: vec![format!("$O.{name}.C.>"), format!("$O.{name}.M.>")],
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            discard: stream::DiscardPolicy::New,
            allow_rollup: true,
            allow_direct: false,
            ..Default::default()
        };
        let stream = if create {
            crate::connect::find_or_create(js, config, &format!("bucket {name}"), wanted).await?
        } else {
            match js.get_stream(&wanted.name).await {
                Ok(stream) => stream,
                Err(_) => return Ok(None),
            }
        };
        let objects = js
            .get_object_store(&name)
            .await
            .map_err(|e| remote(config, &format!("opening bucket {name}"), e))?;
        let opened = Opened {
            objects,
            stream,
            name,
        };
        Ok(Some(
            self.bucket.get_or_init(|| async move { opened }).await,
        ))
    }

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
        }) = self.open(js, config, true).await?
        else {
            return Err(remote(config, &what(), "the state bucket cannot be made"));
        };
        let chunk_size = js
            .client()
            .max_payload()
            .saturating_sub(CHUNK_HEADROOM)
            .clamp(CHUNK_HEADROOM, LARGEST_CHUNK);
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
        read::read_each(
            &js.client(),
            &bucket.stream,
            chunks,
            DeliverPolicy::All,
            until,
            |chunk| {
                // Never more than the entry names, whatever the chunks hold.
                if (state.len() + chunk.payload.len()) as u64 > object.bytes {
                    return Err("the chunks hold more than the entry names".to_owned());
                }
                state.extend_from_slice(&chunk.payload);
                Ok(())
            },
        )
        .await
        .map_err(Unread::Remote)?;
        if state.len() as u64 != object.bytes || journal_bytes::sha256_hex(&state) != object.sha256
        {
            return Err(Unread::Replaced);
        }
        serde_json::from_slice(&state).map_err(Unread::NotJson)
    }
}
