//! Object buckets of the store (the folded states, the compacted listing): each one's stream
//! made here with direct gets off, so an object's description is read from the stream leader
//! like every deciding read (`leader.rs`), and opened the first time it is needed, so a store
//! that never needs one never asks for it.

use async_nats::jetstream::object_store::ObjectStore;
use async_nats::jetstream::{self, stream};
use tokio::sync::OnceCell;
use turnstile_store::StoreError;

use crate::config::NatsConfig;
use crate::connect::remote;

/// One object bucket, opened on first use.
#[derive(Clone)]
pub(crate) struct LazyBucket {
    bucket: std::sync::Arc<OnceCell<Opened>>,
    /// Its name, from the store's settings.
    name: fn(&NatsConfig) -> String,
}

/// An open bucket: the client's object store, and its stream for the reads.
#[derive(Clone)]
pub(crate) struct Opened {
    pub(crate) objects: ObjectStore,
    pub(crate) stream: stream::Stream,
    pub(crate) name: String,
}

impl std::fmt::Debug for LazyBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyBucket")
            .field("open", &self.bucket.initialized())
            .finish()
    }
}

impl LazyBucket {
    /// The bucket `name` gives the name of.
    pub(crate) fn new(name: fn(&NatsConfig) -> String) -> Self {
        LazyBucket {
            bucket: Default::default(),
            name,
        }
    }

    /// The bucket, opened (and made when `create`) on first use; `None` when it does not
    /// exist and `create` is false.
    pub(crate) async fn open(
        &self,
        js: &jetstream::Context,
        config: &NatsConfig,
        create: bool,
    ) -> Result<Option<&Opened>, StoreError> {
        if let Some(bucket) = self.bucket.get() {
            return Ok(Some(bucket));
        }
        let name = (self.name)(config);
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
}

/// The largest chunk the client can send to this server, less `headroom` for what the client
/// adds to each message, between `headroom` and `largest`.
pub(crate) fn chunk_size(js: &jetstream::Context, headroom: usize, largest: usize) -> usize {
    js.client()
        .max_payload()
        .saturating_sub(headroom)
        .clamp(headroom, largest)
}
