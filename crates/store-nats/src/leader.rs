//! Reads answered by a stream's leader. On a cluster a replica that was down and has just
//! come back holds an old prefix of the stream until it has caught up; a read it answers
//! (a direct get, or a reader placed on it) can miss what the writer had acknowledged. So
//! every read that decides something asks the leader for the last message first
//! (`STREAM.MSG.GET`, never a direct get), and a reader then reads up to that message
//! (`read.rs`), however late its own replica is.

use async_nats::jetstream::kv;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::{LastRawMessageErrorKind, Stream};

use crate::transient::retry;

/// The last message of `subject` (a filter, wildcards allowed) as the leader of `stream`
/// holds it; `None` when there is none. Asked again while the cluster cannot answer.
pub(crate) async fn last_message<I>(
    stream: &Stream<I>,
    subject: &str,
) -> Result<Option<StreamMessage>, async_nats::Error> {
    match retry("reading the last message", || {
        stream.get_last_raw_message_by_subject(subject)
    })
    .await
    {
        Ok(message) => Ok(Some(message)),
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
        Err(e) => Err(Box::new(e)),
    }
}

/// The stream sequence of the last message of `subject`; 0 when there is none.
pub(crate) async fn last_sequence(
    stream: &Stream,
    subject: &str,
) -> Result<u64, async_nats::Error> {
    Ok(last_message(stream, subject)
        .await?
        .map_or(0, |m| m.sequence))
}

/// The header a KV delete or purge leaves on its marker message.
const KV_OPERATION: &str = "KV-Operation";

/// The current value of `key` in bucket `kv` as its leader holds it; `None` when the key has
/// no value (never written, deleted or purged).
pub(crate) async fn kv_value(
    kv: &kv::Store,
    key: &str,
) -> Result<Option<bytes::Bytes>, async_nats::Error> {
    Ok(kv_entry(kv, key).await?.and_then(|entry| entry.value))
}

/// The last message of a KV key: its revision (what an update must name) and its value.
pub(crate) struct KvEntry {
    /// The message's stream sequence, the key's revision.
    pub(crate) revision: u64,
    /// `None` for a delete or purge marker.
    pub(crate) value: Option<bytes::Bytes>,
}

/// The last message of `key` in bucket `kv` as its leader holds it; `None` when the key was
/// never written.
pub(crate) async fn kv_entry(
    kv: &kv::Store,
    key: &str,
) -> Result<Option<KvEntry>, async_nats::Error> {
    let Some(message) = last_message(&kv.stream, &format!("{}{key}", kv.prefix)).await? else {
        return Ok(None);
    };
    // A delete or purge is stored as a marker message carrying this header; a put has none.
    let removed = message
        .headers
        .get(KV_OPERATION)
        .is_some_and(|op| op.as_str() != "PUT");
    Ok(Some(KvEntry {
        revision: message.sequence,
        value: (!removed).then_some(message.payload),
    }))
}
