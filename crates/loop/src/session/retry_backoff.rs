//! When a compaction the threshold starts may be tried again after its summary call failed.

/// Share of the window a request must grow by, past the size whose summary call failed,
/// before the threshold starts another compaction.
const RETRY_GROWTH_SHARE: f64 = 0.10;

/// Turns after a failed summary call at which the threshold tries again however little the
/// history grew.
const RETRY_AFTER_TURNS: u32 = 5;

/// When a compaction the threshold starts may be tried again after its summary call failed:
/// once the request grew by [`RETRY_GROWTH_SHARE`] of the window, after
/// [`RETRY_AFTER_TURNS`] turns, or at once when the request would not fit the window at all
/// (a summary loses less than a refusal). A summary model that is down costs one call per
/// few turns, not one per turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct RetryBackoff {
    /// The request's tokens when its summary call failed; `None`: no failure to wait out.
    failed_at: Option<u64>,
    /// Turns over the threshold since then.
    turns: u32,
}

impl RetryBackoff {
    /// Whether a request of `tokens` in a window of `limit` may start a compaction now
    /// (counts the turn when it may not).
    pub(super) fn allows(&mut self, tokens: u64, limit: u64) -> bool {
        let Some(failed_at) = self.failed_at else {
            return true;
        };
        self.turns += 1;
        let growth = (limit as f64 * RETRY_GROWTH_SHARE) as u64;
        tokens > limit
            || tokens >= failed_at.saturating_add(growth)
            || self.turns >= RETRY_AFTER_TURNS
    }

    /// A summary call failed for a request of `tokens`.
    pub(super) fn failed(&mut self, tokens: u64) {
        *self = RetryBackoff {
            failed_at: Some(tokens),
            turns: 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_summary_waits_for_growth_turns_or_a_full_window() {
        let mut retry = RetryBackoff::default();
        assert!(retry.allows(9_000, 10_000), "no failure: at once");
        retry.failed(8_500);
        assert!(!retry.allows(8_600, 10_000));
        assert!(!retry.allows(9_400, 10_000), "grew by less than a tenth");
        assert!(retry.allows(9_500, 10_000), "grew by a tenth of the window");
        retry.failed(9_000);
        for _ in 1..RETRY_AFTER_TURNS {
            assert!(!retry.allows(9_000, 10_000));
        }
        assert!(retry.allows(9_000, 10_000), "the fifth turn tries again");
        retry.failed(9_900);
        assert!(
            retry.allows(10_001, 10_000),
            "a request past the window: at once"
        );
    }
}
