//! The lease's renewal task of a publisher (see the parent module's doc).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::UpdateErrorKind;
use tokio::sync::watch;
use turnstile_journal::{SinkError, SinkErrorKind, Uuid};

use super::{LAPSED, Publisher, Shared, fail, lock};
use crate::lease::{LeaseGrant, current_holder, usable};
use crate::transient::RETRY_PAUSE;

impl Publisher {
    /// Starts the renewal of `lease` in `leases`, until `stopped`; it gives back the lease as
    /// last renewed.
    pub(super) fn spawn_renewal(
        &self,
        leases: &async_nats::jetstream::kv::Store,
        lease: LeaseGrant,
        stopped: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<LeaseGrant> {
        let renewer = Renewer {
            leases: leases.clone(),
            key: self.id.to_string(),
            value: serde_json::to_vec(&lease.holder).unwrap_or_default().into(),
            store: self.store.clone(),
            id: self.id,
            shared: Arc::clone(&self.shared),
        };
        tokio::spawn(async move { renewer.run(lease, stopped).await })
    }
}

/// The lease's renewal: its own task and timer, so that no publish, however long retried,
/// delays it (see the module doc).
struct Renewer {
    leases: async_nats::jetstream::kv::Store,
    key: String,
    value: bytes::Bytes,
    store: String,
    id: Uuid,
    shared: Arc<Shared>,
}

impl Renewer {
    fn fail(&self, reason: &str) {
        let mut st = lock(&self.shared.state);
        let e = SinkError {
            kind: SinkErrorKind::LeaseLost,
            store: self.store.clone(),
            session: self.id,
            reason: reason.into(),
        };
        fail(&self.shared, &mut st, e);
    }

    /// Renews every TTL/4 after the last success, every [`RETRY_PAUSE`] after a failure,
    /// until `stop` or the sink fails; gives back the lease as last renewed.
    async fn run(&self, mut lease: LeaseGrant, mut stop: watch::Receiver<bool>) -> LeaseGrant {
        let mut next = tokio::time::Instant::now() + lease.ttl / 4;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = stop.changed() => return lease,
            }
            let (gone, failed) = {
                let st = lock(&self.shared.state);
                (st.lease_gone, st.failed.is_some())
            };
            if failed {
                return lease;
            }
            let asked = Instant::now();
            if asked >= gone {
                self.fail(LAPSED);
                return lease;
            }
            // A request is given no longer than the lease has left: past that, no answer helps.
            let answer = tokio::time::timeout(
                gone - asked,
                self.leases
                    .update(&self.key, self.value.clone(), lease.revision),
            )
            .await;
            match answer {
                Ok(Ok(revision)) => {
                    lease.revision = revision;
                    self.renewed(asked, lease.ttl);
                    next = tokio::time::Instant::from_std(asked) + lease.ttl / 4;
                }
                Ok(Err(e)) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                    // A renewal stored with its answer lost moved the revision: the entry is
                    // still ours if it names our token.
                    match current_holder(&self.leases, &self.key).await {
                        Some((held, revision)) if held.token == lease.holder.token => {
                            lease.revision = revision;
                            next = tokio::time::Instant::now();
                        }
                        _ => {
                            self.fail("the lease was taken by another process (this one was paused or cut off longer than the lease); nothing more is written — resume the session to continue");
                            return lease;
                        }
                    }
                }
                // The bucket may be electing a leader: ask again soon; the TTL decides.
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "lease renewal failed; asking again");
                    next = tokio::time::Instant::now() + RETRY_PAUSE;
                }
                Err(_) => next = tokio::time::Instant::now(),
            }
        }
    }

    fn renewed(&self, asked: Instant, ttl: Duration) {
        let mut st = lock(&self.shared.state);
        st.lease_until = asked + usable(ttl);
        st.lease_gone = asked + ttl;
        self.shared.progress.notify_all();
        self.shared.changed.send_replace(());
    }
}
