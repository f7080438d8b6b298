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
use super::compaction_options::{CompactOptions, CompactionReport};
use super::retry_backoff::RetryBackoff;
use super::summary::summary_request;
use crate::autopilot::AgentMode;
use crate::prompt::tokens;
use turnstile_providers::{ChatMessage, ChatRequest};

/// Share of the window the newest messages may keep, unsummarized, after a compaction the
/// threshold started (the loop is mid-task: the latest results stay word for word). A
/// compaction asked for (`manual`, `model_switch`) summarizes everything, as the runtime's
/// `/compact` does.
const KEPT_SHARE: f64 = 0.25;

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
        // The summary call is the main agent's, a request whether or not it was answered.
        {
            let (model, usage) = match &answer {
                Ok(r) if !r.model.is_empty() => (r.model.as_str(), r.usage.as_ref()),
                Ok(r) => (summary_request.model.as_str(), r.usage.as_ref()),
                Err(_) => (summary_request.model.as_str(), None),
            };
            super::lock::lock(&self.process_usage).add_call(None, model, usage);
        }
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
                    super::lock::lock(&self.calibration).observe(estimated, usage.input_tokens);
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
                *super::lock::lock(&self.retry) = RetryBackoff::default();
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
                super::lock::lock(&self.retry).failed();
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
