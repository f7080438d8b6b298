//! How to reach the JetStream store and how its stream and buckets are named and replicated.

use std::path::PathBuf;
use std::time::Duration;

/// The default lease TTL in seconds (see [`NatsConfig::new`]).
pub const DEFAULT_LEASE_SECS: u64 = 20;

/// The default [`NatsConfig::listing_compact_after`]: a listing of fewer sessions reads the
/// index alone, which is as quick at that size.
pub const DEFAULT_LISTING_COMPACT_AFTER: usize = 1000;

/// Settings of a [`crate::NatsStore`].
#[derive(Debug, Clone)]
pub struct NatsConfig {
    /// Server URL(s), `nats://HOST:PORT`, comma-separated for a cluster.
    pub url: String,
    /// The stream holding every session's subject; buckets are named after it.
    pub stream: String,
    /// Replicas of the stream and the buckets (1, or 3 on a cluster).
    pub replicas: usize,
    /// A NATS credentials file (JWT and nkey seed), if the server asks for one.
    pub credentials: Option<PathBuf>,
    /// How long a writer's lease lasts without renewal.
    pub lease_ttl: Duration,
    /// The fewest index messages after the compacted listing (or in the index, before there
    /// is one) for which a listing writes it anew; one in 64 of the sessions when more
    /// (`listing.rs`).
    pub listing_compact_after: usize,
}

impl NatsConfig {
    /// Defaults for a store at `url`: stream `TURNSTILE`, one replica, a 20 s lease.
    ///
    /// The lease outlives a leader election of its own bucket by 3/4 of its TTL (renewed every
    /// TTL/4): 15 s at 20 s, above the 4.2-8.6 s elections measured on a loaded 3-node
    /// cluster (`docs/performance.md`); it is also how long a dead writer's session waits
    /// before another host may resume it.
    pub fn new(url: impl Into<String>) -> Self {
        NatsConfig {
            url: url.into(),
            stream: "TURNSTILE".into(),
            replicas: 1,
            credentials: None,
            lease_ttl: Duration::from_secs(DEFAULT_LEASE_SECS),
            listing_compact_after: DEFAULT_LISTING_COMPACT_AFTER,
        }
    }

    /// The subject tokens prefix of the journals: the stream name in lower case.
    pub fn prefix(&self) -> String {
        self.stream.to_ascii_lowercase()
    }

    /// The stored subject of a session's journal, `<prefix>.journal.<id>`.
    pub fn journal_subject(&self, id: uuid::Uuid) -> String {
        format!("{}.journal.{id}", self.prefix())
    }

    /// The subjects the stream captures.
    pub fn journal_subjects(&self) -> String {
        format!("{}.journal.*", self.prefix())
    }

    /// The stored subject of a session's seal, `<prefix>.seal.<id>` (one message a seal
    /// record).
    pub fn seal_subject(&self, id: uuid::Uuid) -> String {
        format!("{}.seal.{id}", self.prefix())
    }

    /// The stream of the seals, `<stream>_seals`.
    pub fn seal_stream(&self) -> String {
        format!("{}_seals", self.stream)
    }

    /// The subjects the seal stream captures.
    pub fn seal_subjects(&self) -> String {
        format!("{}.seal.*", self.prefix())
    }

    /// The core-NATS (never stored) subject of a session's live events.
    pub fn live_subject(&self, id: uuid::Uuid) -> String {
        format!("{}.live.{id}", self.prefix())
    }

    /// The bucket of writer leases.
    pub fn lease_bucket(&self) -> String {
        format!("{}_leases", self.stream)
    }

    /// The bucket of the session index.
    pub fn index_bucket(&self) -> String {
        format!("{}_sessions", self.stream)
    }

    /// The bucket of checkpoints.
    pub fn checkpoint_bucket(&self) -> String {
        format!("{}_checkpoints", self.stream)
    }

    /// The object bucket of folded states too large for a checkpoint entry.
    pub fn state_bucket(&self) -> String {
        format!("{}_states", self.stream)
    }

    /// The object bucket of the compacted session listing.
    pub fn listing_bucket(&self) -> String {
        format!("{}_listing", self.stream)
    }
}

/// Whether `url` names a NATS server (`nats://`, `tls://`), as `--store` takes it.
pub fn is_nats_url(url: &str) -> bool {
    url.starts_with("nats://") || url.starts_with("tls://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_stream() {
        let c = NatsConfig::new("nats://127.0.0.1:4222");
        let id = uuid::Uuid::nil();
        assert_eq!(
            c.journal_subject(id),
            "turnstile.journal.00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(c.journal_subjects(), "turnstile.journal.*");
        assert!(!c.live_subject(id).starts_with("turnstile.journal."));
        assert_eq!(c.lease_bucket(), "TURNSTILE_leases");
        assert!(!c.seal_subject(id).starts_with("turnstile.journal."));
        assert_eq!(c.seal_stream(), "TURNSTILE_seals");
        assert!(is_nats_url("nats://h:1") && !is_nats_url("/var/state"));
    }
}
