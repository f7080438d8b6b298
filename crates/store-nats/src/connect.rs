//! Connecting, and creating (or finding) the stream and the buckets of a store.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use turnstile_store::StoreError;

use crate::config::NatsConfig;
use crate::transient::{self, ELECTION_WAIT, RETRY_PAUSE};

/// A failure of the store named by `config`.
pub(crate) fn remote(config: &NatsConfig, what: &str, e: impl std::fmt::Display) -> StoreError {
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
    let options = options.connection_timeout(Duration::from_secs(5));
    let servers: Vec<&str> = config
        .url
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    let mut tries = 0;
    let client = loop {
        tries += 1;
        // `connect` takes the options by value; the credentials were read once above.
        match options.clone().connect(servers.as_slice()).await {
            Ok(client) => break client,
            Err(e) if transient::is_dropped_handshake(&e) && tries < transient::CONNECT_TRIES => {
                tracing::warn!(error = %e, "the server dropped the connection; connecting again");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(e) => return Err(remote(config, "connecting", e)),
        }
    };
    let mut js = jetstream::new(client);
    js.set_timeout(Duration::from_secs(5));
    Ok(js)
}

/// The journals' stream, created when missing.
pub(crate) async fn journal_stream(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<stream::Stream, StoreError> {
    find_or_create(
        js,
        config,
        "the journal stream",
        stream::Config {
            name: config.stream.clone(),
            subjects: vec![config.journal_subjects()],
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            // Every read goes to the stream leader (`leader.rs`); no replica answers alone.
            allow_direct: false,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        },
    )
    .await
}

/// The seals' stream (`seal.rs`), created when missing: apart from the journals', so that
/// nothing that reads or counts the journal stream meets a seal record.
pub(crate) async fn seal_stream(
    js: &jetstream::Context,
    config: &NatsConfig,
) -> Result<stream::Stream, StoreError> {
    find_or_create(
        js,
        config,
        "the seal stream",
        stream::Config {
            name: config.seal_stream(),
            subjects: vec![config.seal_subjects()],
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            allow_direct: false,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        },
    )
    .await
}

/// The stream `wanted.name`, made with `wanted` when it does not exist. What the cluster
/// cannot answer while it elects a leader is asked again for [`ELECTION_WAIT`]; any other
/// failure is reported at once.
pub(crate) async fn find_or_create(
    js: &jetstream::Context,
    config: &NatsConfig,
    what: &str,
    wanted: stream::Config,
) -> Result<stream::Stream, StoreError> {
    let deadline = tokio::time::Instant::now() + ELECTION_WAIT;
    loop {
        let failed: async_nats::Error = match js.get_stream(&wanted.name).await {
            Ok(found) => return Ok(found),
            Err(e) if transient::is_missing_stream(&e) => {
                match js.create_stream(wanted.clone()).await {
                    Ok(made) => return Ok(made),
                    // Made by another process since the read: read it again.
                    Err(e) if transient::is_name_taken(&e) => {
                        if let Ok(found) = js.get_stream(&wanted.name).await {
                            return Ok(found);
                        }
                        Box::new(e)
                    }
                    Err(e) => Box::new(e),
                }
            }
            Err(e) => Box::new(e),
        };
        if !transient::is_transient(failed.as_ref()) || tokio::time::Instant::now() >= deadline {
            return Err(remote(config, &format!("opening {what}"), failed));
        }
        tracing::warn!(error = %failed, "opening {what} failed; asking again");
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// Bucket `name` (its stream laid out as the KV convention has it), created when missing.
async fn bucket(
    js: &jetstream::Context,
    config: &NatsConfig,
    name: String,
    max_age: Duration,
) -> Result<kv::Store, StoreError> {
    // The stream made here rather than by the client's bucket creation, which first asks
    // for account limits in a shape servers before 2.10 do not answer.
    let stream = find_or_create(
        js,
        config,
        &format!("bucket {name}"),
        stream::Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            max_age,
            storage: stream::StorageType::File,
            num_replicas: config.replicas,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: false,
            discard: stream::DiscardPolicy::New,
            duplicate_window: Duration::from_secs(120).min(if max_age.is_zero() {
                Duration::from_secs(120)
            } else {
                max_age
            }),
            ..Default::default()
        },
    )
    .await?;
    // What `get_key_value` builds from the same stream, without asking for it again.
    Ok(kv::Store {
        prefix: format!("$KV.{name}."),
        stream_name: format!("KV_{name}"),
        name,
        stream,
        put_prefix: None,
        use_jetstream_prefix: false,
    })
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
pub(crate) fn lease_ttl(leases: &kv::Store, config: &NatsConfig) -> Duration {
    let age = leases.stream.cached_info().config.max_age;
    if age.is_zero() { config.lease_ttl } else { age }
}
