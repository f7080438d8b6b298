//! The one-writer lease: a key per session in a KV bucket whose entries live `ttl` unless
//! rewritten. Taken with create (fails while a holder's entry lives), renewed with update by
//! revision (fails once someone else wrote it), given up with delete by revision.
//!
//! The lease alone cannot fence a paused writer (it may not know it lost the lease); the
//! expected-subject-sequence header on every append does (`sink.rs`). The lease decides who
//! may try, the sequence check decides who succeeds.

use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{CreateErrorKind, Store, UpdateErrorKind};
use turnstile_journal::Uuid;
use turnstile_store::StoreError;

use crate::leader;
use crate::records::Holder;
use crate::transient::{ELECTION_WAIT, RETRY_PAUSE, is_transient};

/// A lease this process holds.
#[derive(Debug, Clone)]
pub struct LeaseGrant {
    /// Who we are in the bucket.
    pub holder: Holder,
    /// The revision of our entry (the next renewal's expected revision).
    pub revision: u64,
    /// When the lease lapses unless renewed (with a margin below the bucket's TTL).
    pub valid_until: Instant,
    /// The bucket's TTL.
    pub ttl: Duration,
}

/// How much of the TTL a holder counts on: it stops writing before the server forgets it.
pub(crate) fn usable(ttl: Duration) -> Duration {
    ttl.mul_f64(0.8)
}

/// How often a waiting taker asks again. The wait ends when the server drops the dead
/// holder's entry, TTL after its last renewal; asking every 50 ms puts the taker at most one
/// round trip plus 50 ms behind that moment, for one create request per pause.
const POLL: Duration = Duration::from_millis(50);

/// Takes the lease of `id`; with `wait`, waits up to the TTL and a second for a holder that
/// stopped renewing (a dead process) before giving up.
pub(crate) async fn take(
    kv: &Store,
    store: &str,
    id: Uuid,
    ttl: Duration,
    wait: bool,
) -> Result<LeaseGrant, StoreError> {
    let key = id.to_string();
    let holder = Holder::this_process();
    let value = serde_json::to_vec(&holder).unwrap_or_default();
    let started = Instant::now();
    let deadline = started + ttl + Duration::from_secs(1);
    // A cluster electing the bucket's leader cannot answer for a few seconds.
    let answer_by = deadline.max(started + ELECTION_WAIT);
    // Whether an earlier create may have been stored with its answer lost: only then can an
    // existing entry be ours, and only then is it worth reading while waiting.
    let mut maybe_ours = false;
    loop {
        let asked = Instant::now();
        let failed = match kv.create(&key, value.clone().into()).await {
            Ok(revision) => {
                tracing::debug!(session = %id, waited_ms = started.elapsed().as_millis() as u64, "took the lease");
                return Ok(LeaseGrant {
                    holder,
                    revision,
                    valid_until: asked + usable(ttl),
                    ttl,
                });
            }
            Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
                let give_up = !wait || Instant::now() >= deadline;
                if !maybe_ours && !give_up {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                let current = current_holder(kv, &key).await;
                if let Some((held, revision)) = &current
                    && held.token == holder.token
                {
                    // An earlier try was stored but its answer lost: the lease is ours.
                    return Ok(LeaseGrant {
                        holder,
                        revision: *revision,
                        valid_until: asked + usable(ttl),
                        ttl,
                    });
                }
                if give_up {
                    return Err(StoreError::Held {
                        store: store.to_owned(),
                        id,
                        holder: current
                            .map_or_else(|| "another writer".into(), |(h, _)| h.describe()),
                        ttl_secs: ttl.as_secs(),
                    });
                }
                tokio::time::sleep(POLL).await;
                continue;
            }
            Err(e) => e,
        };
        if !is_transient(&failed) || Instant::now() >= answer_by {
            return Err(StoreError::Remote {
                store: store.to_owned(),
                what: format!("taking the lease of session {id}"),
                reason: failed.to_string(),
            });
        }
        maybe_ours = true;
        tracing::warn!(error = %failed, "taking a lease failed; asking again");
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// Who holds the lease `key` now and the revision of their entry, as the bucket's leader has
/// it; `None` when nobody does or it cannot be read.
pub(crate) async fn current_holder(kv: &Store, key: &str) -> Option<(Holder, u64)> {
    let message = leader::last_message(&kv.stream, &format!("{}{key}", kv.prefix))
        .await
        .ok()
        .flatten()?;
    let holder = serde_json::from_slice::<Holder>(&message.payload).ok()?;
    Some((holder, message.sequence))
}

/// Renews a lease taken earlier (after a long working-copy sync, before the sink's own renewals
/// start); fails when someone else holds it now.
pub(crate) async fn renew(
    kv: &Store,
    store: &str,
    id: Uuid,
    grant: &mut LeaseGrant,
) -> Result<(), StoreError> {
    let value = serde_json::to_vec(&grant.holder).unwrap_or_default();
    let asked = Instant::now();
    // No local deadline here: an update by revision succeeds only while our entry lives and
    // nobody else wrote the key, which is exactly "the lease was ours all along", however long
    // the read took. An entry that expired meanwhile refuses it.
    let revision = kv
        .update(id.to_string(), value.into(), grant.revision)
        .await
        .map_err(|e| StoreError::Remote {
            store: store.to_owned(),
            what: format!("renewing the lease of session {id}"),
            reason: if e.kind() == UpdateErrorKind::WrongLastRevision {
                "the lease lapsed or was taken by another process while the journal was read; try again".into()
            } else {
                e.to_string()
            },
        })?;
    grant.revision = revision;
    grant.valid_until = asked + usable(grant.ttl);
    Ok(())
}
