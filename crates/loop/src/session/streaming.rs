//! One model call and the live progress of its stream, announced as the runtime announces it.
//!
//! For every piece that arrives the runtime first sends `assistant.streaming_delta` with the
//! bytes received so far, then what the piece carries: `assistant.message_start` before the
//! message's first text and `assistant.message_delta` for the text, or
//! `assistant.tool_call_delta` for argument text. The byte count is the session's (it does not
//! start again at each call): the text, each tool name once, and the argument text. All of
//! these are ephemeral; the journal records only the complete `assistant.message`.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::payload::{
    AssistantMessageDelta, AssistantMessageStart, AssistantStreamingDelta, AssistantToolCallDelta,
    AssistantTurnRetry,
};

use super::LoopError;
use super::actor::Actor;
use turnstile_providers::{ChatRequest, ModelError, ModelEvent, ModelResponse};

/// What one call's stream has announced so far.
struct Progress<'a> {
    /// The `assistant.message` the pieces belong to.
    message_id: &'a str,
    /// Whether `assistant.message_start` was sent.
    text_started: bool,
    /// Tool calls whose name was counted (by id, or by name while the id is unknown).
    named: HashSet<String>,
    /// When the first and the last piece arrived, and how many arrived.
    first: Option<Instant>,
    last: Option<Instant>,
    pieces: u64,
}

impl Progress<'_> {
    /// A piece arrived now.
    fn piece(&mut self) {
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.pieces += 1;
    }

    /// The call's streaming timing, in microseconds: to the first piece, and the mean gap
    /// between pieces after it.
    fn timing(&self, started: Instant) -> (Option<u64>, Option<u64>) {
        let first = self
            .first
            .map(|f| f.duration_since(started).as_micros() as u64);
        let inter = match (self.first, self.last) {
            (Some(f), Some(l)) if self.pieces > 1 => {
                Some(l.duration_since(f).as_micros() as u64 / (self.pieces - 1))
            }
            _ => None,
        };
        (first, inter)
    }
}

impl Actor {
    /// The one LLM call of a turn, forwarding its stream and retries as ephemeral events.
    pub(super) async fn call_model(
        &self,
        request: &ChatRequest,
        turn_id: &str,
        message_id: &str,
        cancel: &CancellationToken,
    ) -> Result<Result<ModelResponse, ModelError>, LoopError> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let provider = Arc::clone(&self.parts.provider);
        let started = Instant::now();
        let call = provider.complete(request, tx, cancel.child_token());
        tokio::pin!(call);
        let mut progress = Progress {
            message_id,
            text_started: false,
            named: HashSet::new(),
            first: None,
            last: None,
            pieces: 0,
        };
        let result = loop {
            tokio::select! {
                biased;
                Some(event) = rx.recv() => self.model_event(event, turn_id, &mut progress)?,
                result = &mut call => break result,
            }
        };
        while let Ok(event) = rx.try_recv() {
            self.model_event(event, turn_id, &mut progress)?;
        }
        let (to_first, between) = progress.timing(started);
        Ok(result.map(|mut r| {
            if let Some(u) = r.usage.as_mut() {
                if u.duration_ms == 0 {
                    u.duration_ms = started.elapsed().as_millis() as u64;
                }
                u.time_to_first_token_us = u.time_to_first_token_us.or(to_first);
                u.inter_token_latency_us = u.inter_token_latency_us.or(between);
            }
            r
        }))
    }

    fn model_event(
        &self,
        event: ModelEvent,
        turn_id: &str,
        progress: &mut Progress<'_>,
    ) -> Result<(), LoopError> {
        match event {
            ModelEvent::TextDelta(text) => {
                if text.is_empty() {
                    return Ok(());
                }
                progress.piece();
                self.received(text.len())?;
                if !progress.text_started {
                    progress.text_started = true;
                    self.emitter.emit(&AssistantMessageStart {
                        message_id: progress.message_id.to_owned(),
                        ..Default::default()
                    })?;
                }
                self.emitter.emit(&AssistantMessageDelta {
                    message_id: progress.message_id.to_owned(),
                    delta_content: text,
                    ..Default::default()
                })?;
            }
            ModelEvent::ToolCallDelta {
                id,
                name,
                arguments_delta,
            } => {
                let key = if id.is_empty() { &name } else { &id };
                let new_name = !name.is_empty() && progress.named.insert(key.clone());
                let bytes = if new_name { name.len() } else { 0 } + arguments_delta.len();
                if bytes > 0 {
                    progress.piece();
                    self.received(bytes)?;
                }
                if !arguments_delta.is_empty() {
                    self.emitter.emit(&AssistantToolCallDelta {
                        tool_call_id: id,
                        tool_name: (!name.is_empty()).then_some(name),
                        tool_type: Some("function".into()),
                        input_delta: arguments_delta,
                    })?;
                }
            }
            ModelEvent::Retry { reason, .. } => {
                self.emitter.emit(&AssistantTurnRetry {
                    turn_id: turn_id.to_owned(),
                    model: Some(self.parts.config.model.clone()),
                    reason: Some(reason),
                })?;
            }
        }
        Ok(())
    }

    /// Counts `bytes` more of streamed answer and announces the session's total.
    fn received(&self, bytes: usize) -> Result<(), LoopError> {
        let total = self
            .streamed_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed)
            .saturating_add(bytes as u64);
        self.emitter.emit(&AssistantStreamingDelta {
            total_response_size_bytes: total,
        })?;
        Ok(())
    }
}
