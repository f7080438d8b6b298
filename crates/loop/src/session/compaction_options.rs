//! What a compaction is asked and what it reports: the SDK's `infiniteSessions` (when the
//! threshold starts one), a compaction asked for, and what it did.

use turnstile_journal::payload::SessionUsageInfo;

/// The SDK's `infiniteSessions`: whether and when the history is compacted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InfiniteSessions {
    /// Compaction on (the runtime's default). Off, the history is still compacted when the
    /// next request would not fit the window at all: a summary loses less than a refusal.
    pub enabled: bool,
    /// Share of the window (0–1) the next request may reach before it is compacted.
    pub background_threshold: f64,
    /// Share of the window at which the runtime blocks until its background compaction ends;
    /// turnstile compacts before the request at `background_threshold` already, so a request
    /// never waits on it (kept for the session's options).
    pub buffer_exhaustion_threshold: f64,
}

impl Default for InfiniteSessions {
    fn default() -> Self {
        InfiniteSessions {
            enabled: true,
            background_threshold: 0.80,
            buffer_exhaustion_threshold: 0.95,
        }
    }
}

impl InfiniteSessions {
    /// The share of the window that starts a compaction.
    pub(super) fn threshold(&self) -> f64 {
        if self.enabled {
            self.background_threshold.clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

/// A compaction asked for (`session.history.compact`, `turnstile compact`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactOptions {
    /// What the summary should focus on (added to the summary request, recorded).
    pub custom_instructions: Option<String>,
    /// Recorded as the events' `trigger`: `manual`, `model_switch`.
    pub trigger: String,
    /// The window the compaction targets, recorded as the events' `tokenLimit` when it is not
    /// the session's own (attribution only: it does not change what is summarized).
    pub token_limit: Option<u64>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            custom_instructions: None,
            trigger: "manual".into(),
            token_limit: None,
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionReport {
    /// A summary replaced part of the history.
    pub success: bool,
    /// Tokens the replaced messages held (estimated as the next request counts them).
    pub tokens_removed: u64,
    /// Messages the summary replaced.
    pub messages_removed: u64,
    /// The summary, on success.
    pub summary: Option<String>,
    /// Why there is none, on failure.
    pub error: Option<String>,
    /// The context window after it.
    pub context_window: SessionUsageInfo,
}

impl CompactionReport {
    /// No compaction, for `error`; the window is as it was.
    pub(super) fn failed(error: String, context_window: SessionUsageInfo) -> Self {
        CompactionReport {
            success: false,
            tokens_removed: 0,
            messages_removed: 0,
            summary: None,
            error: Some(error),
            context_window,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtimes_defaults_and_off_means_only_when_full() {
        let on = InfiniteSessions::default();
        assert!(on.enabled);
        assert_eq!(on.threshold(), 0.80);
        assert_eq!(on.buffer_exhaustion_threshold, 0.95);
        let off = InfiniteSessions {
            enabled: false,
            ..on
        };
        assert_eq!(off.threshold(), 1.0);
        let odd = InfiniteSessions {
            background_threshold: 7.0,
            ..on
        };
        assert_eq!(odd.threshold(), 1.0);
    }
}
