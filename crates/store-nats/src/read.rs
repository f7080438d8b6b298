//! Reading stored messages in order: a session's subject, or every entry of a bucket, through
//! an ordered push consumer (no state left on the server; the server sends without waiting
//! for pull requests, under flow control, and the client recreates it on a gap).
//!
//! The server places such a reader on any replica of the stream, and a replica that has just
//! come back serves what it holds so far: its "nothing pending" can come before the end. So a
//! read goes on until the message the stream leader named as the last one (`leader.rs`), not
//! until the reader's replica has nothing more.

use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::push::OrderedConfig;
use async_nats::jetstream::stream::Stream;
use futures_util::StreamExt;

use crate::transient::retry;

/// Longest a read may go without a message before it fails: a lagging replica catches up
/// well within it, a stream that lost the message never will.
const STALL: Duration = Duration::from_secs(20);

/// How long one reader may go without a message before it is replaced.
const REPLACE_AFTER: Duration = Duration::from_millis(500);

/// One stored message: its stream sequence, subject and payload.
pub(crate) struct Stored {
    pub seq: u64,
    pub subject: async_nats::Subject,
    pub payload: bytes::Bytes,
}

/// One read: which messages, from where, up to where, and how long it may go without
/// progress. Built by the caller with [`Read::to`] and adjusted by [`Read::within`] and
/// [`Read::caught_up`].
///
/// A reader that goes [`REPLACE_AFTER`] without a message is most likely on a replica that
/// lags: it is dropped and a new one (placed anew by the server) goes on from the next
/// sequence (`LastPerSubject` starts over: the caller keeps a key's later message). After
/// `stall` without any progress the read fails.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    /// The subjects read (empty: the whole stream).
    pub(crate) filter: String,
    /// Where the read starts.
    pub(crate) deliver: DeliverPolicy,
    /// The stream sequence the read reaches at least (the leader's last message of
    /// `filter`, which must exist: 0 reads nothing).
    pub(crate) until: u64,
    /// How long the read may go without progress before it fails.
    pub(crate) stall: Duration,
    /// Where it stops.
    pub(crate) end: End,
}

/// Where a read stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// At stream sequence `until` (or the first message after it).
    Until,
    /// At `until`, then on while the reader has messages pending: the current end.
    ///
    /// For a bucket that keeps one message per key (the session index) a read that stops at
    /// `until` can miss a key altogether: when the key is written again while the read is
    /// under way, its message the reader had not reached yet is removed and the new one lies
    /// after `until`. Reading on to the end takes the new one. The end is a message with
    /// nothing pending after it, or, past `until`, [`REPLACE_AFTER`] without a message (what
    /// was counted as pending may be removed before it is sent).
    CaughtUp,
}

impl Read {
    /// Every message of `filter` from `deliver` on, up to and including stream sequence
    /// `until`, failing after [`STALL`] without progress.
    pub(crate) fn to(filter: String, deliver: DeliverPolicy, until: u64) -> Self {
        Read {
            filter,
            deliver,
            until,
            stall: STALL,
            end: End::Until,
        }
    }

    /// The same read, failing after `stall` without progress instead of [`STALL`]: for a
    /// read with a cheaper way out than waiting (the compacted listing, replaced while it is
    /// read, gives way to the index itself).
    pub(crate) fn within(self, stall: Duration) -> Self {
        Read { stall, ..self }
    }

    /// The same read, going on past `until` to the end the reader sees ([`End::CaughtUp`]).
    pub(crate) fn caught_up(self) -> Self {
        Read {
            end: End::CaughtUp,
            ..self
        }
    }

    /// Every message collected.
    pub(crate) async fn collect(
        self,
        client: &async_nats::Client,
        stream: &Stream,
    ) -> Result<Vec<Stored>, String> {
        let mut out = Vec::new();
        self.each(client, stream, |message| {
            out.push(message);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Every message handed to `each` as it arrives, so a journal of any size is read in
    /// bounded memory; an error from `each` ends the read.
    pub(crate) async fn each(
        self,
        client: &async_nats::Client,
        stream: &Stream,
        mut each: impl FnMut(Stored) -> Result<(), String>,
    ) -> Result<(), String> {
        let Read {
            filter,
            deliver,
            until,
            stall,
            end,
        } = self;
        if until == 0 {
            return Ok(());
        }
        let mut progress_at = tokio::time::Instant::now();
        let mut from = deliver;
        let mut last_seq = None;
        loop {
            let inbox = client.new_inbox();
            let consumer = retry("creating a reader", || {
                stream.create_consumer(OrderedConfig {
                    deliver_subject: inbox.clone(),
                    filter_subject: filter.clone(),
                    deliver_policy: from,
                    ..Default::default()
                })
            })
            .await
            .map_err(|e| format!("cannot create a reader: {e}"))?;
            let mut messages = consumer
                .messages()
                .await
                .map_err(|e| format!("cannot read: {e}"))?;
            loop {
                let Ok(next) = tokio::time::timeout(REPLACE_AFTER, messages.next()).await else {
                    // Past `until`, a quiet reader is at the end: the messages it counted as
                    // pending were removed (their keys written again) before it got them.
                    if end == End::CaughtUp && last_seq.is_some_and(|seq| seq >= until) {
                        return Ok(());
                    }
                    break;
                };
                let message = next
                    .ok_or_else(|| format!("the reader ended before stream sequence {until}"))?
                    .map_err(|e| format!("read failed: {e}"))?;
                let info = message
                    .info()
                    .map_err(|e| format!("bad message metadata: {e}"))?;
                let (seq, pending) = (info.stream_sequence, info.pending);
                each(Stored {
                    seq,
                    subject: message.subject.clone(),
                    payload: message.payload.clone(),
                })?;
                last_seq = Some(seq);
                progress_at = tokio::time::Instant::now();
                if seq >= until && (end == End::Until || pending == 0) {
                    return Ok(());
                }
            }
            if progress_at.elapsed() >= stall {
                return Err(format!(
                    "no message for {} s before stream sequence {until} (read up to {})",
                    stall.as_secs_f64(),
                    last_seq.unwrap_or(0)
                ));
            }
            tracing::debug!(until, "a reader stalled; placing a new one");
            if let (DeliverPolicy::All | DeliverPolicy::ByStartSequence { .. }, Some(last)) =
                (deliver, last_seq)
            {
                from = DeliverPolicy::ByStartSequence {
                    start_sequence: last + 1,
                };
            }
        }
    }
}
