//! Each turn's request kept in the model's window: built from the folded history and, before
//! it is sent, either compacted when it would pass the threshold (`compaction.rs`), truncated
//! when compaction made no room and it would pass the window (`truncation.rs`), or, when
//! the provider answers from a recording, compacted and truncated where the recording was
//! (`recorded_history.rs`). The one place that chooses between the two, so neither depends on
//! the other.

use tokio_util::sync::CancellationToken;

use super::LoopError;
use super::actor::Actor;
use super::compaction::Measured;
use super::compaction_options::CompactOptions;
use crate::autopilot::AgentMode;

impl Actor {
    /// A turn's request, the history compacted first when the request would pass the
    /// threshold (or, answering from a recording, compacted and truncated as the recording
    /// was before this call). A failed compaction is a `session.warning`; the turn goes on
    /// with the history as it is, truncated when the request would not fit the window.
    pub(super) async fn request_in_window(
        &self,
        mode: AgentMode,
        headers: &[(String, String)],
        cancel: &CancellationToken,
    ) -> Result<Measured, LoopError> {
        let threshold = self.parts.config.infinite_sessions.threshold() * self.token_limit() as f64;
        let measured = self.measured_request_below(mode, threshold as u64).await;
        if let Some(steps) = self.parts.provider.recorded_history(&measured.request) {
            if steps.is_empty() {
                return Ok(measured);
            }
            return self.recorded_history(steps, mode, headers, cancel).await;
        }
        let info = self.calibrated(&measured);
        if (info.current_tokens as f64) < threshold || cancel.is_cancelled() {
            return Ok(measured);
        }
        if !super::lock::lock(&self.retry).allows() {
            return self.truncated_to_window(mode, measured).await;
        }
        let options = CompactOptions {
            trigger: "threshold".into(),
            ..Default::default()
        };
        let (report, measured) = self
            .compact_measured(&options, None, headers, mode, cancel, measured)
            .await?;
        if report.success {
            return Ok(measured);
        }
        self.truncated_to_window(mode, measured).await
    }
}
