//! When a compaction the threshold starts may be tried again after its summary call failed.

/// Turns over the threshold after a first failed summary call before the threshold tries
/// again; doubled after each further failure in a row.
const RETRY_AFTER_TURNS: u32 = 5;

/// Longest wait, in turns, however many summary calls failed in a row.
const MAX_RETRY_AFTER_TURNS: u32 = 80;

/// When a compaction the threshold starts may be tried again after its summary call failed:
/// after [`RETRY_AFTER_TURNS`] turns over the threshold, twice as many after each further
/// failure in a row (at most [`MAX_RETRY_AFTER_TURNS`]), and never sooner, even when the
/// request passes the window: the truncation fallback (`truncation.rs`) keeps it in the
/// window meanwhile. A summary model that cannot summarize (down, or answering with tool
/// calls) costs a few calls in a long session, not one per turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct RetryBackoff {
    /// Summary calls that failed in a row (0: no failure to wait out).
    failures: u32,
    /// Turns over the threshold since the last failure.
    turns: u32,
}

impl RetryBackoff {
    /// Whether a turn over the threshold may start a compaction now (counts the turn when it
    /// may not).
    pub(super) fn allows(&mut self) -> bool {
        if self.failures == 0 {
            return true;
        }
        self.turns += 1;
        self.turns >= self.wait()
    }

    /// A summary call failed.
    pub(super) fn failed(&mut self) {
        *self = RetryBackoff {
            failures: self.failures.saturating_add(1),
            turns: 0,
        };
    }

    /// Turns to wait after the failures so far.
    fn wait(&self) -> u32 {
        let doublings = self.failures.saturating_sub(1).min(16);
        RETRY_AFTER_TURNS
            .saturating_mul(1 << doublings)
            .min(MAX_RETRY_AFTER_TURNS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many turns pass before the backoff allows a try.
    fn turns_until_allowed(retry: &mut RetryBackoff) -> u32 {
        (1..=1000).find(|_| retry.allows()).unwrap_or(u32::MAX)
    }

    #[test]
    fn failed_summaries_wait_longer_each_time_up_to_a_cap() {
        let mut retry = RetryBackoff::default();
        assert!(retry.allows(), "no failure: at once");
        let mut waits = Vec::new();
        for _ in 0..7 {
            retry.failed();
            waits.push(turns_until_allowed(&mut retry));
        }
        assert_eq!(waits, [5, 10, 20, 40, 80, 80, 80]);
    }
}
