//! Connecting, and creating (or finding) the stream and the buckets of a store.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use turnstile_store::StoreError;

use crate::config::NatsConfig;

fn remote(config: &NatsConfig, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Remote {
        store: format!("{} stream {}", config.url, config.stream),
        what: what.to_owned(),
        reason: e.to_string(),
    }
}

/// A JetStream context on a fresh connection.
pub(crate) async fn connect(config: &NatsConfig) -> Result<jetstream::Context, StoreError> {
    let options = match &config.credentials {
        Some(path) => async_nats::ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|e| {
                remote(
                    config,
                    &format!("reading credentials {}", path.display()),
                    e,
                )
            })?,
        None => async_nats::ConnectOptions::new(),
    };
    let client = options
        .connection_timeout(Duration::from_secs(5))
        .connect(
            config
                .url
                .split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .collect::<Vec<_>>(),
        )
        .await
        .map_err(|e| remote(config, "connecting", e))?;
    let mut js = jetstream::new(client);
    js.set_timeout(Duration::from_secs(5));
    Ok(js)
}

/// The journals' stream, created when missing.
pub(crate) async fn journal_stream(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<stream::Stream, StoreError> {
    if let Ok(stream) = js.get_stream(&config.stream).await {
        return Ok(stream);
    }
    let created = js
        .get_or_create_stream(stream::Config {
            name: config.stream.clone(),
            subjects: vec![config.journal_subjects()],
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            allow_direct: true,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        })
        .await;
    match created {
        Ok(stream) => Ok(stream),
        Err(e) => retry_get(|| js.get_stream(&config.stream))
            .await
            .ok_or_else(|| remote(config, "creating the journal stream", e)),
    }
}

async fn bucket(
    js: &jetstream::Context,
    config: &NatsConfig,
    name: String,
    max_age: Duration,
) -> Result<kv::Store, StoreError> {
    if let Ok(kv) = js.get_key_value(&name).await {
        return Ok(kv);
    }
    // The bucket's stream made here as the KV convention lays it out: the client's own
    // bucket creation first asks for account limits in a shape servers before 2.10 do not
    // answer.
    let created = js
        .create_stream(stream::Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            max_age,
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: stream::DiscardPolicy::New,
            duplicate_window: Duration::from_secs(120).min(if max_age.is_zero() {
                Duration::from_secs(120)
            } else {
                max_age
            }),
            ..Default::default()
        })
        .await;
    if let Err(e) = created {
        // Creation fails when the bucket exists but could not be read a moment ago (a cluster
        // electing a leader answers neither): read it again before giving up.
        return retry_get(|| js.get_key_value(&name))
            .await
            .ok_or_else(|| remote(config, &format!("creating bucket {name}"), e));
    }
    js.get_key_value(&name)
        .await
        .map_err(|e| remote(config, &format!("opening bucket {name}"), e))
}

/// Reads that could not be answered while a cluster elects a stream leader are tried again
/// for this long.
const ELECTION_WAIT: Duration = Duration::from_secs(10);

/// `get` tried every 250 ms for [`ELECTION_WAIT`]; the first success, or `None`.
async fn retry_get<T, E, F, Fut>(mut get: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + ELECTION_WAIT;
    loop {
        if let Ok(found) = get().await {
            return Some(found);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The lease bucket (entries live `lease_ttl`).
pub(crate) async fn lease_bucket(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<kv::Store, StoreError> {
    bucket(js, config, config.lease_bucket(), config.lease_ttl).await
}

/// The session index bucket.
pub(crate) async fn index_bucket(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<kv::Store, StoreError> {
    bucket(js, config, config.index_bucket(), Duration::ZERO).await
}

/// The checkpoint bucket.
pub(crate) async fn checkpoint_bucket(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<kv::Store, StoreError> {
    bucket(js, config, config.checkpoint_bucket(), Duration::ZERO).await
}

/// The TTL the lease bucket really has: a bucket made earlier with another TTL keeps its own,
/// and the server's expiry is what a holder and a waiting taker must go by.
pub(crate) async fn lease_ttl(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<Duration, StoreError> {
    let mut stream = js
        .get_stream(format!("KV_{}", config.lease_bucket()))
        .await
        .map_err(|e| remote(config, "reading the lease bucket", e))?;
    let info = stream
        .info()
        .await
        .map_err(|e| remote(config, "reading the lease bucket", e))?;
    let age = info.config.max_age;
    Ok(if age.is_zero() { config.lease_ttl } else { age })
}
