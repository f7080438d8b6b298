//! Compaction of the model's history: when the next request would pass a share of the context
//! window, one summary call to the model replaces the older history by its summary.
//!
//! The journal is the one truth: the loop only records `session.compaction_start` and
//! `session.compaction_complete` (summary and the count of messages it replaces); the fold
//! applies them, and every request is built from the folded conversation, so a resume
//! rebuilds exactly the request the loop would have sent.

use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use turnstile_journal::payload::{
    CompactionComplete, CompactionStart, CompactionTokensUsed, SessionUsageInfo, SessionWarning,
};
use turnstile_replay::Message;

use super::LoopError;
use super::actor::Actor;
use super::summary::summary_request;
use crate::autopilot::AgentMode;
use crate::prompt::tokens;
use turnstile_providers::{ChatMessage, ChatRequest};

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

/// Share of the window the newest messages may keep, unsummarized, after a compaction the
/// threshold started (the loop is mid-task: the latest results stay word for word). A
/// compaction asked for (`manual`, `model_switch`) summarizes everything, as the runtime's
/// `/compact` does.
const KEPT_SHARE: f64 = 0.25;

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
    fn failed(&mut self, tokens: u64) {
        *self = RetryBackoff {
            failed_at: Some(tokens),
            turns: 0,
        };
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
    fn failed(error: String, context_window: SessionUsageInfo) -> Self {
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

/// Which messages a compaction replaces.
struct Plan {
    /// Index of the first non-system message.
    first: usize,
    /// Index of the first message kept (the tail starts here).
    end: usize,
    /// Tokens of `first..end`.
    tokens: u64,
}

/// A turn's request with its size, built and measured once (again only after a compaction
/// changed the history).
pub(super) struct Measured {
    /// The request as it will be sent (headers aside).
    pub request: ChatRequest,
    /// Its plain estimate (uncalibrated; `isInitial` false).
    pub estimate: SessionUsageInfo,
    /// The estimate is the vocabulary's count, not the byte rule of a measure that did not
    /// wait for the vocabulary ([`tokens::Measure::unless_loading`]); only such a count
    /// teaches the calibration.
    pub exact: bool,
}

impl Actor {
    /// The model's context window: the session's setting, else the known-models table.
    pub(super) fn token_limit(&self) -> u64 {
        self.parts
            .config
            .token_limit
            .unwrap_or_else(|| tokens::token_limit(&self.parts.config.model))
    }

    /// Measures in the session model's encoding.
    pub(super) fn measure(&self) -> tokens::Measure<'static> {
        tokens::Measure::new(&self.parts.config.model)
    }

    /// The turn's request from the folded conversation, built and measured (counted in
    /// [`super::SessionHandle::requests_measured`]).
    pub(super) async fn measured_request(&self, mode: AgentMode) -> Measured {
        self.measured_request_below(mode, 0).await
    }

    /// [`Actor::measured_request`], counted by the byte rule while the vocabulary loads when
    /// the request cannot reach `tokens` (the compaction threshold of a turn), so that a
    /// process's first turns do not wait for the load; when it must wait, it awaits the load
    /// off the session's task ([`tokens::Measure::unless_loading_awaited`]), so the session's
    /// background agents go on meanwhile.
    pub(super) async fn measured_request_below(&self, mode: AgentMode, tokens: u64) -> Measured {
        let request = self.request(mode);
        let measure = self
            .measure()
            .unless_loading_awaited(&request, tokens)
            .await;
        let estimate = measure.usage_info(&request, self.token_limit(), false);
        self.measures.fetch_add(1, Ordering::Relaxed);
        Measured {
            request,
            estimate,
            exact: measure.is_exact(),
        }
    }

    /// A request's usage of the window as the model server will count it.
    pub(super) fn calibrated(&self, measured: &Measured) -> SessionUsageInfo {
        self.calibration_now().apply(&measured.estimate)
    }

    /// One compaction of the history as the next request would carry it (see
    /// [`Actor::compact_measured`]).
    pub(super) async fn compact(
        &self,
        options: &CompactOptions,
        headers: &[(String, String)],
        mode: AgentMode,
        cancel: &CancellationToken,
    ) -> Result<CompactionReport, LoopError> {
        let current = self.measured_request(mode).await;
        let (report, _) = self
            .compact_measured(options, None, headers, mode, cancel, current)
            .await?;
        Ok(report)
    }

    /// One compaction that replaces the oldest `replaced` non-system messages (extended past
    /// the tool results of the last one): a replay's, as many as its recording's did.
    pub(super) async fn compact_replacing(
        &self,
        options: &CompactOptions,
        replaced: u64,
        headers: &[(String, String)],
        mode: AgentMode,
        cancel: &CancellationToken,
    ) -> Result<CompactionReport, LoopError> {
        let current = self.measured_request(mode).await;
        let (report, _) = self
            .compact_measured(options, Some(replaced), headers, mode, cancel, current)
            .await?;
        Ok(report)
    }

    /// One compaction of `current` (the next request, measured): `session.compaction_start`,
    /// the summary call (with the message's extra `headers`), and `session.compaction_complete`
    /// (plus a `session.warning` when it fails). Returns the report and the next request:
    /// rebuilt from the compacted history on success, `current` as it was otherwise.
    pub(super) async fn compact_measured(
        &self,
        options: &CompactOptions,
        replaced: Option<u64>,
        headers: &[(String, String)],
        mode: AgentMode,
        cancel: &CancellationToken,
        current: Measured,
    ) -> Result<(CompactionReport, Measured), LoopError> {
        // Every count below (the plan, the summary request's estimate) is the vocabulary's,
        // even when `current` was measured by the byte rule: wait for it here, off the
        // session's task, rather than in each count.
        self.measure().encoding().loaded().await;
        let trigger = options.trigger.as_str();
        let custom_instructions = options.custom_instructions.clone();
        let request = &current.request;
        let before = self.calibrated(&current);
        let limit = before.token_limit;
        let recorded_limit = options.token_limit.unwrap_or(limit);
        let (plan, summary_request) = {
            let state = self.emitter.state();
            let keep = if trigger == "threshold" {
                KEPT_SHARE
            } else {
                0.0
            };
            // When the newest messages all fit what is kept, the system prompt and the tools
            // fill the window: all of the history goes into the summary then.
            let plan = match replaced {
                Some(count) => self.plan_replacing(&state.conversation, &request.messages, count),
                None => self
                    .plan(&state.conversation, &request.messages, limit, keep)
                    .or_else(|| self.plan(&state.conversation, &request.messages, limit, 0.0)),
            };
            let summary_request = plan.as_ref().map(|p| {
                summary_request(
                    request,
                    &state.conversation,
                    &state.assets,
                    (p.first, p.end),
                    custom_instructions.as_deref(),
                    headers,
                )
            });
            (plan, summary_request)
        };
        let (Some(plan), Some(summary_request)) = (plan, summary_request) else {
            let error = "nothing to compact: the history is only the newest messages".to_owned();
            return Ok((CompactionReport::failed(error, before), current));
        };
        // The summary call is an LLM call: its `session.compaction_start` counts it.
        self.emitter.emit(&CompactionStart {
            system_tokens: before.system_tokens,
            conversation_tokens: before.conversation_tokens,
            tool_definitions_tokens: before.tool_definitions_tokens,
            current_tokens: Some(before.current_tokens),
            token_limit: Some(recorded_limit),
            trigger: Some(trigger.to_owned()),
        })?;
        let estimated = self
            .measure()
            .usage_info(&summary_request, limit, false)
            .current_tokens;
        let started = Instant::now();
        let answer = self.summary_call(&summary_request, cancel).await;
        let messages_length = (request.messages.len() - plan.first) as u64;
        let removed = (plan.end - plan.first) as u64;
        let mut complete = CompactionComplete {
            pre_compaction_tokens: Some(before.current_tokens),
            pre_compaction_messages_length: Some(messages_length),
            custom_instructions: custom_instructions.clone(),
            token_limit: Some(recorded_limit),
            trigger: Some(trigger.to_owned()),
            ..Default::default()
        };
        let summary = match answer {
            Ok(response) if !response.content.trim().is_empty() => {
                if let Some(usage) = &response.usage {
                    super::lock(&self.calibration).observe(estimated, usage.input_tokens);
                    complete.compaction_tokens_used = Some(CompactionTokensUsed {
                        input_tokens: usage.input_tokens,
                        output_tokens: usage.output_tokens,
                        cache_read_tokens: usage.cache_read_tokens,
                        cache_write_tokens: usage.cache_write_tokens,
                        duration: started.elapsed().as_millis() as u64,
                        model: if response.model.is_empty() {
                            self.parts.config.model.clone()
                        } else {
                            response.model.clone()
                        },
                    });
                }
                Ok(response.content.trim().to_owned())
            }
            Ok(_) => Err("the model answered the summary request with no text".to_owned()),
            Err(e) => {
                complete.status_code = e.status_code;
                Err(format!("the summary request failed: {}", e.message))
            }
        };
        match summary {
            Ok(summary) => {
                complete.success = true;
                complete.messages_removed = Some(removed);
                complete.tokens_removed = Some(plan.tokens);
                complete.summary_content = Some(summary.clone());
                self.emitter.emit(&complete)?;
                *super::lock(&self.retry) = RetryBackoff::default();
                let next = self.measured_request(mode).await;
                let report = CompactionReport {
                    success: true,
                    tokens_removed: plan.tokens,
                    messages_removed: removed,
                    summary: Some(summary),
                    error: None,
                    context_window: self.calibrated(&next),
                };
                Ok((report, next))
            }
            Err(error) => {
                super::lock(&self.retry).failed(before.current_tokens);
                // As the runtime records a failure: why, the status, the window, the trigger.
                complete.error = Some(error.clone());
                complete.pre_compaction_tokens = None;
                complete.pre_compaction_messages_length = None;
                self.emitter.emit(&complete)?;
                self.emitter.emit(&SessionWarning {
                    warning_type: "compaction".into(),
                    message: format!(
                        "the history was not compacted ({error}); the session goes on with it as it is"
                    ),
                    ..Default::default()
                })?;
                Ok((CompactionReport::failed(error, before), current))
            }
        }
    }

    /// The oldest messages to replace: all but the newest that fit `keep` of the window,
    /// never starting the kept tail on a tool result (its request goes with it, as the fold's
    /// compaction does). `None` when that would replace nothing new.
    fn plan(
        &self,
        conversation: &[Message],
        sent: &[ChatMessage],
        limit: u64,
        keep: f64,
    ) -> Option<Plan> {
        // The request has one chat message per conversation message, in the same order.
        debug_assert_eq!(conversation.len(), sent.len());
        let first = usize::from(matches!(conversation.first(), Some(Message::System { .. })));
        let budget = (limit as f64 * keep) as u64;
        let mut end = conversation.len();
        let mut kept = 0;
        let measure = self.measure();
        while end > first {
            let size = self
                .calibration_now()
                .scale(measure.message(&sent[end - 1]));
            if kept + size > budget {
                break;
            }
            kept += size;
            end -= 1;
        }
        self.plan_between(conversation, sent, first, end)
    }

    /// The plan that replaces the oldest `count` non-system messages, never ending on a tool
    /// result.
    fn plan_replacing(
        &self,
        conversation: &[Message],
        sent: &[ChatMessage],
        count: u64,
    ) -> Option<Plan> {
        let first = usize::from(matches!(conversation.first(), Some(Message::System { .. })));
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let end = first.saturating_add(count).min(conversation.len());
        self.plan_between(conversation, sent, first, end)
    }

    /// The plan replacing `first..end`, carried past tool results so the kept tail never
    /// starts on one, unless that is nothing or only an earlier summary.
    fn plan_between(
        &self,
        conversation: &[Message],
        sent: &[ChatMessage],
        first: usize,
        mut end: usize,
    ) -> Option<Plan> {
        while matches!(conversation.get(end), Some(Message::Tool { .. })) {
            end += 1;
        }
        let only_a_summary =
            end == first + 1 && matches!(conversation.get(first), Some(Message::Summary { .. }));
        if end <= first || only_a_summary {
            return None;
        }
        let measure = self.measure();
        let tokens = sent[first..end]
            .iter()
            .map(|m| self.calibration_now().scale(measure.message(m)))
            .sum();
        Some(Plan { first, end, tokens })
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
