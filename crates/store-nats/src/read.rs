//! Reading stored messages in order: a session's subject, or the last value of every key of
//! a bucket, through an ordered consumer (no state left on the server).

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::stream::Stream;
use futures_util::StreamExt;

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
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: filter,
            deliver_policy: deliver,
            ..Default::default()
        })
        .await
        .map_err(|e| format!("cannot create a reader: {e}"))?;
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
