//! A live session's figures computed on demand: the totals `session.shutdown` would report and
//! the measure of the request the next turn would send, now. Nothing is recorded: the figures
//! are the journal's fold plus this process's calls, the same sources the shutdown's totals
//! come from (`totals.rs`), so the two cannot disagree.

use super::actor::Actor;
use super::lock::lock;
use super::metrics::SessionMetrics;
use super::totals::shutdown_payload;
use crate::autopilot::AgentMode;
use crate::prompt::tokens;

impl Actor {
    /// The session's figures now; the request measured with `model`'s tokenizer when given
    /// (else the session's model's).
    pub(super) fn metrics(&self, model: Option<&str>) -> SessionMetrics {
        // The state's lock is taken once at a time: building the request takes it too.
        let mode = AgentMode::parse(&self.emitter.state().session.mode).unwrap_or_default();
        let request = self.request(mode);
        let own_model = model.is_none_or(|m| m == self.parts.config.model);
        let measure = match model {
            Some(m) if !own_model => tokens::Measure::new(m),
            _ => self.measure(),
        };
        // Nothing waits on the vocabulary: an estimate is what a caller asks for.
        let measure = measure.unless_loading(&request, u64::MAX);
        let estimate = measure.usage_info(&request, self.token_limit(), false);
        let live = self.live_tools();
        let mcp: Vec<_> = request
            .tools
            .iter()
            .filter(|t| {
                live.get(&t.name)
                    .is_some_and(|tool| tool.mcp_origin().is_some())
            })
            .cloned()
            .collect();
        let mcp_tool_tokens = measure.tools(&mcp);
        // The server's calibration is for the session's model only.
        let window = if own_model {
            self.calibration_now().apply(&estimate)
        } else {
            estimate
        };
        let state = self.emitter.state();
        let process = lock(&self.process_usage);
        let totals = shutdown_payload(&state, &process, &self.parts.config.model, &window);
        SessionMetrics {
            // A part of the tool definitions, never more than the (calibrated) whole.
            mcp_tool_tokens: mcp_tool_tokens.min(window.tool_definitions_tokens.unwrap_or(0)),
            buffer_threshold: self
                .parts
                .config
                .infinite_sessions
                .buffer_exhaustion_threshold
                .clamp(0.0, 1.0),
            last_call: process.last_main_call(),
            user_messages: state.counts.user_messages,
            compaction_threshold: self.parts.config.infinite_sessions.threshold(),
            totals,
            window,
        }
    }
}
