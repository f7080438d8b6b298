//! The publisher's seal records (`stored_seal.rs`): each goes out after the lines queued
//! before it, while the lease is held, with `Nats-Expected-Last-Subject-Sequence` = the
//! stream sequence of the seal's previous record (a writer that lost the session to another,
//! which continued the seal, is refused) and `Nats-Msg-Id` = `<session>:seal:<record number>`
//! (a retry is deduplicated). A record that follows a refused line never goes out: the sink
//! has failed by then. A seal that cannot be stored for another reason (a record over the
//! server's max_payload, a store unreachable for the whole retry time) stops the seal, never
//! the journal: `turnstile verify` then shows the unsealed tail.
//!
//! A record's acknowledgement is not waited for before the next line goes out: lines and
//! records are on different subjects, and the record was sent after every line it covers was
//! acknowledged, so it is stored after them whatever comes next. Waiting would add a round
//! trip to every turn (one publish in seven at six lines a turn). It is settled before the
//! next record is sent (which names its sequence) and before the publisher stops; a record
//! whose acknowledgement fails is then retried as above, under its same message id.

use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::{PublishAckFuture, PublishErrorKind};
use turnstile_journal::SinkErrorKind;

use super::{MSG_ID, Publisher, RETRY_FOR, fail, lock};
use crate::leader;
use crate::stored_seal::{SealTail, seal_message_id};

/// A record sent, its acknowledgement not yet read.
pub(super) struct InFlight {
    record: bytes::Bytes,
    tail: SealTail,
    ack: PublishAckFuture,
}

/// How one try of a record ended.
enum Tried {
    Stored(u64),
    /// Another writer's record is the subject's last.
    Fenced,
    Retry(String),
    GiveUp(String),
}

impl Publisher {
    fn seal_tail(&self) -> Option<SealTail> {
        *self
            .seal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_seal_tail(&self, tail: Option<SealTail>) {
        *self
            .seal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tail;
    }

    fn take_in_flight(&self) -> Option<InFlight> {
        self.seal_in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Reads the acknowledgement of the record in flight, if any; a failed one is retried
    /// until stored, refused or given up (see the module doc).
    pub(super) async fn settle_seal(&self) {
        let Some(InFlight { record, tail, ack }) = self.take_in_flight() else {
            return;
        };
        match ack.await {
            Ok(ack) => self.set_seal_tail(Some(SealTail {
                records: tail.records + 1,
                last_seq: ack.sequence,
            })),
            Err(e) => {
                tracing::warn!(error = %e, "a seal record was not acknowledged; trying it again");
                self.store_seal(record).await;
            }
        }
    }

    /// Sends one seal record after everything queued before it, its acknowledgement read
    /// later (see the module doc).
    pub(super) async fn publish_seal(&self, record: bytes::Bytes) {
        self.settle_seal().await;
        let Some(tail) = self.seal_tail() else {
            return;
        };
        if !self.lease_held().await {
            return;
        }
        match self.send_seal(&record, tail).await {
            Ok(ack) => {
                *self
                    .seal_in_flight
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some(InFlight { record, tail, ack });
            }
            Err(e) => {
                tracing::warn!(error = %e, "a seal record could not be sent; trying it again");
                self.store_seal(record).await;
            }
        }
    }

    /// Stores one seal record, waiting for its acknowledgement, retried (see the module doc).
    async fn store_seal(&self, record: bytes::Bytes) {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(20);
        loop {
            let Some(tail) = self.seal_tail() else {
                return;
            };
            if !self.lease_held().await {
                return;
            }
            match self.try_seal(&record, tail).await {
                Tried::Stored(seq) => {
                    self.set_seal_tail(Some(SealTail {
                        records: tail.records + 1,
                        last_seq: seq,
                    }));
                    return;
                }
                Tried::Fenced => {
                    let mut st = lock(&self.shared.state);
                    let e = self.error(
                        SinkErrorKind::Fenced,
                        format!("another writer wrote the session's seal after stream sequence {} of the seal stream; this writer stops without writing (resume the session to continue from the stored journal)", tail.last_seq),
                    );
                    fail(&self.shared, &mut st, e);
                    return;
                }
                Tried::Retry(reason) if started.elapsed() < RETRY_FOR => {
                    tracing::warn!(error = %reason, "publishing a seal record failed; retrying with the same message id");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                Tried::Retry(reason) | Tried::GiveUp(reason) => {
                    tracing::warn!(session = %self.id, error = %reason, "the seal could not be stored; the journal goes on unsealed (`turnstile verify` shows the unsealed tail)");
                    self.set_seal_tail(None);
                    return;
                }
            }
        }
    }

    /// Sends `record` as the record after `tail`, fenced and named (see the module doc).
    async fn send_seal(
        &self,
        record: &bytes::Bytes,
        tail: SealTail,
    ) -> Result<PublishAckFuture, async_nats::jetstream::context::PublishError> {
        let msg_id = seal_message_id(self.id, tail.records + 1);
        let mut headers = HeaderMap::new();
        headers.insert(MSG_ID, msg_id.as_str());
        headers.insert(
            "Nats-Expected-Last-Subject-Sequence",
            tail.last_seq.to_string().as_str(),
        );
        self.js
            .publish_with_headers(self.seal_subject.clone(), headers, record.clone())
            .await
    }

    async fn try_seal(&self, record: &bytes::Bytes, tail: SealTail) -> Tried {
        let msg_id = seal_message_id(self.id, tail.records + 1);
        let outcome = match self.send_seal(record, tail).await {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(ack) => Tried::Stored(ack.sequence),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                // Ours if an earlier try was stored with its acknowledgement lost (as for
                // lines: `stored_already`).
                match leader::last_message(&self.seals, &self.seal_subject).await {
                    Ok(Some(last))
                        if last.sequence > tail.last_seq
                            && last
                                .headers
                                .get(MSG_ID)
                                .is_some_and(|id| id.as_str() == msg_id) =>
                    {
                        Tried::Stored(last.sequence)
                    }
                    Ok(_) => Tried::Fenced,
                    Err(e) => Tried::Retry(e.to_string()),
                }
            }
            Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => Tried::GiveUp(format!(
                "a seal record of {} bytes is over the server's max_payload",
                record.len()
            )),
            Err(e) => Tried::Retry(e.to_string()),
        }
    }
}
