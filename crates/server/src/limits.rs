//! How many TCP connections the server holds at once, and a log line that cannot flood stderr.
//!
//! Every connection costs a descriptor, and so does what its sessions open (journals, locks,
//! model connections, tool pipes). Left unbounded, idle connections alone use up the process's
//! descriptors, and then `accept`, `session.create` and every tool fail with `EMFILE`. So the
//! listener serves at most [`default_max_connections`] connections (or `--max-connections`):
//! the one beyond is answered with a JSON-RPC error and closed, and descriptors stay free for
//! the sessions of the clients already connected.

use std::time::{Duration, Instant};

/// Descriptors kept out of the connections' share whatever the limit: the listener, stdio,
/// log files, the index and what the runtime itself opens.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// Most connections by default whatever the descriptor limit says, so that a process allowed a
/// million descriptors does not hold a million idle sockets either.
pub const MAX_DEFAULT_CONNECTIONS: u64 = 4096;

/// The default connection limit: half of the descriptors left once [`RESERVED_DESCRIPTORS`]
/// are set aside from the soft `RLIMIT_NOFILE` (the other half is for what those connections'
/// sessions open), at least 1 and at most [`MAX_DEFAULT_CONNECTIONS`]. With the usual soft
/// limit of 1024 that is 480.
pub fn default_max_connections() -> usize {
    connections_for_descriptors(descriptor_limit())
}

/// The rule of [`default_max_connections`] for a given descriptor limit.
pub fn connections_for_descriptors(nofile: u64) -> usize {
    let share = nofile.saturating_sub(RESERVED_DESCRIPTORS) / 2;
    usize::try_from(share.clamp(1, MAX_DEFAULT_CONNECTIONS)).unwrap_or(1)
}

/// The soft `RLIMIT_NOFILE` of this process; 1024 (the usual default) when it cannot be read,
/// and capped at `u32::MAX` when unlimited.
pub fn descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } == 0;
    if !ok {
        return 1024;
    }
    if limit.rlim_cur == libc::RLIM_INFINITY {
        return u64::from(u32::MAX);
    }
    limit.rlim_cur
}

/// A warning logged at most once per interval: the first occurrence is logged at once, and
/// the ones in between are counted and reported with the next line, so a condition that
/// repeats thousands of times a second writes one line a second, not a flood.
#[derive(Debug)]
pub(crate) struct RateLimitedLog {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    /// At most one line per `interval`.
    pub(crate) fn new(interval: Duration) -> Self {
        RateLimitedLog {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// Whether to log now; `Some(n)` with the number of occurrences left unlogged since the
    /// last line, `None` when this one is to be counted only.
    pub(crate) fn admit(&mut self) -> Option<u64> {
        let now = Instant::now();
        match self.last {
            Some(last) if now.duration_since(last) < self.interval => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }
}

/// How long the accept loop waits after an error that says descriptors or memory ran out:
/// doubling from [`Backoff::FIRST`] to [`Backoff::MAX`], back to nothing after an accept
/// succeeds. Without it the listener, still readable, fails again at once and spins.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    pub(crate) const FIRST: Duration = Duration::from_millis(5);
    pub(crate) const MAX: Duration = Duration::from_secs(1);

    /// The wait after one more failure.
    pub(crate) fn fail(&mut self) -> Duration {
        let wait = self.next.map_or(Self::FIRST, |d| (d * 2).min(Self::MAX));
        self.next = Some(wait);
        wait
    }

    /// An accept succeeded.
    pub(crate) fn reset(&mut self) {
        self.next = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_rule_leaves_the_reserve_and_half_the_rest() {
        assert_eq!(connections_for_descriptors(1024), 480);
        assert_eq!(connections_for_descriptors(256), 96);
        assert_eq!(connections_for_descriptors(10), 1);
        assert_eq!(connections_for_descriptors(1 << 20), 4096);
        let now = default_max_connections() as u64;
        assert!(now >= 1 && now < descriptor_limit().max(2), "{now}");
    }

    #[test]
    fn a_repeated_warning_is_logged_once_per_interval_with_the_count() {
        let mut log = RateLimitedLog::new(Duration::from_secs(3600));
        assert_eq!(log.admit(), Some(0));
        for _ in 0..1000 {
            assert_eq!(log.admit(), None);
        }
        let mut log = RateLimitedLog::new(Duration::ZERO);
        assert_eq!(log.admit(), Some(0));
        assert_eq!(log.admit(), Some(0));
    }

    #[test]
    fn the_backoff_doubles_to_its_maximum_and_resets() {
        let mut b = Backoff::default();
        assert_eq!(b.fail(), Backoff::FIRST);
        assert_eq!(b.fail(), Backoff::FIRST * 2);
        for _ in 0..20 {
            b.fail();
        }
        assert_eq!(b.fail(), Backoff::MAX);
        b.reset();
        assert_eq!(b.fail(), Backoff::FIRST);
    }
}
