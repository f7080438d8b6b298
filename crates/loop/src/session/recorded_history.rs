//! A replay keeps the main agent's history in its window the way its recording did: before
//! each call, the compactions and truncations the recording made there
//! ([`ModelProvider::recorded_history`](turnstile_providers::ModelProvider::recorded_history)), in
//! place of the loop's own measure. A recording holds no per-call token counts, so the
//! loop's estimate could not find the recorded points; and the runtime truncates where
//! turnstile itself never does.

use tokio_util::sync::CancellationToken;

use super::LoopError;
use super::actor::Actor;
use super::compaction::Measured;
use super::compaction_options::CompactOptions;
use crate::autopilot::AgentMode;
use turnstile_providers::HistoryStep;

/// The type of the runtime's truncation event, written again as recorded.
const TRUNCATION: &str = "session.truncation";

impl Actor {
    /// Does the recorded `steps`, then builds and measures the turn's request.
    pub(super) async fn recorded_history(
        &self,
        steps: Vec<HistoryStep>,
        mode: AgentMode,
        headers: &[(String, String)],
        cancel: &CancellationToken,
    ) -> Result<Measured, LoopError> {
        for step in steps {
            if cancel.is_cancelled() {
                break;
            }
            match step {
                HistoryStep::Compact { replaced } => {
                    let options = CompactOptions {
                        trigger: "threshold".into(),
                        ..Default::default()
                    };
                    match replaced {
                        Some(count) => {
                            self.compact_replacing(&options, count, headers, mode, cancel)
                                .await?
                        }
                        None => self.compact(&options, headers, mode, cancel).await?,
                    };
                }
                // The fold takes the recorded count of messages out of the view, as the
                // recording's next request shows; the request below is built from the fold.
                HistoryStep::Truncate(data) => {
                    self.emitter.emit_raw(TRUNCATION, data)?;
                }
            }
        }
        Ok(self.measured_request(mode).await)
    }
}
