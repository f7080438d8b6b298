//! Reading stored messages in order: a session's subject, or the last value of every key of
//! a bucket, through an ordered consumer (no state left on the server).

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::stream::Stream;
use futures_util::StreamExt;

/// How long reads are retried while a cluster elects a leader.
const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(20);

/// One stored message: its stream sequence and payload.
pub(crate) struct Stored {
    pub seq: u64,
    pub subject: String,
    pub payload: bytes::Bytes,
}

/// Every message of `filter` from `deliver` on, until the consumer has none pending. The
/// caller knows there is at least one (an empty filter would wait for the first publish).
pub(crate) async fn read_all(
    stream: &Stream,
    filter: String,
    deliver: DeliverPolicy,
) -> Result<Vec<Stored>, String> {
    // A cluster electing a stream leader times requests out for a few seconds: retry.
    let started = std::time::Instant::now();
    let consumer = loop {
        match stream
            .create_consumer(OrderedConfig {
                filter_subject: filter.clone(),
                deliver_policy: deliver,
                ..Default::default()
            })
            .await
        {
            Ok(consumer) => break consumer,
            Err(e) if started.elapsed() < RETRY_FOR => {
                tracing::warn!(error = %e, "creating a reader failed; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Err(e) => return Err(format!("cannot create a reader: {e}")),
        }
    };
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| format!("cannot read: {e}"))?;
    let mut out = Vec::new();
    while let Some(message) = messages.next().await {
        let message = message.map_err(|e| format!("read failed: {e}"))?;
        let info = message
            .info()
            .map_err(|e| format!("bad message metadata: {e}"))?;
        let (seq, pending) = (info.stream_sequence, info.pending);
        out.push(Stored {
            seq,
            subject: message.subject.to_string(),
            payload: message.payload.clone(),
        });
        if pending == 0 {
            break;
        }
    }
    Ok(out)
}
